"""Recording a tool result in a session (docs/spec.md §5), shared by the hook and ``Session.observe_tool_result``.

A failure becomes the session's last failure: the error text redacted and capped
(``cleaning.clean_error``), its signatures, the command that failed (``cleaning.clean_command``).
A success of the tool that failed closes the loop (``Store.resolve_failure``) and may write an
automatic record (``auto_record``).
Proactive recall (:func:`recall`) picks the record to hand the agent for a failure by a signature
look-up alone, not the ranking. The compiled patterns of redaction and signatures come from
``<home>/cache`` in a hook process (:func:`patterns_from`, ``regex_cache``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from ..project import Project
    from ..records import Record
    from ..store.base import Store


def record_tool_result(
    store: Store,
    session_id: str,
    tool: str,
    *,
    ok: bool,
    error: str | None = None,
    command: str | None = None,
    edited: tuple[str, ...] = (),
    project: Project | None = None,
    auto_records: bool = True,
    folder: str | None = None,
    watch_checkout: bool = False,
) -> tuple[str, ...]:
    """Record one tool result of a session whose row exists (``touch_session``); returns the
    failure's signatures (none for a success).

    A failure becomes the session's last failure, with the ``command`` that failed and, when it
    failed in a git checkout, where (``folder``'s top and HEAD commit: ``git_head``), unless it
    only looked around while a failing command waits for its fix (``commands.displaces``). A
    success that runs the failing operation again closes the loop (``Store.resolve_failure``) and,
    with ``auto_records`` and the session's ``project``, may write an automatic record
    (``auto_record.write``); a state-changing command is kept as a step of the fix; any other
    success is recorded as the session's activity (its ``last_seen``, set when the session was
    touched) and leaves the last failure in place; the files a successful call ``edited`` are kept
    while a failure is pending. With ``watch_checkout`` (``jiyi run``), what the checkout holds
    besides its commit is kept with a failure, and a success counts the files changed since as
    edited: a fix made by hand between a failure and its re-run.
    """
    from .cleaning import clean_command, clean_error

    kept = clean_command(command)
    if ok:
        by_hand = _changed_by_hand(store, session_id) if watch_checkout else []
        if by_hand:
            store.record_edits(session_id, by_hand)
        resolved = store.resolve_failure(session_id, tool, kept)
        if resolved is not None and auto_records and project is not None:
            from ..project import environment
            from . import auto_record

            auto_record.write(
                store, resolved, command, session_id=session_id, project=project, environment=environment()
            )
        elif resolved is None and edited:
            store.record_edits(session_id, edited)
        return ()
    text = clean_error(error) or f"{tool} failed"
    signatures = signatures_of(text)
    state = store.session(session_id)
    if state is not None and state.last_error is not None:
        from ..analysis.commands import displaces

        if not displaces(state.last_command, kept):
            return signatures  # a look around failed: the pending failure stays the one to fix
    checkout = None
    if kept is not None and folder is not None:
        from ..git_head import failure_point

        checkout = failure_point(folder)
        if watch_checkout and checkout is not None:
            checkout = _with_worktree(checkout)
    store.set_failure(session_id, tool, text, signatures=signatures, command=kept, checkout=checkout)
    return signatures


def _with_worktree(checkout: str) -> str:
    """The failure point with what its checkout holds besides the commit (``run.worktree_state``)."""
    import json

    from .run import worktree_state

    point = json.loads(checkout)
    state = worktree_state(point["top"])
    if state is not None:
        point["worktree"] = state
    return json.dumps(point)


def _changed_by_hand(store: Store, session_id: str) -> list[str]:
    """The files changed in the checkout since the pending failure was met (``jiyi run``)."""
    import json

    from .run import changed_paths, worktree_state

    state = store.session(session_id)
    if state is None or state.last_error is None or not state.last_checkout:
        return []
    point = json.loads(state.last_checkout)
    if "worktree" not in point:
        return []
    now_state = worktree_state(point["top"])
    return changed_paths(point["worktree"], now_state) if now_state is not None else []


# Proactive recall: the signature look-up's candidates, most trusted first.
RECALL_CANDIDATES = 20
_TRUST_ORDER = ("team_verified", "human", "local_auto", "note", "team")


def recall(store: Store, session_id: str, project_key: str, signatures: tuple[str, ...]) -> Record | None:
    """The record to hand the session for a failure with ``signatures``, now marked recalled to
    it; None when no record not yet recalled, read or written by the session matches."""
    hexes = store.by_signature(signatures, RECALL_CANDIDATES) if signatures else []
    if not hexes:
        return None
    state = store.session(session_id)
    known = {*state.reads, *state.notes} if state else set()
    order = {h: i for i, h in enumerate(hexes)}
    records = [
        r
        for r in store.get_many(h for h in hexes if h not in known)
        if r.session_id != session_id and not r.is_wrong and (r.scope == "global" or r.project_key == project_key)
    ]
    trust = {origin: i for i, origin in enumerate(_TRUST_ORDER)}
    records.sort(key=lambda r: (r.is_outdated, trust.get(r.origin, len(trust)), -r.used_success, order[r.hex]))
    claimed = store.claim_recall(session_id, [r.hex for r in records])
    return next((r for r in records if r.hex == claimed), None)


def recall_line(record: Record) -> str:
    return f"jiyi: [{record.id}] {' '.join(record.title.split())} — memory_read for details"


def signatures_of(text: str) -> tuple[str, ...]:
    from ..analysis.signature import analyze

    return analyze(text).signatures


def patterns_from(folder: str) -> None:
    """Take the compiled rules of redaction and signatures from ``folder`` (``regex_cache``):
    ~40 ms less for a hook process that meets a failure. Before either is imported."""
    if "jiyi.analysis.signature" not in sys.modules and "jiyi.analysis.redact" not in sys.modules:
        from ..analysis import regex_cache

        regex_cache.use(folder)


def keep_patterns() -> None:
    from ..analysis import regex_cache

    regex_cache.save()
