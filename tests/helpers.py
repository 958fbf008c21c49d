"""Shared builders for tests."""

from __future__ import annotations

from typing import Any

# The nine ranking signals in the order SPEC §4 fixes for every matched line.
SIGNALS = [
    "error_signature",
    "code_symbol",
    "lexical",
    "same_project",
    "environment",
    "recency",
    "tool_name",
    "trust",
    "evidence",
]

ZLIB = {
    "title": "Link zlib with -lz",
    "type": "bugfix",
    "scope": "project",
    "content": {
        "what": "ld: undefined symbol deflate",
        "why": "zlib was not on the link line",
        "where": "Makefile LDLIBS",
        "learned": "add -lz after the object files",
    },
}

YAML = {
    "title": "Install PyYAML for the yaml module",
    "type": "bugfix",
    "scope": "global",
    "content": {
        "what": "ModuleNotFoundError: No module named 'yaml'",
        "why": "PyYAML is not installed in this environment",
        "where": "requirements.txt",
        "learned": "pip install pyyaml (the import name differs from the package name)",
    },
}


def note(**changes: Any) -> dict[str, Any]:
    base = dict(ZLIB)
    base["content"] = dict(ZLIB["content"])
    for key, value in changes.items():
        if key in base["content"]:
            base["content"][key] = value
        else:
            base[key] = value
    return base
