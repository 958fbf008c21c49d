"""Data commands: export, import, stats, doctor."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import transfer
from .common import emit_json, json_option, opened, progress, read_input


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
        lines = read_input(source, "import").splitlines()
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


def _signature_line(state: dict[str, int]) -> str:
    line = f"signatures: key-line rules version {state['version']}"
    if state["version"] < state["current"]:
        # Not a problem either: a record not yet re-signed is found by its words and near key lines.
        line += f", re-signing to {state['current']}: {state['left']} records left (jiyi reindex finishes it)"
    return line


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


COMMANDS = [export_command, import_command, stats_command, reindex_command]
