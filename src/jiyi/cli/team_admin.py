"""``jiyi team admin``: teams, their members' tokens, and the operator's work on the team server's
database (forget any member's record, bring the search terms up to date). Runs on the database
itself, not over the server."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import JiyiError
from ..records import is_hex
from .common import emit_json, json_option, progress
from .team_common import database, dsn_option, fail, schema_option

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..store.postgres.store import PgStore


@click.group("admin")
def admin_group() -> None:
    """Teams and their members' tokens (on the server's database)."""


@admin_group.command("create-team")
@click.argument("name")
@dsn_option
@schema_option
def create_team_command(name: str, dsn: str, schema: str) -> None:
    """Create the team NAME (and the schema, the first time)."""
    with database(dsn, schema, create=True) as db:
        try:
            team_id = db.create_team(name)
        except JiyiError as exc:
            fail(exc)
    click.echo(f"created team {name} (id {team_id})")


@admin_group.command("add-member")
@click.argument("team")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["member", "runner", "operator"]),
    default="member",
    show_default=True,
    help="member: push, pull, search, forget its own records; runner: also report replay results; "
    "operator: everything, revise and forget any record included.",
)
@dsn_option
@schema_option
def add_member_command(team: str, name: str, role: str, dsn: str, schema: str) -> None:
    """Make a token for member NAME of TEAM and print it (once: only its hash is kept).

    Give each machine a token of its own (e.g. alice-laptop): the team counts evidence per token's
    member, so two machines on one member would overwrite each other's counts. A replay runner
    (jiyi team verify) needs --role runner: a member's replay report is refused.
    """
    with database(dsn, schema) as db:
        try:
            token = db.create_token(team, name, role)
        except JiyiError as exc:
            fail(exc)
    click.echo(token)
    click.echo(f"token of {name} ({role}) in {team}: shown once, keep it as team_token", err=True)


@admin_group.command("revoke")
@click.argument("token", required=False)
@click.option("--team", default=None, help="With --member: revoke every token of that member.")
@click.option("--member", default=None)
@dsn_option
@schema_option
def revoke_command(token: str | None, team: str | None, member: str | None, dsn: str, schema: str) -> None:
    """Revoke TOKEN, or every token of --member in --team. Takes effect at once."""
    with database(dsn, schema) as db:
        try:
            count = db.revoke_token(token, team=team, member=member)
        except JiyiError as exc:
            fail(exc)
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
    from ..store.postgres.team import TeamStore

    wanted = [ref.removeprefix("rr_").removeprefix("lr_").lower() for ref in ids]
    bad = [ref for ref, hexid in zip(ids, wanted, strict=True) if not is_hex(hexid)]
    if bad:
        raise click.UsageError(f"not a record id: {', '.join(bad)}")
    with database(dsn, schema) as db:
        try:
            store = TeamStore(db, db.team_id(team))
            answers = {hexid: store.forget_in_team(hexid, purge=purge) for hexid in dict.fromkeys(wanted)}
        except JiyiError as exc:
            fail(exc)
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
    """The teams, their members, the roles of their tokens and how many are live."""
    from ..analysis.indexing import SIGNATURE_VERSION
    from ..analysis.lexical import VERSION
    from ..store.postgres.store import PgStore

    with database(dsn, schema) as db:
        teams = db.list_teams()
        terms = {t.id: PgStore(db, t.id).lexical_state() for t in teams}
        signed = {t.id: PgStore(db, t.id).signature_state() for t in teams}
        unfilled = {t.id: PgStore(db, t.id).record_keys_left() for t in teams}
        with db.cursor() as cur:
            cur.execute(
                "SELECT team_id, member, role, count(*) FILTER (WHERE revoked IS NULL), count(*) FROM tokens "
                "GROUP BY team_id, member, role ORDER BY team_id, member, role"
            )
            rows = cur.fetchall()
    members: dict[int, list[dict[str, Any]]] = {}
    for team_id, member, role, live, total in rows:
        members.setdefault(int(team_id), []).append(
            {"member": member, "role": role, "live_tokens": live, "tokens": total}
        )
    data: list[dict[str, Any]] = [
        {
            "team": t.name,
            "id": t.id,
            "created": t.created,
            "members": members.get(t.id, []),
            "terms": {"version": terms[t.id][0], "current": VERSION, "left": terms[t.id][1]},
            "signatures": {"version": signed[t.id][0], "current": SIGNATURE_VERSION, "left": signed[t.id][1]},
            "keys": {"left": unfilled[t.id]},
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
        version, left = entry["signatures"]["version"], entry["signatures"]["left"]
        if version < SIGNATURE_VERSION:  # found meanwhile by words and near key lines
            click.echo(
                f"  signatures: key-line rules version {version}, re-signing to {SIGNATURE_VERSION}: {left} records "
                "left (jiyi team admin reindex --signatures finishes it)"
            )
        if entry["keys"]["left"]:  # read from the key tables meanwhile, as before
            click.echo(
                f"  keys: {entry['keys']['left']} older records without them on their rows "
                "(jiyi team admin reindex --keys finishes it)"
            )
        for m in entry["members"]:
            click.echo(f"  {m['member']} ({m['role']}): {m['live_tokens']} live token(s) of {m['tokens']}")
    if not data:
        click.echo("no teams yet: jiyi team admin create-team NAME")


def _brought_up(
    bar: Progress,
    label: str,
    behind: bool,
    state: Callable[[], tuple[int, int]],
    store: PgStore,
    finish: Callable[[PgStore, Callable[[int], None]], int],
) -> tuple[int, int]:
    """(records done, version now) of one team's upgrade, with its progress bar when it is behind."""
    done = 0
    if behind:
        task = bar.add_task(label, total=state()[1])
        done = finish(store, functools.partial(bar.advance, task))
    return done, state()[0]


