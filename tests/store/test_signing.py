"""A store signed with older key-line rules re-signs its records (store/sqlite/signing.py): on open
for a bounded while, resumably, and by `jiyi reindex`; what the text cannot explain is carried over."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import jiyi
from jiyi.analysis.indexing import SIGNATURE_VERSION
from jiyi.analysis.signature import analyze, digest
from jiyi.cli import main
from jiyi.store.reindex import reindex, upgrade_signatures
from jiyi.store.sqlite import signing
from jiyi.store.sqlite.store import SQLiteStore

from ..helpers import note

BANNER = "APPLICATION FAILED TO START"
SPRING = (
    f"***************************\n{BANNER}\n***************************\n\nDescription:\n\n"
    "Failed to configure a DataSource: 'url' attribute is not specified and no embedded datasource could be configured."
)
CARRIED = "sha256:" + "c" * 64  # a signature of the failure the writing session met: not in `what`


def _write(spring: int = 1, others: int = 1) -> list[str]:
    """``spring`` records of the Spring text and ``others`` zlib ones; their hexes, Spring's first."""
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="s1")
        made = [writer.note(**note(title=f"DataSource {i}", what=SPRING)).record.hex for i in range(spring)]
        return made + [writer.note(**note(title=f"zlib {i}")).record.hex for i in range(others)]


def _signed_as_before(path: Path, hexes: list[str]) -> None:
    """Make ``hexes`` look signed by the key-line rules of version 1, where Spring's banner was the
    key line; with a signature carried from the session's failure; and the store at version 1."""
    db = sqlite3.connect(path)
    for hexid in hexes:
        db.execute("DELETE FROM signatures WHERE hex = ?", (hexid,))
        db.executemany("INSERT INTO signatures (sig, hex) VALUES (?, ?)", [(digest(BANNER), hexid), (CARRIED, hexid)])
        db.execute(
            "UPDATE records SET normalized = ?, key_lines = ? WHERE hex = ?",
            (json.dumps([BANNER]), json.dumps([BANNER]), hexid),
        )
    db.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('signature_version', '1')")
    db.commit()
    db.close()


def _keys(path: Path, hexid: str, table: str = "signatures", column: str = "sig") -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[0] for r in db.execute(f"SELECT {column} FROM {table} WHERE hex = ?", (hexid,))}
    finally:
        db.close()


def _signatures(path: Path, hexid: str) -> set[str]:
    return _keys(path, hexid)


def test_a_new_store_is_signed_with_the_current_rules(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)


def test_a_store_signed_with_older_rules_is_re_signed_when_opened(jiyi_home: Path) -> None:
    spring, zlib = _write()
    path = jiyi_home / "jiyi.db"
    _signed_as_before(path, [spring])
    message = set(analyze(SPRING).signatures)
    assert message.isdisjoint(_signatures(path, spring))
    with jiyi.Memory(store=SQLiteStore(path)) as memory:
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)
        # The message's signature now, the banner's gone, the session's failure's kept.
        assert _signatures(path, spring) == message | {CARRIED}
        assert _signatures(path, zlib) == set(analyze(note()["content"]["what"]).signatures)
        again = "2024-01-01 10:00:00.000 ERROR 1 --- [main] o.s.b.d.LoggingFailureAnalysisReporter :\n" + SPRING
        hits = memory.session(project="p", session_id="s2").search(again)
        assert hits[0].record.hex == spring
        assert hits[0].signals[0].strength == 1.0 and hits[0].signals[0].detail in message
        assert memory.store.get(spring).revision == 1  # type: ignore[union-attr]  # no new revision


