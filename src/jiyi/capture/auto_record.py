"""Automatic records (docs/spec.md §5): a failure that went away with an evident fix and no note.

When the failing command's operation passes again (``store/closing.py``, ``analysis/commands.py``), no
note was written since the failure, the pass was not flaky, and the fix is evident — the command
changed, state-changing commands ran (``pip install …``), or files were edited in between — the hook
writes a ``bugfix`` record of origin
``local_auto`` through the path notes take (``writing``): its ``what`` is the failure's error text, so
its signatures are the failure's; ``where`` names the command, the steps and the files; ``learned`` says
what changed; the steps and a changed command are its ``command`` fix. Its title is the failure's
key error line (never a wrapper's ``Exit code 1``) and what fixed it. Where the failure happened in a git checkout
(kept with it) is its ``reproduction``: the failing command at the commit it failed at, so a team
runner can replay the record (``replay``); when the command that passed is the failing one changed
(a flag added: ``records.checked_by``), the reproduction names it as the one that must pass after
the fix, not the failing one again. Its topic comes from the failure's first signature
(``auto/<12 hex>``), so the same failure fixed the same way again (same fix, same place) only adds a
source; fixed another way, it becomes the record's next revision. ``Settings.auto_records``
(``JIYI_AUTO_RECORDS``) turns them off.

Runs after a hook (its detached finisher, ``capture.finisher``) or in ``Session.observe_tool_result``
(``jiyi run``): no ranking, no similarity search.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.redact import redact
from ..project import reproduction_at
from ..records import Fix, Record, checked_by, new_hex, now
from .cleaning import clean_command, command_changed, evident

if TYPE_CHECKING:
    from ..project import Project
    from ..store.base import Resolved, Store

TOPIC_PREFIX = "auto/"
TITLE_MAX = 160
KEY_MAX = 90
FILES_SHOWN = 8
STEPS_KEPT = 5  # the last state-changing commands before the passing re-run
STEPS_SHOWN = 3
# An absolute path of three folders or more, as a title shows it: its file name alone (a module
# path such as ``github.com/a/b/c`` is no file and stays).
_LONG_PATH = re.compile(r"(?<![\w.~/\\-])(?:[A-Za-z]:|~)?(?:[\\/][\w.@+~-]+){4,}")
# pytest's mark before the lines of an error (``E   ModuleNotFoundError: …``): not part of it.
_PYTEST_MARK = re.compile(r"^E\s+(?=\S)")
# A wrapper's exit status line (Claude Code's ``Exit code 1``): never the key of a failure.
_EXIT_STATUS = re.compile(
    r"\s*(?:exit code|exit status|process exited with code|command exited with code)[:\s]+-?\d+\s*$", re.I
)


def topic_key(signatures: Sequence[str], error: str) -> str:
    """``auto/<12 hex>`` from the failure's first signature (its error text when it has none)."""
    seed = signatures[0] if signatures else " ".join(error.split())
    return TOPIC_PREFIX + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12]


def _shown(path: str, root: Path | None) -> str:
    """A file as the record names it: relative to the project root when inside it."""
    if root is not None and os.path.isabs(path):
        try:
            relative = os.path.relpath(path, root)
        except ValueError:  # another drive
            relative = path
        if not relative.startswith(".."):
            path = relative
    return redact(path)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _joined(separator: str, *parts: str) -> str:
    """The parts that apply (the others are empty), joined."""
    return separator.join(part for part in parts if part)


def _fixed_by(changed: bool, after: str | None, steps: Sequence[str], listed: str) -> str:
    """What the title names as the fix: the steps first (what was installed or written is the
    lesson), then the files edited, then the changed command (beside an edit, a flag added to the
    re-run is more often ``-q`` than the fix)."""
    parts = [" && ".join(steps[-STEPS_SHOWN:])] if steps else []
    if listed:
        parts.append(f"editing {listed}")
    if changed and after is not None:
        parts.append(after)
    return ", then ".join(parts)


def _short_paths(line: str) -> str:
    """A title's key line with each long path as its file name: ``/var/lib/jenkins/…/StackMob.java:
    [12,5] cannot find symbol`` keeps the error within ``KEY_MAX``; the record's ``what`` keeps all."""
    return _LONG_PATH.sub(lambda m: m.group(0).replace("\\", "/").rsplit("/", 1)[-1], line)


