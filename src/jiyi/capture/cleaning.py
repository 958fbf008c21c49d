"""What capture keeps of a tool call, and when its fix is evident: shared by the hook's fast path,
``results`` (the full way) and ``auto_record``, so the rule is written once.

Imports nothing at module level: the fast path imports it on every hook event, and redaction
(``analysis.redact``) loads only when there is text to clean.
"""

from __future__ import annotations

# The error text kept as a session's last failure; a run wrapper's output is cut to its tail.
MAX_ERROR = 4000
# The kept command of a failure (and of an automatic record's fix).
COMMAND_MAX = 2000


def cap(text: str, limit: int = MAX_ERROR) -> str:
    """``text`` cut to about ``limit`` characters: its first line and its tail, where compilers and
    test runners put the error."""
    if len(text) <= limit:
        return text
    first = text.split("\n", 1)[0][:200]
    tail = text[-(limit - len(first) - 3) :]
    return f"{first}\n…\n{tail}"


def clean_error(error: str | None) -> str | None:
    """Redacted and capped error text; None when there is none."""
    if not error or not error.strip():
        return None
    from ..analysis.redact import redact

    if len(error) > 4 * MAX_ERROR:
        # Redact what may be kept, starting at a line so no secret is cut in half.
        tail = error[-4 * MAX_ERROR :]
        error = error.split("\n", 1)[0][:200] + "\n" + tail[tail.find("\n") + 1 :]
    return cap(redact(error).strip())


def clean_command(command: str | None) -> str | None:
    """A command as kept: redacted, trimmed, capped; None when empty."""
    if command is None or not command.strip():
        return None
    from ..analysis.redact import redact

    text = redact(command.strip())
    return text if len(text) <= COMMAND_MAX else text[: COMMAND_MAX - 1] + "…"


def command_changed(before: str | None, after: str | None) -> bool:
    """The succeeding command is the failing one changed (both as kept: redacted); words compared,
    so spacing alone is no change."""
    return before is not None and after is not None and before.split() != after.split()


def evident(
    failed_command: str | None, command: str | None, edited: tuple[str, ...], steps: tuple[str, ...] = ()
) -> bool:
    """The fix is evident, so an automatic record may be written: a command failed and its
    operation passed again (``store/closing.py`` decides that) after it changed, files were edited
    or state-changing commands ran in between. Both commands as kept (redacted). A tool without a
    command (an edit that did not apply, a file not found) has no operation to re-run: no record."""
    if failed_command is None:
        return False
    return command_changed(failed_command, command) or bool(edited) or bool(steps)
