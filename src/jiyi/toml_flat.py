"""The flat settings files jiyi's users write, read without tomllib (docs/spec.md §8: a hook event ≤ 50 ms).

``config.toml`` and ``.jiyi.toml`` hold a few ``key = value`` lines, at the top or under
``[jiyi]``. tomllib costs a hook process ~8 ms of imports (typing, datetime, its parser), a fifth
of its budget, on every event when such a file exists. :func:`parse` reads exactly this subset:

- blank lines and ``#`` comments;
- one table header, ``[jiyi]``;
- bare keys (``A-Z a-z 0-9 _ -``) set to ``true`` / ``false``, a decimal integer without ``_``, a
  basic string without escapes (``"…"``) or a literal string (``'…'``), each followed by nothing
  or a comment.

Anything else — another table, a quoted or dotted key, a key given twice, an escape, a float, a
date, an array, a control character — returns None, and the caller hands the text to tomllib,
which reads it or says what is wrong. So for any text, :func:`parse` gives what ``tomllib.loads``
gives or nothing (``tests/test_toml_flat.py`` holds it to that, with generated files).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from typing import Any

TABLE = "jiyi"
_LINE = re.compile(
    r"[ \t]*(?:"
    r"(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*"
    r"(?:(?P<bool>true|false)|(?P<int>[+-]?(?:0|[1-9][0-9]*))|\"(?P<basic>[^\"\\]*)\"|'(?P<literal>[^']*)')"
    r"|\[[ \t]*(?P<table>jiyi)[ \t]*\]"
    r")?[ \t]*(?:#.*)?"
)
# TOML allows tab but no other control character anywhere in a file (CR only before LF).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def parse(text: str) -> dict[str, Any] | None:
    """``tomllib.loads(text)`` for the flat subset above; None for any text outside it."""
    top: dict[str, Any] = {}
    table: dict[str, Any] | None = None
    lines = text.split("\n")
    for at, raw in enumerate(lines):
        # A CR ends a line only before its LF: a last line's CR is a control character (tomllib's view).
        line = raw[:-1] if raw.endswith("\r") and at < len(lines) - 1 else raw
        if _CONTROL.search(line):
            return None
        found = _LINE.fullmatch(line)
        if found is None:
            return None
        if found["table"]:
            if table is not None or TABLE in top:
                return None  # a table opened twice, or over a key of its name
            table = top[TABLE] = {}
            continue
        key = found["key"]
        if key is None:
            continue  # blank or a comment
        into = top if table is None else table
        if key in into:
            return None  # tomllib reports a key given twice
        if found["bool"]:
            into[key] = found["bool"] == "true"
        elif found["int"]:
            into[key] = int(found["int"])
        else:
            into[key] = found["basic"] if found["basic"] is not None else found["literal"]
    return top
