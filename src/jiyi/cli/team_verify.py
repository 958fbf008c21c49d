"""``jiyi team verify``: this machine replays the team's records that carry a fix and a
reproduction (docs/spec.md §5) and reports each result to the team server.

Replaying runs other people's commands, so it happens only here, on a runner the team sets aside
and starts explicitly; no search and no hook ever gets here (docs/spec.md §6).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import config, project
from ..errors import JiyiError, Unavailable
from ..team.verify import cgroup
from ..team.verify.isolation import MISSING, Limits, Sandbox, describe
from ..team.verify.replay import ReplayResult, replay, sandbox_problem
from .common import progress

if TYPE_CHECKING:
    from ..team.client.http import TeamClient


def _say(error: JiyiError, locale: str = "zh") -> str:
    """The error's text, then what failed underneath when the text does not already say it."""
    text = error.text(locale)
    reason = getattr(error, "reason", "")
    return text + (f"\n{reason}" if reason and reason not in text else "")


def _round(
    client: TeamClient, candidates: list[dict[str, Any]], *, timeout_s: float, sandbox: Sandbox, local: bool
) -> list[bool]:
    """Replay and report each candidate; what passed, in order."""
    outcomes: list[bool] = []
    with progress(transient=True) as bar:
        task = bar.add_task("replay", total=len(candidates))
        for line in candidates:
            hexid, title = str(line.get("hex", "")), str(line.get("title", ""))
            bar.update(task, description=f"replay {title[:40]}")
            result: ReplayResult = replay(line, timeout_s=timeout_s, sandbox=sandbox, allow_local_repos=local)
            detail = result.detail if result.passed else f"{result.stage}: {result.detail}"
            summary = client.report_verification(
                hexid, passed=result.passed, how="replay", environment=result.environment, detail=detail
            )
            tally = f" ({summary.get('passed', '?')}/{summary.get('tries', '?')})" if summary else ""
            word = "passed" if result.passed else f"failed at {result.stage}"
            click.echo(f"rr_{hexid} {word}{tally}: {title}\n    {result.detail}")
            outcomes.append(result.passed)
            bar.advance(task)
    return outcomes


@click.command("verify")
@click.option("--once", is_flag=True, help="Replay the candidates there are now, then exit.")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Candidates asked for at a time."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=300,
    show_default=True,
    help="Seconds one replay may take, checkout included.",
)
@click.option(
    "--allow-network",
    is_flag=True,
    help="Give the sandboxed commands the runner's network (and its 127.0.0.1): only on a runner you trust.",
)
@click.option(
    "--allow-local-repos",
    is_flag=True,
    help="Replay records whose repository is a local path or file:// URL (else only https, ssh, user@host:path).",
)
@click.option(
    "--read-only",
    "read_only",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="More toolchain for the commands (e.g. /opt/go), bound read-only at its path; repeatable.",
)
@click.option(
    "--max-processes",
    type=click.IntRange(8, 65536),
    default=Limits.processes,
    show_default=True,
    help="Processes a command may run at once.",
)
@click.option(
    "--max-memory",
    "max_memory_mib",
    type=click.IntRange(64),
    default=Limits.memory_mib,
    show_default=True,
    help="Address space of each process, MiB.",
)
@click.option(
    "--no-sandbox",
    is_flag=True,
    help="Run the commands UNCONTAINED, as this user (a runner without bubblewrap that you trust entirely).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=60,
    show_default=True,
    help="Seconds between rounds (without --once).",
)
def verify_command(
    once: bool,
    limit: int,
    timeout_s: float,
    allow_network: bool,
    allow_local_repos: bool,
    read_only: tuple[Path, ...],
    max_processes: int,
    max_memory_mib: int,
    no_sandbox: bool,
    interval: float,
) -> None:
    """Replay the team's records that have a fix and a reproduction, and report each result.

    Each replay clones the record's repository (a remote URL: https, ssh or user@host:path, with
    this machine's git credentials) at its commit into a throw-away folder, checks that the
    command fails with the recorded error, applies the fix and runs the command again. It runs
    other people's commands: use a machine set aside for it. They run in a bubblewrap sandbox
    (package bubblewrap): no network, no sockets or files of this machine but the toolchain, writes
    only in the checkout, limits on processes, memory, CPU time and output. Without a working
    bubblewrap it refuses to start unless --no-sandbox is given. The first line says which
    isolation is in force. Needs team_url and team_token.
    """
    from ..team.client.http import TeamClient  # httpx only for this command

    limits = Limits(processes=max_processes, memory_mib=max_memory_mib, cpu_s=max(1, int(timeout_s)))
    sandbox = Sandbox(contained=not no_sandbox, network=allow_network, read_only=read_only, limits=limits)
    problem = None if no_sandbox else sandbox_problem()
    if problem is not None:
        click.echo(MISSING.format(why=problem), err=True)
        sys.exit(2)
    click.echo(describe(sandbox, processes_cgroup=cgroup.pids_hierarchy() is not None), err=True)
    settings = config.load(project.find_root(Path.cwd().resolve()))
    passed = failed = 0
    try:
        with TeamClient.from_settings(settings) as client:
            while True:
                try:
                    outcomes = _drain(client, limit, timeout_s=timeout_s, sandbox=sandbox, local=allow_local_repos)
                except Unavailable as exc:
                    if once:
                        raise
                    click.echo(f"{_say(exc, settings.locale)}\n(trying again in {interval:g} s)", err=True)
                else:
                    passed += sum(outcomes)
                    failed += len(outcomes) - sum(outcomes)
                if once:
                    break
                time.sleep(interval)
    except JiyiError as exc:
        click.echo(_say(exc, settings.locale), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
    click.echo(f"replayed {passed + failed}: {passed} passed, {failed} failed", err=True)


def _drain(client: TeamClient, limit: int, *, timeout_s: float, sandbox: Sandbox, local: bool) -> list[bool]:
    """Rounds until the server has no candidate this run has not replayed yet (one it keeps
    offering is not replayed twice)."""
    seen: set[str] = set()
    outcomes: list[bool] = []
    while True:
        candidates = [c for c in client.verify_candidates(limit) if str(c.get("hex")) not in seen]
        if not candidates:
            return outcomes
        seen.update(str(c.get("hex")) for c in candidates)
        outcomes += _round(client, candidates, timeout_s=timeout_s, sandbox=sandbox, local=local)


COMMANDS = [verify_command]
