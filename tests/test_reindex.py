"""Re-signing keeps what the text explains up to date and carries over what it cannot."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

import jiyi
from jiyi.cli import main
from jiyi.reindex import reindex
from jiyi.signature import analyze

from .helpers import ZLIB, note


def test_reindex_recomputes_signatures_from_an_older_algorithm(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        rid = memory.session(project="p", session_id="s1").note(**ZLIB).record.hex
    # Pretend the record was signed by an older algorithm whose hash no longer matches.
    db = sqlite3.connect(jiyi_home / "jiyi.db")
    db.execute("UPDATE signatures SET sig = 'sha256:' || substr('0000000000', 1, 10) WHERE hex = ?", (rid,))
    db.execute("UPDATE records SET sig_algorithm = 'jiyi-sig-0', normalized = '[\"old\"]' WHERE hex = ?", (rid,))
    db.commit()
    db.close()
    with jiyi.Memory() as memory:
        reader = memory.session(project="p", session_id="s2")
        assert "error_signature -" in reader.search_text("ld: undefined symbol deflate")
        report = reindex(memory.store)
        assert (report.records, report.changed) == (1, 1)
        record = memory.store.get(rid)
        assert record is not None
        assert set(analyze(ZLIB["content"]["what"]).signatures) <= set(record.signatures)
        assert "error_signature sha256:" in reader.search_text("ld: undefined symbol deflate")
        # A second run changes nothing but still visits every record.
        assert reindex(memory.store) == type(report)(1, 0)


def test_reindex_keeps_signatures_from_the_sessions_failure(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="s1")
        writer.observe_tool_result("Bash", ok=False, error="ModuleNotFoundError: No module named 'yaml'")
        saved = writer.note(**note(what="the yaml import broke the test run"))
        failure = analyze("ModuleNotFoundError: No module named 'yaml'").signatures
        assert set(failure) <= set(saved.record.signatures)
        reindex(memory.store)
        record = memory.store.get(saved.record.hex)
        assert record is not None and set(failure) <= set(record.signatures)


def test_reindex_command(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        memory.session(project="p", session_id="s1").note(**ZLIB)
    result = CliRunner().invoke(main, ["reindex"])
    assert result.exit_code == 0, result.output
    assert "reindexed 1 records, 0 changed" in result.output