@admin_group.command("reindex")
@click.option("--terms", "terms", is_flag=True, help="Re-derive the full-text search terms.")
@click.option("--signatures", "signatures", is_flag=True, help="Re-sign records signed with older key-line rules.")
@click.option("--keys", "keys", is_flag=True, help="Put older records' signatures and symbols on their rows.")
@click.option("--team", default=None, help="Only this team (name or id; default: every team).")
@dsn_option
@schema_option
@json_option
def reindex_command(
    terms: bool, signatures: bool, keys: bool, team: str | None, dsn: str, schema: str, as_json: bool
) -> None:
    """Bring the teams' full-text search terms (--terms) and their records' signatures (--signatures)
    up to the current versions, and put the keys of records written before they were kept on the
    record's row there (--keys: loading a record then takes no look-up of them), a batch a transaction.

    Safe while servers serve and pushes arrive; stopped anywhere, the next run (or server start)
    resumes. A re-signed record gets a new sequence number: members pull its new signatures.
    """
    if not (terms or signatures or keys):
        raise click.UsageError("give --terms, --signatures, --keys or more than one")
    from ..analysis.indexing import SIGNATURE_VERSION
    from ..analysis.lexical import VERSION
    from ..store.postgres.store import PgStore
    from ..store.postgres.upgrade import fill_team, old_signed_teams, old_teams, resign_team, upgrade_team

    report: list[dict[str, Any]] = []
    signed: list[dict[str, Any]] = []
    filled: list[dict[str, Any]] = []
    with database(dsn, schema) as db:
        try:
            teams = {t.id: t.name for t in db.list_teams()}
            wanted = list(teams)
            if team is not None:  # a name first, as every admin command takes it; else an id
                named = [i for i, n in teams.items() if n == team]
                wanted = named or [db.team_id(int(team) if team.isdigit() else team)]
            old = set(old_teams(db, VERSION)) if terms else set()
            unsigned = set(old_signed_teams(db, SIGNATURE_VERSION)) if signatures else set()
            with progress() as bar:
                for team_id in wanted:
                    store = PgStore(db, team_id)
                    name = teams[team_id]
                    if terms:
                        done, version = _brought_up(
                            bar, f"search terms of {name}", team_id in old, store.lexical_state, store, upgrade_team
                        )
                        report.append({"team": name, "id": team_id, "upgraded": done, "version": version})
                    if signatures:
                        done, version = _brought_up(
                            bar, f"signatures of {name}", team_id in unsigned, store.signature_state, store, resign_team
                        )
                        signed.append({"team": name, "id": team_id, "looked_at": done, "version": version})
                    if keys:
                        task = bar.add_task(f"keys of {name}", total=store.record_keys_left())
                        done = fill_team(store, functools.partial(bar.advance, task))
                        filled.append({"team": name, "id": team_id, "filled": done, "left": store.record_keys_left()})
        except JiyiError as exc:
            fail(exc)
    if as_json:
        out: dict[str, Any] = {"current": VERSION, "teams": report} if terms else {}
        if signatures:
            out["signatures"] = {"current": SIGNATURE_VERSION, "teams": signed}
        if keys:
            out["keys"] = {"teams": filled}
        emit_json(out)
        return
    for entry in report:
        click.echo(
            f"{entry['team']}: search terms of {entry['upgraded']} records re-derived, version {entry['version']}"
        )
    for entry in signed:
        click.echo(
            f"{entry['team']}: {entry['looked_at']} records looked at for re-signing, key-line rules version "
            f"{entry['version']}"
        )
    for entry in filled:
        click.echo(f"{entry['team']}: keys of {entry['filled']} records put on their rows, {entry['left']} left")
    if not (report or signed or filled):
        click.echo("no teams yet")
