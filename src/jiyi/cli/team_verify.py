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
from ..team.verify.isolation import NETWORK_MISSING, WRITES_MISSING, describe
from ..team.verify.replay import ReplayResult, filesystem_isolation, network_isolation, replay
from .common import progress

if TYPE_CHECKING:
    from ..team.client.http import TeamClient


def _say(error: JiyiError) -> str:
    reason = getattr(error, "reason", "")
    return error.text() + (f"\n{reason}" if reason and reason not in error.message else "")


def _round(
    client: TeamClient, candidates: list[dict[str, Any]], *, timeout_s: float, allow_network: bool, allow_writes: bool
) -> list[bool]:
    """Replay and report each candidate; what passed, in order."""
    outcomes: list[bool] = []
    with progress(transient=True) as bar:
        task = bar.add_task("replay", total=len(candidates))
        for line in candidates:
            hexid, title = str(line.get("hex", "")), str(line.get("title", ""))
            bar.update(task, description=f"replay {title[:40]}")
            result: ReplayResult = replay(
                line, timeout_s=timeout_s, allow_network=allow_network, allow_writes=allow_writes
            )
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
    "--allow-network", is_flag=True, help="Let replayed commands use the network (only on a runner you trust)."
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Let replayed commands write outside their checkout (only on a runner you trust).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=60,
    show_default=True,
    help="Seconds between rounds (without --once).",
)
def verify_command(
    once: bool, limit: int, timeout_s: float, allow_network: bool, allow_writes: bool, interval: float
) -> None:
    """Replay the team's records that have a fix and a reproduction, and report each result.

    Each replay clones the record's repository at its commit into a throw-away folder, checks
    that the command fails with the recorded error, applies the fix and runs the command again.
    It runs other people's commands: use a machine set aside for it. They run without network
    (unshare -rn) unless --allow-network is given, and cannot write outside the checkout and its
    temp folder (read-only remounts in a mount namespace) unless --allow-writes is given. The
    first line says which isolation is in force. Needs team_url and team_token.
    """
    from ..team.client.http import TeamClient  # httpx only for this command

    if not allow_network and not network_isolation():
        click.echo(NETWORK_MISSING, err=True)
        sys.exit(2)
    if not allow_writes and not filesystem_isolation():
        click.echo(WRITES_MISSING, err=True)
        sys.exit(2)
    click.echo(describe(allow_network=allow_network, allow_writes=allow_writes), err=True)
    settings = config.load(project.find_root(Path.cwd().resolve()))
    passed = failed = 0
    try:
        with TeamClient.from_settings(settings) as client:
            while True:
                try:
                    outcomes = _drain(
                        client, limit, timeout_s=timeout_s, allow_network=allow_network, allow_writes=allow_writes
                    )
                except Unavailable as exc:
                    if once:
                        raise
                    click.echo(f"{_say(exc)}\n(trying again in {interval:g} s)", err=True)
                else:
                    passed += sum(outcomes)
                    failed += len(outcomes) - sum(outcomes)
                if once:
                    break
                time.sleep(interval)
    except JiyiError as exc:
        click.echo(_say(exc), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
    click.echo(f"replayed {passed + failed}: {passed} passed, {failed} failed", err=True)


def _drain(client: TeamClient, limit: int, *, timeout_s: float, allow_network: bool, allow_writes: bool) -> list[bool]:
    """Rounds until the server has no candidate this run has not replayed yet (one it keeps
    offering is not replayed twice)."""
    seen: set[str] = set()
    outcomes: list[bool] = []
    while True:
        candidates = [c for c in client.verify_candidates(limit) if str(c.get("hex")) not in seen]
        if not candidates:
            return outcomes
        seen.update(str(c.get("hex")) for c in candidates)
        outcomes += _round(
            client, candidates, timeout_s=timeout_s, allow_network=allow_network, allow_writes=allow_writes
        )


COMMANDS = [verify_command]
