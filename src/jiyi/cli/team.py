"""``jiyi team``: the team server (serve; admin in ``team_admin``) and this machine's side of it
(sync, status; verify in ``team_verify``). Everything here needs the team extra; without it the
commands say which to install (``team_common``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import config, project
from ..errors import JiyiError
from .common import emit_json, json_option, progress
from .team_admin import admin_group
from .team_common import database, dsn_option, error_text, fail, need, schema_option

if TYPE_CHECKING:
    from ..config import Settings

DEFAULT_PORT = 8750
# The side that closes an idle connection first must be the one that would reuse it: a proxy in
# front (nginx's upstream keepalive_timeout, a cloud load balancer's idle timeout: 60 s) or the
# client (2 s, team.client.http.KEEPALIVE_EXPIRY). uvicorn's default, 5 s, equals httpx's: a request
# could go out on a connection the server was just closing.
KEEP_ALIVE = 75


def _settings() -> Settings:
    try:
        return config.load(project.find_root(Path.cwd().resolve()))
    except JiyiError as exc:
        fail(exc)


@click.group("team", context_settings={"help_option_names": ["-h", "--help"]})
def team_group() -> None:
    """Team memory (团队记忆): a shared server on PostgreSQL, and this machine's sync with it.

    A machine pushes its notes (setting team_push = all | global | none) and pulls the team's,
    which then read as rr_ records of origin 团队共享 in local searches. Configure team_url and
    team_token in config.toml (or JIYI_TEAM_URL, JIYI_TEAM_TOKEN). See docs/team-protocol.md.
    """


# -- the server --------------------------------------------------------------------------------
@team_group.command("serve")
@dsn_option
@schema_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535), help="Port.")
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 256), help="Processes sharing the database."
)
@click.option(
    "--rate",
    "rate_per_minute",
    default=None,
    type=click.IntRange(0),
    help="Requests a token may make a minute, per worker (default 600; 0: no limit).",
)
@click.option(
    "--read-dsn",
    envvar="JIYI_TEAM_READ_DSN",
    default=None,
    help="A read replica of the database (JIYI_TEAM_READ_DSN): pulls, search and replay candidates read there.",
)
@click.option(
    "--keep-alive",
    "keep_alive",
    default=KEEP_ALIVE,
    show_default=True,
    type=click.IntRange(1),
    help="Seconds an idle connection is kept open; longer than the proxy's (or clients') idle timeout.",
)
@click.option(
    "--cache-dir",
    "cache",
    envvar="JIYI_TEAM_CACHE_DIR",
    default=None,
    type=click.Path(file_okay=False),
    help="Where the server keeps what it builds once (the Chinese glossary's table, ~5 MB; "
    "JIYI_TEAM_CACHE_DIR). Default: the user's cache folder.",
)
@click.option(
    "--operator-token",
    envvar="JIYI_TEAM_OPERATOR_TOKEN",
    default=None,
    help="Serve the operator's page at /ui behind this token (JIYI_TEAM_OPERATOR_TOKEN; open /ui?token=…): "
    "teams, members, records, replay runs, the latest pushes. None: no page.",
)
def serve_command(
    dsn: str,
    schema: str,
    host: str,
    port: int,
    workers: int,
    rate_per_minute: int | None,
    read_dsn: str | None,
    keep_alive: int,
    cache: str | None,
    operator_token: str | None,
) -> None:
    """Run the team server (HTTP, for a reverse proxy with TLS in front of it).

    Every worker is stateless: several workers, or several machines, may serve one database. With
    --read-dsn, /v1/changes, /v1/forgotten, /v1/search and /v1/verify/candidates read from the
    replica (a change shows there after the replication lag); pushes, forgets, verifications and
    every token check stay on the primary.
    """
    need("psycopg", "psycopg_pool", "starlette", "uvicorn")
    import uvicorn

    with database(dsn, schema, create=True):
        pass  # migrations applied once here, before the workers start; and a bad DSN fails now
    if read_dsn:
        _wait_for_replica(read_dsn, schema)  # before the workers: each would refuse it on its own
    # The workers are other processes: they build the app from the environment (team.server.app.app_from_env).
    os.environ["JIYI_TEAM_DSN"] = dsn
    os.environ["JIYI_TEAM_SCHEMA"] = schema
    if read_dsn:
        os.environ["JIYI_TEAM_READ_DSN"] = read_dsn
    if rate_per_minute is not None:
        os.environ["JIYI_TEAM_RATE"] = str(rate_per_minute)
    if cache:
        os.environ["JIYI_TEAM_CACHE_DIR"] = cache
    if operator_token:
        if len(operator_token) < 16:
            raise click.UsageError(
                "--operator-token: at least 16 characters "
                "(e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
            )
        os.environ["JIYI_TEAM_OPERATOR_TOKEN"] = operator_token
    uvicorn.run(
        "jiyi.team.server.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_keep_alive=keep_alive,
        # A request's headers must arrive within 10 s (uvicorn has no such bound): team.server.connection.
        http="jiyi.team.server.connection:HeadersDeadline",
    )


# How long serve waits for a read replica to replay the migrations it just applied on the primary:
# a streaming standby takes milliseconds to seconds; one behind for longer is a problem to see.
REPLICA_WAIT_S = 30.0


def _wait_for_replica(read_dsn: str, schema: str) -> None:
    """Wait for the read replica (``PgDatabase.wait_for_replica``), saying so once; exit 1 saying
    why when it cannot be used."""
    from ..store.postgres.database import NotCaughtUp, PgDatabase

    def waiting(exc: NotCaughtUp) -> None:
        click.echo(f"waiting up to {REPLICA_WAIT_S:g} s for the read replica: {exc.reason}", err=True)

    try:
        PgDatabase.wait_for_replica(read_dsn, schema, REPLICA_WAIT_S, on_wait=waiting)
    except JiyiError as exc:
        fail(exc)


team_group.add_command(admin_group)


# -- this machine ------------------------------------------------------------------------------


@team_group.command("sync")
@click.option("--push-only", is_flag=True, help="Only send this machine's queued records.")
@click.option("--pull-only", is_flag=True, help="Only fetch the team's changes.")
@click.option("--quiet", is_flag=True, help="No output; wait out the backoff after failures (what the hook runs).")
def sync_command(push_only: bool, pull_only: bool, quiet: bool) -> None:
    """Push the outbox to the team server, then pull the team's changes.

    Nothing is lost when the server cannot be reached: the queued records stay in the outbox and
    the command exits 1 with 记忆暂不可用 (E_UNAVAILABLE).
    """
    if push_only and pull_only:
        raise click.UsageError("--push-only and --pull-only exclude each other")
    need("httpx")
    from ..store.sqlite.store import SQLiteStore
    from ..team.client import outbox, sync
    from ..team.client.http import TeamClient

    settings = _settings()
    if not settings.team:
        click.echo(
            "no team server configured: set team_url and team_token (or JIYI_TEAM_URL, JIYI_TEAM_TOKEN)", err=True
        )
        sys.exit(1)
    with sync.lock(settings.home) as mine:
        if not mine:
            if not quiet:
                click.echo("another jiyi team sync is running", err=True)
            return
        try:
            store = SQLiteStore(settings.store_path, busy_timeout_ms=settings.busy_timeout_ms)
        except JiyiError as exc:
            fail(exc)
        try:
            if quiet and outbox.waiting(store):
                return
            with TeamClient.from_settings(settings) as client, progress() as bar:
                pending = outbox.status(store, settings.team_push).pending
                push_task = bar.add_task("push", total=pending, visible=not pull_only and not quiet)
                pull_task = bar.add_task("pull", total=None, visible=not push_only and not quiet)
                report = sync.run(
                    store,
                    client,
                    settings,
                    push=not pull_only,
                    pull_too=not push_only,
                    force=not quiet,
                    push_progress=lambda n: bar.advance(push_task, n),
                    pull_progress=lambda n, more: bar.update(
                        pull_task, advance=n, total=None if more else bar.tasks[pull_task].completed + n
                    ),
                )
        except JiyiError as exc:
            if not quiet:
                left = outbox.status(store, settings.team_push).pending
                click.echo(error_text(exc), err=True)
                click.echo(f"{left} record(s) wait in the outbox", err=True)
            sys.exit(1)
        finally:
            store.close()
    if quiet:
        return
    if report.pushed is not None:
        p = report.pushed
        refused = f", {len(p.refused)} refused (another team's)" if p.refused else ""
        forgot = f", {p.forgotten} forgotten or erased" if p.forgotten else ""
        if p.forgets_refused:
            forgot += f", {p.forgets_refused} forget(s) refused (see jiyi team status)"
        click.echo(f"pushed {p.sent} record(s): {p.accepted} stored, {p.unchanged} unchanged{refused}{forgot}")
        if p.revisions_refused:
            click.echo(
                f"refused by the team server: {len(p.revisions_refused)} revision(s) of records another member "
                "pushed first (only they or an operator revise them); kept on this machine, not sent again: "
                + ", ".join("lr_" + h for h in p.revisions_refused)
            )
    if report.pulled is not None:
        q = report.pulled
        click.echo(
            f"pulled {q.received} record(s): {q.new} new, {q.updated} updated, {q.own} of this machine's; "
            f"cursor {q.cursor}" + (f"; {q.forgotten} dropped (taken out of the team)" if q.forgotten else "")
        )


@team_group.command("status")
@json_option
def status_command(as_json: bool) -> None:
    """This machine's side of team memory: queued records, last push and pull, cursor, last error."""
    from ..store.sqlite.store import SQLiteStore
    from ..team.client import forget, outbox

    settings = _settings()
    try:
        store = SQLiteStore(settings.store_path, busy_timeout_ms=settings.busy_timeout_ms)
    except JiyiError as exc:
        fail(exc)
    try:
        if settings.team:
            outbox.enable(store)  # what was noted before the first sync counts as pending
        state = outbox.status(store, settings.team_push)
        refused = forget.refused(store)
        revisions = outbox.refused_revisions(store)
    except JiyiError as exc:
        fail(exc)
    finally:
        store.close()
    data: dict[str, Any] = {"team_url": settings.team_url, "configured": settings.team, "team_push": settings.team_push}
    data.update(state.to_dict())
    data["refused_forgets"] = [{"id": "lr_" + h, "purge": p, "at": at} for h, p, at in refused]
    data["refused_revisions"] = [{"id": "lr_" + h, "revision": r, "at": at} for h, r, at in revisions]
    if as_json:
        emit_json(data)
        return
    click.echo(f"team server: {settings.team_url or '(none: set team_url and team_token)'}")
    click.echo(f"team_push: {settings.team_push}")
    click.echo(f"machine: {state.machine}")
    kept = state.held - state.unconfirmed
    held = f", {kept} kept home by team_push" if kept else ""
    if state.unconfirmed:
        held += f", {state.unconfirmed} automatic waiting for confirmation (jiyi approve ID)"
    failing = f", {state.failing} failed last time" if state.failing else ""
    forgets = f", {state.forgets} forget(s) to send" if state.forgets else ""
    click.echo(f"outbox: {state.pending} pending{held}{failing}{forgets}")
    click.echo(f"last push: {state.last_push or 'never'}")
    click.echo(f"last pull: {state.last_pull or 'never'} (cursor {state.cursor})")
    if refused:
        click.echo(
            f"refused by the team server: {len(refused)} forget(s) of records another member pushed first; "
            "the team's operator can take them out (jiyi team admin forget TEAM ID…):"
        )
        for hexid, purge, at in refused:
            click.echo(f"  lr_{hexid} ({'purge' if purge else 'forget'}, {at})")
    if revisions:
        click.echo(
            f"refused by the team server: {len(revisions)} revision(s) of records another member pushed first "
            "(only they or an operator revise them; write your own note, relates_to outdated, instead); "
            "kept on this machine:"
        )
        for hexid, revision, at in revisions:
            click.echo(f"  lr_{hexid} (revision {revision}, {at})")
    if state.last_error:
        click.echo(f"last error: {state.last_error}")
    if state.retry_at:
        click.echo(f"next try: {state.retry_at}")


def _verify() -> click.Command | None:
    try:
        from .team_verify import verify_command
    except ImportError:  # the replay runner is not part of this build
        return None
    return verify_command


_command = _verify()
if _command is not None:
    team_group.add_command(_command)

COMMANDS = [team_group]
