"""Compiled regular expressions kept across processes, for the hook path (docs/spec.md §5: ≤ 50 ms an event).

The signature and redaction rules are ~160 patterns; ``re`` compiles them in pure Python, ~40 ms —
most of what a hook process spends on a failure. The compiled form (the ``_sre`` code ``re`` hands
to the regex engine) is plain data, so the hook keeps it in ``<home>/cache``: a later process
builds the same pattern objects from it in ~1.5 ms. ``_sre.compile`` validates the code it is
given, and a file is only used by the interpreter build that wrote it (cache tag and ``_sre.MAGIC``
in its name), with each entry keyed by its pattern text and flags; anything unexpected falls back
to ``re.compile``. Without ``use``, ``compile`` is ``re.compile``.
"""

from __future__ import annotations

import importlib
import marshal
import os
import re
import sys

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from typing import Any

_Key = tuple[str, int]

_table: dict[_Key, tuple[Any, ...]] = {}  # (pattern, flags) -> arguments of _sre.compile
_fresh: dict[_Key, tuple[Any, ...]] = {}  # compiled in this process, not in the file
_path: str | None = None
_internals: tuple[Any, Any, Any] | None = None


def _sre_internals() -> tuple[Any, Any, Any] | None:
    """(_sre, parser, compiler) of this interpreter; None where they are not CPython's."""
    global _internals
    if _internals is None:
        try:
            sre = importlib.import_module("_sre")
            parser = importlib.import_module("re._parser")
            compiler = importlib.import_module("re._compiler")
            _internals = (sre, parser, compiler)
        except ImportError:  # Python 3.10 (sre_parse), PyPy: plain re.compile
            return None
    return _internals


def use(folder: str) -> None:
    """Take compiled patterns from ``folder`` (and keep new ones there on ``save``)."""
    global _path
    internals = _sre_internals()
    if internals is None or sys.implementation.cache_tag is None:
        return
    _path = os.path.join(folder, f"regex-{sys.implementation.cache_tag}-{internals[0].MAGIC}.marshal")
    try:
        with open(_path, "rb") as fh:
            entries = marshal.loads(fh.read())  # marshal.load(fh) reads in small pieces: 10x slower
        _table.update({(e[0], e[1]): tuple(e[2:]) for e in entries})
    except (OSError, EOFError, ValueError, TypeError, IndexError):
        _table.clear()  # missing or unreadable: compiled afresh and written again


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, built from the cache when it holds the pattern."""
    if _path is None:
        return re.compile(pattern, flags)
    internals = _sre_internals()
    assert internals is not None
    sre, parser, compiler = internals
    key = (pattern, int(flags))
    args = _table.get(key)
    if args is not None:
        try:
            return sre.compile(pattern, *args)  # type: ignore[no-any-return]
        except (RuntimeError, TypeError, ValueError):
            del _table[key]
    try:
        tree = parser.parse(pattern, flags)
        code = [int(c) for c in compiler._code(tree, flags)]
        groupindex = dict(tree.state.groupdict)
        indexgroup: list[str | None] = [None] * tree.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        args = (int(flags | tree.state.flags), code, tree.state.groups - 1, groupindex, tuple(indexgroup))
        compiled = sre.compile(pattern, *args)
    except Exception:  # internals not as expected: the public way, uncached
        return re.compile(pattern, flags)
    _fresh[key] = args
    return compiled  # type: ignore[no-any-return]


def save() -> None:
    """Write the table with what this process compiled afresh; nothing when it compiled nothing."""
    if _path is None or not _fresh:
        return
    _table.update(_fresh)
    _fresh.clear()
    entries = [(p, f, *args) for (p, f), args in _table.items()]
    tmp = f"{_path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(_path), exist_ok=True)
        with open(tmp, "wb") as fh:
            marshal.dump(entries, fh)
        os.replace(tmp, _path)  # whole or not at all, whatever else runs at the same time
    except OSError:  # a cache: the next process compiles again
        if os.path.exists(tmp):
            os.unlink(tmp)
