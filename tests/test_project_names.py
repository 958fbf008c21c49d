"""A project has a key and a readable name; ``project=`` and ``--project`` take either, and two
projects of one folder name stay apart (the README's Python API against the tour's store)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import jiyi
from jiyi.errors import InvalidArgument

NOTE = [
    "note", "--title", "Link zlib with -lz", "--type", "bugfix", "--scope", "project", "--what",
    "ld: undefined symbol deflate", "--why", "zlib was not on the link line", "--where", "Makefile LDLIBS",
    "--learned", "add -lz after the object files",
]  # fmt: skip


def _jiyi(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jiyi", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_readme_api_finds_the_tours_note_by_the_folder_name(tmp_path: Path, jiyi_home: Path) -> None:
    folder = tmp_path / "zlib-port"  # no git remote: the key is the folder's path, the name its name
    folder.mkdir()
    assert _jiyi(folder, *NOTE).returncode == 0
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with jiyi.Memory(cwd=elsewhere) as memory:
        session = memory.session(project="zlib-port")
        assert session.project.key == str(folder.resolve())
        hits = session.search("ld: undefined symbol deflate")
    assert [h.record.title for h in hits] == ["Link zlib with -lz"]
    found = _jiyi(elsewhere, "search", "--project", "zlib-port", "ld: undefined symbol deflate")
    assert "Link zlib with -lz" in found.stdout


def test_two_projects_of_one_folder_name_stay_apart(tmp_path: Path, jiyi_home: Path) -> None:
    first, second = tmp_path / "a" / "app", tmp_path / "b" / "app"
    for folder in (first, second):
        folder.mkdir(parents=True)
        assert _jiyi(folder, *NOTE).returncode == 0
    with jiyi.Memory(cwd=tmp_path) as memory:
        with pytest.raises(InvalidArgument, match="2 projects are named app"):
            memory.session(project="app")
        by_key = memory.session(project=str(second.resolve()))
        assert by_key.project.name == "app" and len(by_key.search("ld: undefined symbol deflate")) == 1
    refused = _jiyi(tmp_path, "search", "--project", "app", "deflate")
    assert refused.returncode == 1 and "give one's key" in refused.stderr
