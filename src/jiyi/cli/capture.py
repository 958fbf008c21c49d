"""Capture commands: ``jiyi hook <agent>`` (an agent's hook event on stdin) and ``jiyi run -- <command>``.

The console entry (``jiyi.cli.main``) sends ``jiyi hook <agent>`` straight to ``jiyi.capture.hook`` before
click is imported, so the command defined here serves ``jiyi hook --help`` and click's own callers.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
from collections import deque
from typing import IO

import click

from ..capture.cleaning import MAX_ERROR
from ..capture.events import AGENTS


@click.command("hook")
@click.argument("agent", type=click.Choice(AGENTS))
def hook_command(agent: str) -> None:
    """Record one hook event of AGENT, read as JSON from stdin.

    A failed tool call becomes the session's last failure, which every search of that session adds
    to its query; the agent's session_id names the session and cwd the project. Never fails the
    agent: problems go to stderr and the exit status is 0. For Claude Code, register it for
    SessionStart, PostToolUse, PostToolUseFailure, Stop and SessionEnd.
    """
    from ..capture.hook import main as hook_main

    sys.exit(hook_main([agent]))


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(command: tuple[str, ...]) -> None:
    """Run COMMAND, passing its output and exit status through, and record it as a `bash` call.

    A non-zero exit status makes the tail of the command's output the last failure of the session
    (JIYI_SESSION_ID names it), with the command line, e.g. `jiyi run -- make test`. With
    JIYI_SESSION_ID set, a success is recorded too: it closes the session's loop (and may write an
    automatic record when the command changed or files were edited since the failure).
    """
    code, tail = run(list(command))
    if code != 0 or os.environ.get("JIYI_SESSION_ID"):
        try:
            from ..memory import Memory

            with Memory() as memory:
                memory.session().observe_tool_result(
                    "bash", ok=code == 0, error=tail if code != 0 else None, command=shlex.join(command)
                )
        except Exception as exc:  # recording never changes what the command did
            click.echo(f"jiyi run: not recorded: {type(exc).__name__}: {exc}", err=True)
    sys.exit(code)


def run(command: list[str], limit: int = MAX_ERROR) -> tuple[int, str]:
    """Run ``command`` with its stdout and stderr copied through unchanged; returns the exit status
    (128 + signal when killed, 127 when it cannot start) and the tail of its output: the tail of
    stdout, then the tail of stderr. Each stream is kept apart because two pipes read by two
    threads have no order between them, and stderr goes last because that is where tools put the
    error; it gets the larger share of ``limit``."""
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        message = f"jiyi run: {command[0]}: {exc.strerror or exc}"
        click.echo(message, err=True)
        return 127, message

    def pump(source: IO[bytes], target: IO[bytes], tail: deque[bytes]) -> None:
        read = getattr(source, "read1", source.read)
        kept = 0
        while chunk := read(65536):
            target.write(chunk)
            target.flush()
            tail.append(chunk)
            kept += len(chunk)
            while kept - len(tail[0]) >= 4 * limit:
                kept -= len(tail.popleft())

    assert child.stdout is not None and child.stderr is not None
    out_tail: deque[bytes] = deque()
    err_tail: deque[bytes] = deque()
    pumps = [
        threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, out_tail), daemon=True),
        threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer, err_tail), daemon=True),
    ]
    for thread in pumps:
        thread.start()
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:  # the child got the same signal; wait for it to end
            continue
    for thread in pumps:
        thread.join()
    code = status if status >= 0 else 128 - status
    out = b"".join(out_tail).decode("utf-8", "replace").rstrip("\n")
    err = b"".join(err_tail).decode("utf-8", "replace").rstrip("\n")
    err = _tail(err, limit)
    room = limit - len(err) - 1  # what is left for stdout after stderr and the joining newline
    out = _tail(out, room) if room > 0 else ""
    return code, "\n".join(part for part in (out, err) if part)


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, starting at a line (else a word): a cut in the
    middle of a token would leave a piece redaction no longer recognises."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    for mark in ("\n", " "):
        at = cut.find(mark)
        if at >= 0:
            return cut[at + 1 :]
    return ""


COMMANDS = [hook_command, run_command]
