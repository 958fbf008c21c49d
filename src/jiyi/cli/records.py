"""Tool commands (search, read, note) and record management (list, show, forget)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..errors import InvalidArgument, JiyiError, NotFound
from ..records import SCOPES, TYPES
from ..tools import formats
from ..tools.validation import ref as parse_ref
from .common import emit_json, hit_json, json_option, opened, project_option, read_input, record_json, session


@click.command("search")
@click.argument("query")
@click.option("--limit", type=int, default=5, show_default=True, help="Hits to show, 1 to 5.")
@project_option
@json_option
def search_command(query: str, limit: int, project: str | None, as_json: bool) -> None:
    """Search memory by error text or keywords (the memory_search tool)."""
    with opened() as memory:
        hits = session(memory, project).search(query, limit)
        if as_json:
            emit_json([hit_json(h) for h in hits])
        else:
            click.echo(formats.search_text(hits, memory.settings.locale))


@click.command("read")
@click.argument("ref")
@project_option
@json_option
def read_command(ref: str, project: str | None, as_json: bool) -> None:
    """Read a record's full text by its id (the memory_read tool; counts against the read budget)."""
    with opened() as memory:
        result = session(memory, project).read(ref)
        if as_json:
            emit_json({**record_json(result.record), "text": result.text, "truncated": result.truncated})
        else:
            click.echo(result.text)


