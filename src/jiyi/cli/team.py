"""``jiyi team``: the team server (serve, admin) and this machine's side of it (sync, status,
verify). Everything here needs the team extra; without it the commands say which to install."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .. import config, project
from ..errors import JiyiError
from .common import emit_json, json_option, progress

if TYPE_CHECKING:
    from ..config import Settings
    from ..pg_database import PgDatabase

_HEX = re.compile(r"[0-9a-f]{32}")
EXTRA = "team memory needs the team extra: pip install 'jiyi[team]'"
DEFAULT_PORT = 8750
# The side that closes an idle connection first must be the one that would reuse it: a proxy in
# front (nginx's upstream keepalive_timeout, a cloud load balancer's idle timeout: 60 s) or the
# client (2 s, team_client.KEEPALIVE_EXPIRY). uvicorn's default, 5 s, equals httpx's: a request
# could go out on a connection the server was just closing.
KEEP_ALIVE = 75

dsn_option = click.option(
    "--dsn",
    envvar="JIYI_TEAM_DSN",
    required=True,
    help="PostgreSQL connection string (default: JIYI_TEAM_DSN).",
)
schema_option = click.option(
    "--schema",
    envvar="JIYI_TEAM_SCHEMA",
    default="jiyi",
    show_default=True,
    help="PostgreSQL schema of the team data (JIYI_TEAM_SCHEMA).",
)


def _need(*modules: str) -> None:
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in modules):
        click.echo(EXTRA, err=True)
        sys.exit(1)


def _fail(exc: JiyiError) -> NoReturn:
    reason = getattr(exc, "reason", "")
    click.echo(exc.text() + (f"\n{reason}" if reason else ""), err=True)
    sys.exit(1)


@contextmanager
def _database(dsn: str, schema: str) -> Iterator[PgDatabase]:
    _need("psycopg", "psycopg_pool")
    from ..pg_database import PgDatabase

    try:
        with PgDatabase(dsn, schema=schema, max_size=2) as db:
            yield db
    except JiyiError as exc:
        _fail(exc)


def _settings() -> Settings:
    try:
        return config.load(project.find_root(Path.cwd().resolve()))
    except JiyiError as exc:
        _fail(exc)


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
def serve_command(
    dsn: str,
    schema: str,
    host: str,
    port: int,
    workers: int,
    rate_per_minute: int | None,
    read_dsn: str | None,
    keep_alive: int,
) -> None:
    """Run the team server (HTTP, for a reverse proxy with TLS in front of it).

    Every worker is stateless: several workers, or several machines, may serve one database. With
    --read-dsn, /v1/changes, /v1/forgotten, /v1/search and /v1/verify/candidates read from the
    replica (a change shows there after the replication lag); pushes, forgets, verifications and
    every token check stay on the primary.
    """
    _need("psycopg", "psycopg_pool", "starlette", "uvicorn")
    import uvicorn

    with _database(dsn, schema):
        pass  # migrations applied once here, before the workers start; and a bad DSN fails now
    if read_dsn:
        _wait_for_replica(read_dsn, schema)  # before the workers: each would refuse it on its own
    # The workers are other processes: they build the app from the environment (team_server.app_from_env).
    os.environ["JIYI_TEAM_DSN"] = dsn
    os.environ["JIYI_TEAM_SCHEMA"] = schema
    if read_dsn:
        os.environ["JIYI_TEAM_READ_DSN"] = read_dsn
    if rate_per_minute is not None:
        os.environ["JIYI_TEAM_RATE"] = str(rate_per_minute)
    uvicorn.run(
        "jiyi.team_server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_keep_alive=keep_alive,
    )


# How long serve waits for a read replica to replay the migrations it just applied on the primary:
# a streaming standby takes milliseconds to seconds; one behind for longer is a problem to see.
REPLICA_WAIT_S = 30.0


def _wait_for_replica(read_dsn: str, schema: str) -> None:
    """Open the replica read-only, again while it lacks migrations, for up to ``REPLICA_WAIT_S``;
    exit 1 saying why when it cannot be used."""
    import time

    from ..pg_database import NotCaughtUp, PgDatabase

    deadline = time.monotonic() + REPLICA_WAIT_S
    said = False
    while True:
        try:
            PgDatabase(read_dsn, schema=schema, min_size=1, max_size=1, read_only=True).close()
            return
        except NotCaughtUp as exc:
            if time.monotonic() >= deadline:
                _fail(exc)
            if not said:
                click.echo(f"waiting up to {REPLICA_WAIT_S:g} s for the read replica: {exc.reason}", err=True)
                said = True
            time.sleep(0.5)
        except JiyiError as exc:
            _fail(exc)


@team_group.group("admin")
def admin_group() -> None:
    """Teams and their members' tokens (on the server's database)."""


@admin_group.command("create-team")
@click.argument("name")
@dsn_option
@schema_option
def create_team_command(name: str, dsn: str, schema: str) -> None:
    """Create the team NAME."""
    with _database(dsn, schema) as db:
        try:
            team_id = db.create_team(name)
        except JiyiError as exc:
            _fail(exc)
    click.echo(f"created team {name} (id {team_id})")


@admin_group.command("add-member")
@click.argument("team")
@click.argument("name")
@dsn_option
@schema_option
def add_member_command(team: str, name: str, dsn: str, schema: str) -> None:
    """Make a token for member NAME of TEAM and print it (once: only its hash is kept).

    Give each machine a token of its own (e.g. alice-laptop): the team counts evidence per token's
    member, so two machines on one member would overwrite each other's counts.
    """
    with _database(dsn, schema) as db:
        try:
            token = db.create_token(team, name)
        except JiyiError as exc:
            _fail(exc)
    click.echo(token)
    click.echo(f"token of {name} in {team}: shown once, keep it as team_token", err=True)


@admin_group.command("revoke")
@click.argument("token", required=False)
@click.option("--team", default=None, help="With --member: revoke every token of that member.")
@click.option("--member", default=None)
@dsn_option
@schema_option
def revoke_command(token: str | None, team: str | None, member: str | None, dsn: str, schema: str) -> None:
    """Revoke TOKEN, or every token of --member in --team. Takes effect at once."""
    with _database(dsn, schema) as db:
        try:
            count = db.revoke_token(token, team=team, member=member)
        except JiyiError as exc:
            _fail(exc)
    click.echo(f"revoked {count} token{'s' if count != 1 else ''}")
    if not count:
        sys.exit(1)


@admin_group.command("forget")
@click.argument("team")
@click.argument("ids", nargs=-1, required=True)
@click.option("--purge", is_flag=True, help="Erase the records, their revisions, evidence and replay runs for good.")
@dsn_option
@schema_option
@json_option
def admin_forget_command(team: str, ids: tuple[str, ...], purge: bool, dsn: str, schema: str, as_json: bool) -> None:
    """Take records (rr_ / lr_ ids or hexes) out of TEAM, whoever pushed them; --purge erases them.

    Over the server a member may forget or purge only the records they pushed first; this runs on
    the database, for the operator: e.g. a leaked secret another member pushed. Other machines drop
    their copies on their next sync; rotate a leaked secret anyway.
    """
    from ..pg_store import PgStore

    wanted = [ref.removeprefix("rr_").removeprefix("lr_").lower() for ref in ids]
    bad = [ref for ref, hexid in zip(ids, wanted, strict=True) if not _HEX.fullmatch(hexid)]
    if bad:
        raise click.UsageError(f"not a record id: {', '.join(bad)}")
    with _database(dsn, schema) as db:
        try:
            store = PgStore(db, db.team_id(team))
            answers = {hexid: store.forget_in_team(hexid, purge=purge) for hexid in dict.fromkeys(wanted)}
        except JiyiError as exc:
            _fail(exc)
    if as_json:
        emit_json({"team": team, "purge": purge, "records": [{"hex": h, "answer": a} for h, a in answers.items()]})
    else:
        done = "erased" if purge else "forgotten"
        for hexid, answer in answers.items():
            # not in the team: a purge still leaves its tombstone, against a push of it on the way
            click.echo(f"rr_{hexid}: {done if answer == 'forgotten' else 'not in ' + team}")
    if "forgotten" not in answers.values():
        sys.exit(1)


@admin_group.command("list")
@dsn_option
@schema_option
@json_option
def list_command(dsn: str, schema: str, as_json: bool) -> None:
    """The teams, their members and how many live tokens each has."""
    from ..lexical import VERSION
    from ..pg_store import PgStore

    with _database(dsn, schema) as db:
        teams = db.list_teams()
        terms = {t.id: PgStore(db, t.id).lexical_state() for t in teams}
        with db.cursor() as cur:
            cur.execute(
                "SELECT team_id, member, count(*) FILTER (WHERE revoked IS NULL), count(*) FROM tokens "
                "GROUP BY team_id, member ORDER BY team_id, member"
            )
            rows = cur.fetchall()
    members: dict[int, list[dict[str, Any]]] = {}
    for team_id, member, live, total in rows:
        members.setdefault(int(team_id), []).append({"member": member, "live_tokens": live, "tokens": total})
    data: list[dict[str, Any]] = [
        {
            "team": t.name,
            "id": t.id,
            "created": t.created,
            "members": members.get(t.id, []),
            "terms": {"version": terms[t.id][0], "current": VERSION, "left": terms[t.id][1]},
        }
        for t in teams
    ]
    if as_json:
        emit_json(data)
        return
    for entry in data:
        click.echo(f"{entry['team']} (id {entry['id']}, created {entry['created'][:10]})")
        version, left = entry["terms"]["version"], entry["terms"]["left"]
        if version < VERSION:  # search works meanwhile: the records left lack only the new terms
            click.echo(
                f"  search terms: version {version}, upgrading to {VERSION}: {left} records left "
                "(jiyi team admin reindex --terms finishes it)"
            )
        for m in entry["members"]:
            click.echo(f"  {m['member']}: {m['live_tokens']} live token(s) of {m['tokens']}")
    if not data:
        click.echo("no teams yet: jiyi team admin create-team NAME")


@admin_group.command("reindex")
@click.option("--terms", "terms_only", is_flag=True, help="Re-derive the full-text search terms (required).")
@click.option("--team", default=None, help="Only this team (name or id; default: every team).")
@dsn_option
@schema_option
@json_option
def reindex_command(terms_only: bool, team: str | None, dsn: str, schema: str, as_json: bool) -> None:
    """Bring the teams' full-text search terms up to the current version, a batch a transaction.

    Safe while servers serve and pushes arrive; stopped anywhere, the next run (or server start)
    resumes. Only the terms: each machine re-signs its own records (jiyi reindex) and pushes them.
    """
    if not terms_only:
        raise click.UsageError("give --terms: on the server only the search terms are re-derived")
    from ..lexical import VERSION
    from ..pg_lexical import old_teams, upgrade_team
    from ..pg_store import PgStore

    report: list[dict[str, Any]] = []
    with _database(dsn, schema) as db:
        try:
            teams = {t.id: t.name for t in db.list_teams()}
            wanted = list(teams)
            if team is not None:  # a name first, as every admin command takes it; else an id
                named = [i for i, n in teams.items() if n == team]
                wanted = named or [db.team_id(int(team) if team.isdigit() else team)]
            old = set(old_teams(db, VERSION))
            with progress() as bar:
                for team_id in wanted:
                    store = PgStore(db, team_id)
                    done = 0
                    if team_id in old:
                        _, left = store.lexical_state()
                        task = bar.add_task(f"search terms of {teams[team_id]}", total=left)
                        done = upgrade_team(store, functools.partial(bar.advance, task))
                    version = store.lexical_state()[0]
                    report.append({"team": teams[team_id], "id": team_id, "upgraded": done, "version": version})
        except JiyiError as exc:
            _fail(exc)
    if as_json:
        emit_json({"current": VERSION, "teams": report})
        return
    for entry in report:
        click.echo(
            f"{entry['team']}: search terms of {entry['upgraded']} records re-derived, version {entry['version']}"
        )
    if not report:
        click.echo("no teams yet")


# -- this machine ------------------------------------------------------------------------------


@contextmanager
def _lock(home: Path) -> Iterator[bool]:
    """Whether this process holds the sync lock of ``home`` (one background sync at a time; the
    hook may start one at every turn). Without fcntl (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    home.mkdir(parents=True, exist_ok=True)
    with (home / "team-sync.lock").open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


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
    _need("httpx")
    from .. import outbox, sync
    from ..sqlite_store import SQLiteStore
    from ..team_client import TeamClient

    settings = _settings()
    if not settings.team:
        click.echo(
            "no team server configured: set team_url and team_token (or JIYI_TEAM_URL, JIYI_TEAM_TOKEN)", err=True
        )
        sys.exit(1)
    with _lock(settings.home) as mine:
        if not mine:
            if not quiet:
                click.echo("another jiyi team sync is running", err=True)
            return
        try:
            store = SQLiteStore(settings.store_path, busy_timeout_ms=settings.busy_timeout_ms)
        except JiyiError as exc:
            _fail(exc)
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
                reason = getattr(exc, "reason", "")
                click.echo(exc.text() + (f"\n{reason}" if reason else ""), err=True)
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
    from .. import outbox, team_forget
    from ..sqlite_store import SQLiteStore

    settings = _settings()
    try:
        store = SQLiteStore(settings.store_path, busy_timeout_ms=settings.busy_timeout_ms)
    except JiyiError as exc:
        _fail(exc)
    try:
        if settings.team:
            outbox.enable(store)  # what was noted before the first sync counts as pending
        state = outbox.status(store, settings.team_push)
        refused = team_forget.refused(store)
    except JiyiError as exc:
        _fail(exc)
    finally:
        store.close()
    data: dict[str, Any] = {"team_url": settings.team_url, "configured": settings.team, "team_push": settings.team_push}
    data.update(state.to_dict())
    data["refused_forgets"] = [{"id": "lr_" + h, "purge": p, "at": at} for h, p, at in refused]
    if as_json:
        emit_json(data)
        return
    click.echo(f"team server: {settings.team_url or '(none: set team_url and team_token)'}")
    click.echo(f"team_push: {settings.team_push}")
    click.echo(f"machine: {state.machine}")
    held = f", {state.held} kept home by team_push" if state.held else ""
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
