"""Closing the loop: the rules of ``Store.resolve_failure``, written once for both backends.

A failure of another command parks the pending one (at most ``PARKED``), which is pending again
once the newer is resolved, or is resolved itself when its own operation passes: interleaved failures
are each closed by their own re-run.

A success of the tool that failed ends the session's failure when it runs the same operation again
(``analysis/commands.py``: a read-only look or another program's run does not; a state-changing
command is kept as a step of the fix instead): the records read since it get ``used_success + 1``;
the notes written since it that share a signature with it, and are not trusted more already,
become ``local_auto``; the files edited and the steps run since it are handed on (for the automatic
record) and forgotten; the failure is cleared and the outcome becomes 成功. The same command passing
with nothing edited or run in between is a flaky failure: its signatures are counted
(``flaky_failures``), no note is confirmed by it and no record will be written. Each backend
supplies the statements (:class:`Steps`): ``sqlite/statements.py`` on a bare connection (the hook's
fast path runs them too), ``postgres/sessions.py`` on a cursor of its team.

Imports nothing at module level: the hook's fast path imports it on every event.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Steps(Protocol):
        """One session's statements in the caller's write transaction."""

        def failure(self) -> tuple[Any, ...] | None:
            """(last tool, error, failed at, signatures or None, command, checkout), None without a session."""

        def since(self, table: str, at: str) -> list[str]:
            """Hexes in ``session_reads`` / ``session_notes`` of the session at or after ``at``, in order."""

        def count_used(self, hexes: list[str]) -> None: ...

        def notes_since(self, at: str) -> list[str]:
            """Hexes of the notes the session wrote or revised at or after ``at``, in order: not
            the automatic records capture wrote in it (another failure's, once failures interleave)."""

        def confirmable(self, notes: list[str], signatures: list[str]) -> set[str]:
            """Of ``notes``, the live ones with one of ``signatures`` whose origin is not in ``KEPT_ORIGINS``."""

        def confirm(self, hexes: list[str]) -> None:
            """Make their origin ``local_auto``."""

        def take_edits(self, at: str) -> list[str]:
            """The paths edited at or after ``at`` (by time, then path), forgotten now."""

        def take_steps(self, at: str) -> list[str]:
            """The steps run at or after ``at`` (in order), forgotten now."""

        def parked(self) -> list[tuple[int, str | None]]:
            """The session's parked failures, newest first: (id, command)."""

        def park_pending(self) -> None:
            """Park the pending failure as it is."""

        def restore(self, parked: int) -> None:
            """Make the parked failure ``parked`` the pending one (outcome 失败), no longer parked."""

        def forget_kept(self) -> None:
            """Forget every edit and step the session still keeps (for failures no longer pending)."""

        def add_step(self, command: str) -> None:
            """Keep ``command`` as a step of the pending failure's fix."""

        def count_flaky(self, signatures: list[str]) -> None:
            """One more flaky pass of each of ``signatures``."""

        def clear(self) -> None:
            """Clear the failure; the outcome becomes 成功."""


# Origins a confirmation does not lower: a note already confirmed, or verified by the team or a person.
KEPT_ORIGINS = ("local_auto", "team_verified", "human")


def pending(last_tool: str | None, failed_at: str | None, tool: str) -> bool:
    """The session's last failure is one of ``tool`` (names compared case-insensitively)."""
    return failed_at is not None and (last_tool or "").lower() == tool.lower()


# A session keeps at most this many failures of other operations waiting behind the pending one,
# and this many of the newest steps (state-changing commands) for them.
PARKED = 3
STEPS_KEPT = 20


def parks(pending_command: str | None, command: str | None) -> bool:
    """A new failure of ``command`` parks the pending failure of ``pending_command`` rather than
    replacing it: both are commands of different operations (interleaved failures)."""
    if pending_command is None or command is None:
        return False
    from ..analysis.commands import same_op

    return not same_op(pending_command, command)


def superseded(parked_command: str | None, command: str | None) -> bool:
    """A parked failure of ``parked_command`` is met again as the new failure of ``command``."""
    if parked_command is None or command is None:
        return False
    from ..analysis.commands import same_op

    return same_op(parked_command, command)


def may_change(failed_command: str | None, command: str | None) -> bool:
    """A success of ``command`` may change the failure of ``failed_command``: it is not a read-only
    look (which neither ends it nor is a step of its fix)."""
    if failed_command is None or command is None:
        return True
    from ..analysis.commands import read_only

    return not read_only(command)


def resolve(steps: Steps, tool: str, succeeded: str | None = None) -> tuple[Any, ...] | None:
    """``Store.resolve_failure`` through ``steps``: the fields of a ``base.Resolved`` in order (a
    tuple: that class's module is too heavy for the hook); None when the session's last failure is
    not one of ``tool`` run again by the command that ``succeeded`` (nothing resolved; a command
    that changed state is kept as a step)."""
    row = steps.failure()
    if row is None or not pending(row[0], row[2], tool):
        return None
    failed_tool, error, since, stored, command, checkout = row
    if command is not None and succeeded is not None:
        from ..analysis.commands import CHANGE, SAME, role, same_words

        kind = role(command, succeeded)
        if kind != SAME:
            # Interleaved failures: a parked one whose operation this is passes now.
            waiting = next((i for i, c in steps.parked() if c is not None and role(c, succeeded) == SAME), None)
            if waiting is None:
                if kind == CHANGE:
                    steps.add_step(succeeded)
                return None
            steps.park_pending()  # the one pending now waits in its place
            steps.restore(waiting)
            row = steps.failure()
            assert row is not None
            failed_tool, error, since, stored, command, checkout = row
        rerun = same_words(command, succeeded)
    else:
        rerun = False
    if stored is not None:
        signatures = [str(s) for s in stored]
    else:  # a failure recorded before the signatures were kept
        from ..analysis.signature import analyze

        signatures = list(analyze(error or "").signatures)
    used = steps.since("session_reads", since)
    steps.count_used(used)
    edited = steps.take_edits(since)
    taken = steps.take_steps(since)
    flaky = rerun and not edited and not taken
    notes = steps.notes_since(since)
    confirmed: list[str] = []
    if flaky:
        steps.count_flaky(signatures)  # nothing changed: a note cannot have been confirmed by it
    elif notes and signatures:
        found = steps.confirmable(notes, signatures)
        confirmed = [h for h in notes if h in found]
        steps.confirm(confirmed)
    steps.clear()
    # The newest parked failure is pending again; with none, what was kept for older ones goes.
    behind = steps.parked()
    if behind:
        steps.restore(behind[0][0])
    else:
        steps.forget_kept()
    return (
        used, confirmed, failed_tool or tool, error or "", tuple(signatures), command, tuple(notes), tuple(edited),
        checkout, tuple(taken), flaky,
    )  # fmt: skip