def _load_json(source: str) -> dict[str, Any]:
    text = read_input(source, "json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument("json", f"不是 JSON：{exc.msg}", f"not JSON: {exc.msg}") from None
    except RecursionError:
        raise InvalidArgument("json", "嵌套过深", "nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidArgument("json", "应为对象", "must be an object")
    return data


def _file_or_text(field: str, value: str | None) -> str | None:
    if value is not None and value.startswith("@"):
        return read_input(value[1:], f"content.{field}")
    return value


@click.command("note")
@click.option("--json", "json_source", metavar="FILE|-", help="Take the whole memory_note call as JSON.")
@click.option("--title", help="Short and searchable, at most 160 characters, e.g. 'Link zlib with -lz'.")
@click.option("--type", "kind", type=click.Choice(TYPES), help="What kind of memory it is.")
@click.option("--scope", type=click.Choice(SCOPES), help="project: this project only; global: everywhere.")
@click.option("--what", help="What happened (the error text); @FILE reads a file.")
@click.option("--why", help="The cause.")
@click.option("--where", help="Where: file, setting, command.")
@click.option("--learned", help="What to do next time.")
@click.option("--topic", "topic_key", help="Two-level topic, e.g. build/zlib-link.")
@click.option("--fix-command", help="Fix: a command.")
@click.option("--fix-diff", metavar="FILE", help="Fix: a unified diff file (- for stdin).")
@click.option("--fix-config", metavar="PATH", help="Fix: a config file path; its content from --fix-content.")
@click.option("--fix-content", metavar="FILE", help="Content of the --fix-config file.")
@click.option("--evidence", "evidence_refs", multiple=True, help="Id of a supporting record (repeatable).")
@click.option("--relates-to", multiple=True, metavar="REF:wrong|outdated", help="Mark a record (repeatable).")
@project_option
def note_command(
    json_source: str | None,
    kind: str | None,
    topic_key: str | None,
    fix_command: str | None,
    fix_diff: str | None,
    fix_config: str | None,
    fix_content: str | None,
    evidence_refs: tuple[str, ...],
    relates_to: tuple[str, ...],
    project: str | None,
    **content: str | None,
) -> None:
    """Write down what was learned (the memory_note tool)."""
    with opened() as memory:
        if json_source is not None:
            args = _load_json(json_source)
        else:
            title = content.pop("title")
            args = {
                "title": title,
                "type": kind,
                "scope": content.pop("scope"),
                "content": {k: _file_or_text(k, v) for k, v in content.items()},
            }
            if topic_key:
                args["topic_key"] = topic_key
            if fix_command:
                args["fix"] = {"kind": "command", "command": fix_command}
            elif fix_diff:
                args["fix"] = {"kind": "diff", "diff": read_input(fix_diff, "fix.diff")}
            elif fix_config:
                body = read_input(fix_content, "fix.content") if fix_content else None
                args["fix"] = {"kind": "config", "path": fix_config, "content": body}
            if evidence_refs:
                args["evidence_refs"] = list(evidence_refs)
            if relates_to:
                pairs = [item.rsplit(":", 1) if ":" in item else [item, ""] for item in relates_to]
                args["relates_to"] = [{"record_ref": r, "relation": rel} for r, rel in pairs]
        click.echo(session(memory, project).note(**args).text)


@click.command("list")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0)
@click.option("--project", default=None, help="Only this project's records (by name).")
@click.option("--forgotten", is_flag=True, help="Only the forgotten records (jiyi restore ID brings one back).")
@json_option
def list_command(limit: int, offset: int, project: str | None, forgotten: bool, as_json: bool) -> None:
    """List records, newest first."""
    with opened() as memory:
        rows = memory.store.list_records(limit=limit, offset=offset, project=project, only_forgotten=forgotten)
        if as_json:
            emit_json([record_json(r) for r in rows])
            return
        for r in rows:
            topic = f" ({r.topic_key} r{r.revision})" if r.topic_key else ""
            click.echo(f"{r.id}  {formats.day(r.updated)}  {r.type:<9} {r.project:<16} {r.title}{topic}")
        total = memory.store.count() if project is None and not forgotten else None
        if total is not None and (offset or len(rows) < total):
            # Said on stderr: a pipe of the listing stays the records alone.
            more = f"; --offset {offset + len(rows)} for the next" if offset + len(rows) < total else ""
            click.echo(f"{offset + 1}–{offset + len(rows)} of {total} records{more}", err=True)


def _record_or_fail(memory: Any, ref: str, *, include_forgotten: bool = False) -> Any:
    prefix, hexid = parse_ref(ref)
    record = memory.store.get(hexid, include_forgotten=include_forgotten)
    if record is None:
        raise NotFound(prefix + hexid)
    return record


@click.command("show")
@click.argument("ref")
@json_option
def show_command(ref: str, as_json: bool) -> None:
    """Show a record with all its revisions (does not count against a read budget)."""
    with opened() as memory:
        record = _record_or_fail(memory, ref)
        revisions = memory.store.revisions(record.hex)
        from ..capture.curation import unconfirmed

        flaky = memory.store.flaky_count(record.signatures)
        waiting = unconfirmed(record)
        runs, runs_error = _replay_runs(memory, record)
        if as_json:
            emit_json(
                {
                    **record_json(record),
                    "flaky": flaky,
                    "unconfirmed": waiting,
                    "replays": runs,
                    "revisions": [
                        {
                            "revision": r.revision,
                            "created": r.created,
                            "session": r.session_id,
                            "change": r.change,
                            "snapshot": r.snapshot,
                        }
                        for r in revisions
                    ],
                }
            )
            return
        locale = memory.settings.locale
        click.echo(formats.read_text(record, locale=locale))
        if flaky:
            click.echo(f"flaky: its failure passed {flaky} time(s) on a re-run with nothing changed")
        if waiting:
            click.echo("unconfirmed: recorded automatically, kept on this machine until confirmed (jiyi approve)")
        if runs:
            click.echo("replay runs:")
            for run in runs:
                verdict = "passed" if run["passed"] else "failed"
                runner = f" · by {run['runner']}" if run.get("runner") else ""  # unnamed before runner roles
                click.echo(f"  {formats.day(run['at'])} · {run['how']} · {run['environment']} · {verdict}{runner}")
        elif runs_error:
            click.echo(f"replay runs: {runs_error}")
        heading, word = ("Revisions:", "revision") if locale == "en" else ("修订记录：", "修订")
        click.echo(f"\n{heading}")
        for r in revisions:
            click.echo(f"  {word} {r.revision} · {formats.day(r.created)} · {r.change} · {r.snapshot['title']}")


@click.command("forget")
@click.argument("ref")
@click.option("--purge", is_flag=True, help="Erase the record and all its revisions for good (e.g. a leaked secret).")
@click.option("--yes", is_flag=True, help="Do not ask before --purge.")
def forget_command(ref: str, purge: bool, yes: bool) -> None:
    """Take a record out of search and export; --purge erases it for good."""
    with opened() as memory:
        record = _record_or_fail(memory, ref, include_forgotten=purge)
        if purge:
            if not yes and not _interactive():
                # click.confirm would read end-of-file and say only "Aborted!".
                raise click.UsageError(f"--purge erases {record.id} for good: confirm in a terminal, or add --yes")
            if not yes:
                click.confirm(f"Erase {record.id} and its {record.revision} revision(s) for good?", abort=True)
            memory.store.purge(record.hex)
            click.echo(f"purged {record.id}")
        else:
            memory.store.forget(record.hex)
            click.echo(f"forgot {record.id}")
        _tell_the_team(memory, record, purge)


def _replay_runs(memory: Any, record: Any) -> tuple[list[dict[str, Any]], str | None]:
    """Every replay run the team server holds for ``record`` (when it has any: its verification
    says so), and why there are none to show when the server could not be asked."""
    if record.verification is None or not memory.settings.team:
        return [], None
    try:
        from ..team.client.http import TeamClient

        with TeamClient.from_settings(memory.settings) as client:
            return client.verifications(record.hex), None
    except ImportError:
        return [], "the team extra is not installed"
    except JiyiError as exc:
        return [], f"the team server did not answer ({exc.code})"


def _interactive() -> bool:
    return sys.stdin.isatty()


def _tell_the_team(memory: Any, record: Any, purge: bool) -> None:
    """With a team: take one of this machine's records out of the team at once (the forget was
    queued with it, so a server that does not answer now hears of it on the next sync). A team
    record forgotten here stays a choice of this machine: its author takes it out of the team."""
    from ..store.sqlite.store import SQLiteStore

    store = memory.store
    if not memory.settings.team or not isinstance(store, SQLiteStore):
        return
    if record.remote:
        click.echo(f"only on this machine: {record.id} is the team's, and its author takes it out of the team")
        return
    with store.transaction() as db:
        queued = db.execute("SELECT 1 FROM outbox_forget WHERE hex = ?", (record.hex,)).fetchone()
    if queued is None:  # never synced: the team has nothing of it
        return
    try:
        from ..team.client import forget
        from ..team.client.http import TeamClient

        with TeamClient.from_settings(memory.settings) as client:
            sent = forget.send(store, client)
    except (ImportError, JiyiError) as exc:
        reason = exc.code if isinstance(exc, JiyiError) else "the team extra is not installed"
        click.echo(f"the team server is told on the next sync ({reason})")
        return
    if record.hex in sent.refused:
        # Pushed first by another member (e.g. an import of this record there): theirs to take out.
        click.echo(
            f"refused by the team server: another member pushed {record.id} first, so it stays on the team; "
            "ask the team's operator (jiyi team admin forget)" + (" and rotate the secret" if purge else "")
        )
        return
    if purge:
        # What a user who leaked a secret needs to hear: where it may still be.
        click.echo(
            "erased on the team server too; other machines erase their copies on their next sync. "
            "If it held a secret, rotate it anyway."
        )
    else:
        click.echo("forgotten by the team server too; other machines drop it on their next sync")


@click.command("approve")
@click.argument("ref")
def approve_command(ref: str) -> None:
    """Confirm one of this machine's records as a person: an automatic record waiting for
    confirmation may then be shared with the team (its origin becomes 人工确认)."""
    from ..capture.curation import approve

    with opened() as memory:
        record = _record_or_fail(memory, ref)
        approved = approve(memory.store, record.hex)
        click.echo(f"approved {approved.id}: {approved.title}")


@click.command("restore")
@click.argument("ref")
def restore_command(ref: str) -> None:
    """Bring a forgotten record back into search and export (a purged one is gone for good)."""
    from ..capture.curation import restore

    with opened() as memory:
        record = _record_or_fail(memory, ref, include_forgotten=True)
        back = restore(memory.store, record.hex)
        click.echo(f"restored {back.id}: {back.title}")


COMMANDS = [
    search_command, read_command, note_command, list_command, show_command, forget_command, approve_command,
    restore_command,
]  # fmt: skip
