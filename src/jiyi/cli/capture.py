"""Capture commands: ``jiyi hook <agent>`` (an agent's hook event on stdin) and ``jiyi run -- <command>``.

The console entry (``jiyi.cli.main``) sends ``jiyi hook <agent>`` straight to ``jiyi.capture.hook`` before
click is imported, so the command defined here serves ``jiyi hook --help`` and click's own callers.
"""

from __future__ import annotations

import os
import shlex
import sys

import click

from ..capture.events import AGENTS
from ..capture.run import run


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
                    "bash",
                    ok=code == 0,
                    error=tail if code != 0 else None,
                    command=shlex.join(command),
                    watch_checkout=True,  # a fix made by hand in another shell is seen
                )
        except Exception as exc:  # recording never changes what the command did
            click.echo(f"jiyi run: not recorded: {type(exc).__name__}: {exc}", err=True)
    sys.exit(code)


COMMANDS = [hook_command, run_command]
