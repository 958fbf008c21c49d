"""Data commands: export, import, stats, doctor."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import transfer
from ..config import user_config_path
from ..errors import JiyiError, SettingError
from ..memory import Memory
from ..store.sqlite.store import SQLiteStore
from .common import emit_json, json_option, opened, progress


@click.command("export")
@click.argument("output", default="-", metavar="[FILE]")
def export_command(output: str) -> None:
    """Export every record (with revisions and marks) as JSON Lines; - or no FILE for stdout."""
    with opened() as memory:
        total = memory.store.count()
        with progress() as bar:
            task = bar.add_task("export", total=total)
            if output == "-":
                count = transfer.export(memory.store, sys.stdout, lambda n: bar.advance(task, n))
            else:
                with Path(output).open("w", encoding="utf-8") as fh:
                    count = transfer.export(memory.store, fh, lambda n: bar.advance(task, n))
        click.echo(f"exported {count} records", err=True)


@click.command("import")
@click.argument("source", metavar="FILE")
def import_command(source: str) -> None:
    """Import records from a JSON Lines export (- for stdin); records already present are skipped."""
    with opened() as memory:
        lines = sys.stdin.readlines() if source == "-" else Path(source).read_text(encoding="utf-8").splitlines()
        with progress() as bar:
            task = bar.add_task("import", total=len([line for line in lines if line.strip()]))
            imported, skipped = transfer.import_lines(memory.store, lines, lambda n: bar.advance(task, n))
        click.echo(f"imported {imported} records, skipped {skipped} already present")


@click.command("stats")
@json_option
def stats_command(as_json: bool) -> None:
    """Counts of records by type, origin and project."""
    with opened() as memory:
        stats = memory.store.stats()
        if as_json:
            emit_json(stats)
            return
        click.echo(
            f"records {stats['records']} · forgotten {stats['forgotten']} · revisions {stats['revisions']} "
            f"· sessions {stats['sessions']}"
        )
        for key in ("by_type", "by_origin", "by_project"):
            if stats[key]:
                click.echo(f"{key[3:]}: " + ", ".join(f"{k} {v}" for k, v in stats[key].items()))


def _terms_version() -> int:
    from ..analysis.lexical import VERSION

    return VERSION


def _lexical_line(state: dict[str, int]) -> str:
    line = f"lexical terms: version {state['version']}"
    if state["version"] < state["current"]:
        # Not a problem: search works meanwhile (reindex.py); the records left lack only new terms.
        line += f", upgrading to {state['current']}: {state['left']} records left (jiyi reindex finishes it)"
    return line


@click.command("doctor")
@click.option(
    "--fix",
    "fix",
    is_flag=True,
    help="Retire automatic records whose fix only read (ls, cat, git status…), as older versions wrote "
    "them: forgotten (jiyi restore ID brings one back), on the team too.",
)
@json_option
def doctor_command(fix: bool, as_json: bool) -> None:
    """Check the settings and the store: its path, the migrations applied and pending, and an
    integrity check."""
    try:
        memory = Memory()
    except SettingError as exc:
        _bad_setting(exc, as_json)
        return
    fixed = _retire(memory, as_json) if fix else None
    path = memory.settings.store_path
    config = user_config_path()
    report: dict[str, object] = {
        "home": str(memory.settings.home),
        "config": str(config),
        "config_exists": config.is_file(),
        "store": str(path),
        "ok": False,
    }
    if fixed is not None:
        report["fixed"] = fixed
    try:
        store = memory.store
        report["migrations"] = [{"name": n, "applied_at": a} for n, a in store.applied_migrations()]
        # Normally none (opening migrates): listed for a store that could not apply them.
        report["pending_migrations"] = store.pending_migrations()
        problems = store.integrity_check()
        report["problems"] = problems
        report["records"] = store.count()
        version, left = store.lexical_state()
        report["lexical"] = {"version": version, "current": _terms_version(), "left": left}
        if isinstance(store, SQLiteStore):
            # Written by a detached finisher after the hook (capture/finisher.py); a row given up on
            # stays for inspection.
            waiting, given_up = store.auto_record_queue()
            report["auto_records_queued"] = {"waiting": waiting, "given_up": given_up}
        report["ok"] = not problems
    except JiyiError as exc:
        report["problems"] = [getattr(exc, "reason", "") or exc.message]
    finally:
        memory.close()
    if as_json:
        emit_json(report)
    else:
        click.echo(f"home: {report['home']}")
        click.echo(f"config: {config}" + ("" if report["config_exists"] else " (none: defaults)"))
        click.echo(f"store: {report['store']}")
        for m in report.get("migrations", []):  # type: ignore[attr-defined]
            click.echo(f"migration {m['name']} applied {m['applied_at']}")
        for name in report.get("pending_migrations", []):  # type: ignore[attr-defined]
            click.echo(f"migration {name} pending")
        if "records" in report:
            click.echo(f"records: {report['records']}")
        if "lexical" in report:
            click.echo(_lexical_line(report["lexical"]))  # type: ignore[arg-type]
        queued = report.get("auto_records_queued")
        if isinstance(queued, dict) and (queued["waiting"] or queued["given_up"]):
            click.echo(
                f"automatic records queued: {queued['waiting']} waiting, {queued['given_up']} given up "
                "(the next hook event finishes the waiting ones)"
            )
        for problem in report["problems"]:  # type: ignore[attr-defined]
            click.echo(f"problem: {problem}")
        click.echo("ok" if report["ok"] else "记忆暂不可用")
    if not report["ok"]:
        sys.exit(1)


def _bad_setting(exc: SettingError, as_json: bool) -> None:
    """``doctor`` when a setting cannot be used: which, from where, and what it may be."""
    config = user_config_path()
    if as_json:
        setting = {"key": exc.key, "value": exc.value, "source": exc.source, "allowed": exc.allowed}
        emit_json({"config": str(config), "ok": False, "setting": setting, "problems": [exc.detail]})
    else:
        click.echo(f"config: {config}" + ("" if config.is_file() else " (none: defaults)"))
        click.echo(f"problem: {exc.detail}")
        click.echo("记忆暂不可用")
    sys.exit(1)


def _retire(memory: Memory, as_json: bool) -> dict[str, object]:
    """``doctor --fix``: retire what capture before the same-operation rule recorded as a fix
    (``capture/curation.py``), and tell the team when one was pushed."""
    from ..capture.curation import retire

    try:
        done = retire(memory.store)
    except JiyiError as exc:
        click.echo(f"doctor --fix: {exc.message}", err=True)
        return {"error": exc.code}
    if done.retired and memory.settings.team and isinstance(memory.store, SQLiteStore):
        try:
            from ..team.client import forget
            from ..team.client.http import TeamClient

            with TeamClient.from_settings(memory.settings) as client:
                forget.send(memory.store, client)
        except (ImportError, JiyiError) as exc:  # queued: the next sync sends it
            reason = exc.code if isinstance(exc, JiyiError) else "the team extra is not installed"
            click.echo(f"the team server is told on the next sync ({reason})", err=True)
    if not as_json:
        click.echo(
            f"fix: {len(done.retired)} of {done.checked} automatic records retired (their fix only read)"
            + ("; jiyi restore ID brings one back" if done.retired else "")
        )
        for record in done.retired:
            click.echo(f"  retired {record.id}  {record.title}")
    return {"checked": done.checked, "retired": [r.id for r in done.retired]}


@click.command("reindex")
@click.option("--terms", "terms_only", is_flag=True, help="Only bring the search terms up to date (fast).")
def reindex_command(terms_only: bool) -> None:
    """Re-sign every record with the current error-signature algorithm and rebuild its search terms."""
    from ..store.reindex import reindex, upgrade_terms

    with opened() as memory:
        store = memory.store
        # Search terms first (one transaction a batch, resumable): a store interrupted half-way
        # through the longer re-signing below is already found by every word.
        version, left = store.lexical_state()
        if version < _terms_version():
            with progress() as bar:
                task = bar.add_task("search terms", total=left)
                upgraded = upgrade_terms(store, lambda n: bar.advance(task, n))
            click.echo(f"search terms of {upgraded} records brought to version {_terms_version()}")
        if terms_only:
            click.echo(f"search terms: version {store.lexical_state()[0]}")
            return
        total = store.count()
        with progress() as bar:
            task = bar.add_task("reindex", total=total)
            report = reindex(store, lambda n: bar.advance(task, n))
        click.echo(f"reindexed {report.records} records, {report.changed} changed")


COMMANDS = [export_command, import_command, stats_command, doctor_command, reindex_command]