def test_a_large_store_re_signs_a_batch_an_open_and_reindex_finishes_it(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hexes = _write(spring=5, others=2)
    path = jiyi_home / "jiyi.db"
    _signed_as_before(path, hexes[:5])
    monkeypatch.setattr(signing, "_SIGN_BATCH", 2)
    monkeypatch.setattr(signing, "_SIGN_ON_OPEN_S", 0.0)
    with jiyi.Memory() as memory:
        assert memory.store.signature_state() == (1, 5)
    doctor = CliRunner().invoke(main, ["doctor"])
    assert f"signatures: key-line rules version 1, re-signing to {SIGNATURE_VERSION}: 3 records left" in doctor.output
    assert json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)["signatures"] == {
        "version": 1,
        "current": SIGNATURE_VERSION,
        "left": 1,
    }
    done = CliRunner().invoke(main, ["reindex"])
    assert done.exit_code == 0, done.output
    with jiyi.Memory() as memory:
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)
    assert all(digest(BANNER) not in _signatures(path, h) for h in hexes)
    assert f"signatures: key-line rules version {SIGNATURE_VERSION}\n" in CliRunner().invoke(main, ["doctor"]).output


def test_a_re_signing_stopped_half_way_loses_nothing_and_resumes(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hexes = _write(spring=4, others=0)
    path = jiyi_home / "jiyi.db"
    _signed_as_before(path, hexes)
    monkeypatch.setattr(signing, "_SIGN_ON_OPEN_S", 0.0)
    monkeypatch.setattr(signing, "_SIGN_BATCH", 0)  # the open takes no batch
    store = SQLiteStore(path)
    calls = {"n": 0}
    real = signing.SQLiteSigning.upgrade_signatures

    from jiyi.store import reindex as reindex_module

    resign = reindex_module.resigned

    def failing_on_the_third(*args: object) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            raise MemoryError("the process ran out of memory here")
        return resign(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(reindex_module, "resigned", failing_on_the_third)
    try:
        assert real(store, 2) == 2
        with pytest.raises(MemoryError):
            store.upgrade_signatures(2)  # its first record is re-signed, then the failure: rolled back
        assert store.signature_state() == (1, 2)
        assert digest(BANNER) in _signatures(path, hexes[2])
        assert upgrade_signatures(store) == 2
        assert store.signature_state() == (SIGNATURE_VERSION, 0)
        assert all(_signatures(path, h) == set(analyze(SPRING).signatures) | {CARRIED} for h in hexes)
    finally:
        store.close()


def test_a_full_reindex_records_the_current_rules(jiyi_home: Path) -> None:
    (spring,) = _write(others=0)
    _signed_as_before(jiyi_home / "jiyi.db", [spring])

    class Unopened(SQLiteStore):
        def _resign_on_open(self) -> None:
            return None

    with jiyi.Memory(store=Unopened(jiyi_home / "jiyi.db")) as memory:
        assert memory.store.signature_state() == (1, 1)
        reindex(memory.store)
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)


def _symbols(path: Path, hexid: str) -> set[str]:
    return _keys(path, hexid, "symbols", "symbol")


def test_a_note_keeps_its_titles_symbols_and_an_older_store_gains_them_when_re_signed(jiyi_home: Path) -> None:
    # A title names the error the note's prose only describes: its symbols are the record's
    # (signature.record_symbols), and a store signed before version 4 gets them on open.
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="s1")
        titled = writer.note(
            **note(title="vLLM `gpu_memory_utilization` too low for the KV cache", what="the engine would not start")
        ).record.hex
        plain = writer.note(**note(title="zlib missing")).record.hex
    path = jiyi_home / "jiyi.db"
    assert "gpu_memory_utilization" in _symbols(path, titled)
    before = _symbols(path, plain)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM symbols WHERE hex = ? AND symbol = 'gpu_memory_utilization'", (titled,))
    db.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('signature_version', '3')")
    db.commit()
    db.close()
    with jiyi.Memory(store=SQLiteStore(path)) as memory:
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)
        hits = memory.session(project="p", session_id="s2").search("Try increasing `gpu_memory_utilization`")
        assert hits and hits[0].record.hex == titled
        assert hits[0].signals[1].detail == "gpu_memory_utilization"
    assert "gpu_memory_utilization" in _symbols(path, titled)
    assert _symbols(path, plain) == before  # a title without symbols: the record is left as it was
