"""Re-signing keeps what the text explains up to date and carries over what it cannot."""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

import jiyi
from jiyi.analysis import indexing, lexical
from jiyi.analysis.signature import analyze
from jiyi.cli import main
from jiyi.store.reindex import reindex, upgrade_terms
from jiyi.store.sqlite import lexical as sqlite_lexical
from jiyi.store.sqlite.store import SQLiteStore

from ..helpers import ZLIB, note


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


# -- the full-text terms' version: an index built with older terms is re-derived ---------------

RUSSIAN = "/usr/bin/env: «sh\r»: Нет такого файла или каталога"  # coreutils' env, ru locale
RUSSIAN_QUERY = "Нет такого файла или каталога"


def _version_1_terms(text: str) -> str:
    """The index text lexical.terms made before VERSION 2: ASCII words and CJK bigrams only."""
    out: list[str] = []
    cjk = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    for token in re.findall(rf"[a-z0-9_]+|[{cjk}]+", unicodedata.normalize("NFKC", text).lower()):
        if token.isascii():
            token = token.strip("_")
            if token and token not in lexical.STOPWORDS and len(token) <= lexical.MAX_TERM:
                out.append(token)
        else:
            out.extend([token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)])
    return " ".join(out)


def _make_old(path: Path) -> None:
    """Turn a store into one written before the terms' version was kept: no store_meta, no m009,
    every record indexed with VERSION 1's terms."""
    db = sqlite3.connect(path)
    db.execute("DROP TABLE store_meta")
    db.execute("DELETE FROM _migrations WHERE name = 'm009_store_meta'")
    rows = db.execute("SELECT rid, title, what, why, loc, learned FROM records").fetchall()
    for rid, title, what, why, loc, learned in rows:
        db.execute("DELETE FROM records_fts WHERE rowid = ?", (rid,))
        body = _version_1_terms(f"{what}\n{why}\n{loc}\n{learned}")
        db.execute(
            "INSERT INTO records_fts (rowid, title, body) VALUES (?, ?, ?)", (rid, _version_1_terms(title), body)
        )
    db.commit()
    db.close()


def _write(count: int) -> str:
    """``count`` English notes and one Russian; returns the Russian record's hex."""
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="s1")
        for i in range(count):
            writer.note(**note(title=f"zlib {i}"))
        return writer.note(**note(title="sh with CRLF", what=RUSSIAN, learned="dos2unix gradlew")).record.hex


def test_an_old_store_re_derives_its_terms_when_opened(jiyi_home: Path) -> None:
    russian = _write(2)
    _make_old(jiyi_home / "jiyi.db")
    with jiyi.Memory(store=SQLiteStore(jiyi_home / "jiyi.db")) as memory:
        assert memory.store.lexical_state() == (lexical.VERSION, 0)
        hits = memory.session(project="p", session_id="s2").search(RUSSIAN_QUERY)
        assert [h.record.hex for h in hits] == [russian]


def test_before_the_upgrade_the_old_index_answers_and_says_nothing_wrong(jiyi_home: Path) -> None:
    russian = _write(2)
    _make_old(jiyi_home / "jiyi.db")
    # VERSION 1 terms: the English records are found as before, the Russian one not at all yet.
    with jiyi.Memory(store=_Unopened(jiyi_home / "jiyi.db")) as memory:
        assert memory.store.lexical_state() == (1, 3)
        reader = memory.session(project="p", session_id="s2")
        assert reader.search_text(RUSSIAN_QUERY) == "no matching memory"
        hits = reader.search("ld: undefined symbol deflate")
        assert {h.record.title for h in hits} == {"zlib 0", "zlib 1"} and russian not in {h.record.hex for h in hits}


class _Unopened(SQLiteStore):
    """The store as a process running the new code finds it, before its open re-derives anything."""

    def _upgrade_terms_on_open(self) -> None:
        return None


def test_a_large_store_upgrades_a_batch_an_open_and_reindex_finishes_it(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    russian = _write(8)
    _make_old(jiyi_home / "jiyi.db")
    # A store too large for the time an open may spend: one batch each open, then it returns.
    monkeypatch.setattr(sqlite_lexical, "_UPGRADE_BATCH", 2)
    monkeypatch.setattr(sqlite_lexical, "_UPGRADE_ON_OPEN_S", 0.0)
    with jiyi.Memory() as memory:
        assert memory.store.lexical_state() == (1, 7)
    doctor = CliRunner().invoke(main, ["doctor"])
    assert doctor.exit_code == 0, doctor.output
    assert f"lexical terms: version 1, upgrading to {lexical.VERSION}: 5 records left" in doctor.output
    assert json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)["lexical"] == {
        "version": 1,
        "current": lexical.VERSION,
        "left": 3,
    }
    done = CliRunner().invoke(main, ["reindex", "--terms"])
    assert done.exit_code == 0, done.output
    assert f"search terms of 1 records brought to version {lexical.VERSION}" in done.output
    with jiyi.Memory() as memory:
        assert memory.store.lexical_state() == (lexical.VERSION, 0)
        hits = memory.session(project="p", session_id="s2").search(RUSSIAN_QUERY)
        assert [h.record.hex for h in hits] == [russian]
    assert f"lexical terms: version {lexical.VERSION}\n" in CliRunner().invoke(main, ["doctor"]).output


def test_an_upgrade_stopped_half_way_loses_nothing_and_resumes(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    russian = _write(3)
    _make_old(jiyi_home / "jiyi.db")
    monkeypatch.setattr(sqlite_lexical, "_UPGRADE_ON_OPEN_S", 0.0)
    monkeypatch.setattr(sqlite_lexical, "_UPGRADE_BATCH", 2)
    calls = {"n": 0}
    real = indexing.lexical_index

    def failing_on_the_third(*fields: str) -> tuple[str, str]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise MemoryError("the process ran out of memory here")
        return real(*fields)

    monkeypatch.setattr(indexing, "lexical_index", failing_on_the_third)
    store = _Unopened(jiyi_home / "jiyi.db")
    try:
        assert store.upgrade_lexical(2) == 2
        with pytest.raises(MemoryError):
            store.upgrade_lexical(2)  # its first record is re-derived, then the failure: rolled back
        assert store.lexical_state() == (1, 2)
        assert upgrade_terms(store) == 2
        assert store.lexical_state() == (lexical.VERSION, 0)
    finally:
        store.close()
    with jiyi.Memory() as memory:
        assert [h.record.hex for h in memory.session(project="p", session_id="s2").search(RUSSIAN_QUERY)] == [russian]


def test_a_full_reindex_records_the_current_terms(jiyi_home: Path) -> None:
    _write(1)
    _make_old(jiyi_home / "jiyi.db")
    with jiyi.Memory(store=_Unopened(jiyi_home / "jiyi.db")) as memory:
        assert memory.store.lexical_state()[0] == 1
        reindex(memory.store)
        assert memory.store.lexical_state() == (lexical.VERSION, 0)