def key_of(what: str) -> str:
    """The failure's key error line: its first key line (``analysis.signature``) that says what went
    wrong (an exception, or a word of ``signature_rules.WEAK``: ``npm ERR! Linux 3.16`` is a key
    line by its prefix but only a banner), else the first line of the text that does, else the
    first key line; never a wrapper's exit status (``Exit code 1``), which says nothing of it."""
    from ..analysis.signature import analyze, key_line
    from ..analysis.signature_rules import EXCEPTION, WEAK

    def telling(line: str) -> bool:
        content = _PYTEST_MARK.sub("", line.strip(), count=1)
        return bool(EXCEPTION.match(content) or WEAK.search(content.lower()))

    found = analyze(what).key_lines
    lines = [line for line in what.splitlines() if line.strip() and not _EXIT_STATUS.match(line)]
    chosen = next((k for k in found if telling(k)), None)
    if chosen is None and found:
        chosen = next((line.strip() for line in lines if telling(line)), found[0])
    if chosen is not None:
        return _PYTEST_MARK.sub("", chosen, count=1)
    return key_line("\n".join(lines)) or key_line(what) or what


def build(
    resolved: Resolved,
    command: str | None,
    *,
    session_id: str,
    project: Project,
    environment: dict[str, str],
) -> Record | None:
    """The automatic record for the failure ``resolved`` ended with ``command`` (the succeeding
    call's, None for a tool without one); None when a note was written since the failure, the
    failure was flaky, or the fix is not evident (``cleaning.evident``)."""
    if resolved.noted or resolved.flaky:
        return None  # the note is the record (and resolve_failure confirmed it); flaky is no fix
    before = clean_command(resolved.command)
    after = clean_command(command)
    steps = [redact(step) for step in resolved.steps][-STEPS_KEPT:]
    if not evident(before, after, resolved.edited, tuple(steps)):
        return None
    changed = command_changed(before, after)
    files = list(dict.fromkeys(_shown(p, project.root) for p in resolved.edited))
    from ..analysis.signature import analyze, record_symbols

    what = resolved.error or f"{resolved.tool} failed"
    analysis = analyze(what)
    listed = ", ".join(files[:FILES_SHOWN]) + (f" (+{len(files) - FILES_SHOWN})" if len(files) > FILES_SHOWN else "")
    key = _cut(_short_paths(key_of(what)), KEY_MAX)
    title = _cut(f"{key} — fixed by {_fixed_by(changed, after, steps, listed)}", TITLE_MAX)
    how = _joined(
        ", ",
        "state-changing commands ran" if steps else "",
        "the command changed" if changed else "",
        "files were edited" if files else "",
    )
    why = (
        f"Recorded automatically by jiyi: the failing {resolved.tool} call passed again after {how}, "
        "and no note was written."
    )
    ran = "; ".join(f"`{step}`" for step in steps)
    where = _joined(
        "; ",
        f"command: {after}" if after else "",
        f"ran: {ran}" if steps else "",
        f"files: {listed}" if files else "",
    )
    learned = _joined(
        "; ",
        f"ran before the passing re-run: {ran}" if steps else "",
        f"the command changed from `{before}` to `{after}`" if changed else "",
        f"edited between the failure and the success: {listed}" if files else "",
    )
    stamp = now()
    # The fix a replay applies: the steps, then the changed command when it is one.
    fixing = [*steps, *([after] if changed and after else [])]
    fix = Fix(kind="command", command=" && ".join(fixing)) if fixing else None
    return Record(
        hex=new_hex(),
        title=title,
        type="bugfix",
        scope="project",
        what=what,
        why=why,
        where=where,
        learned=learned,
        project=project.name,
        project_key=project.key,
        origin="local_auto",
        topic_key=topic_key(resolved.signatures, what),
        fix=fix,
        # At the commit it failed at (kept with the failure), so a replay meets it there; the
        # command that passed is what must pass after the fix, when it is the failing one changed.
        reproduction=checked_by(reproduction_at(before, resolved.checkout), fix),
        environment=dict(environment),
        tool_name=(resolved.tool or "").lower() or None,
        outcome="成功",
        session_id=session_id,
        created=stamp,
        updated=stamp,
        signatures=tuple(dict.fromkeys((*resolved.signatures, *analysis.signatures))),
        symbols=record_symbols(title, analysis),
    )


def write(
    store: Store,
    resolved: Resolved,
    command: str | None,
    *,
    session_id: str,
    project: Project,
    environment: dict[str, str],
) -> Record | None:
    """Write (or confirm) the automatic record for ``resolved``; returns it as stored, None when
    there is none to write."""
    record = build(resolved, command, session_id=session_id, project=project, environment=environment)
    if record is None:
        return None
    from ..writing import as_revision, save

    assert record.topic_key is not None
    with store.topic_lock(record.topic_key, record.scope, record.project_key):
        existing = store.find_topic(record.topic_key, record.scope, record.project_key)
        if existing is not None and (existing.fix, existing.where) == (record.fix, record.where):
            # The same failure fixed the same way: one more source, not a duplicate.
            earlier = {rev.session_id for rev in store.revisions(existing.hex)}
            if session_id not in earlier and session_id != existing.session_id:
                store.add_evidence(existing.hex, sources=1, session_id=session_id)
            return store.get(existing.hex)
        record = as_revision(store, record, existing, session_id)
        save(store, record, existing, session_id)
    return record
