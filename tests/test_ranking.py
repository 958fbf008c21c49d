"""Ranking (docs/spec.md §4 and the hit rules of §1): each of the nine signals' strength and detail, their
fixed order and display, the minimum-evidence rule, trust of outdated records, and which records a
search may return at all (never wrong ones, project scope only in its project), on both backends."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from jiyi import shapes
from jiyi.analysis.indexing import derive
from jiyi.analysis.lexical import QueryWeights
from jiyi.analysis.signature import analyze
from jiyi.query import Prepared, Query
from jiyi.ranking import LEXICAL_FLOOR, WEIGHTS, Hit, rank, score
from jiyi.records import Record, Relation, Revision, new_hex, snapshot
from jiyi.shapes import signature_share
from jiyi.store.base import Indexed, Store
from jiyi.tools import formats

from .analysis.test_signature import TORCH_EXTENSION, needs_demangler
from .helpers import SIGNALS

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
ZLIB_ERROR = "ld: undefined symbol deflate"
YAML_ERROR = "ModuleNotFoundError: No module named 'yaml'"


def stamp(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def made(title: str = "Link zlib with -lz", what: str = ZLIB_ERROR, **changes: Any) -> Record:
    found = analyze(what)
    base = Record(
        hex=new_hex(), title=title, type="bugfix", scope="global", what=what, why="zlib was not on the link line",
        where="Makefile LDLIBS", learned="add -lz after the objects", project="zlib-port", project_key="zlib-port",
        session_id="writer", created=stamp(0), updated=stamp(0), signatures=found.signatures, symbols=found.symbols,
    )  # fmt: skip
    return replace(base, **changes)


def prepared(
    signatures: tuple[str, ...] = (), symbols: tuple[str, ...] = (), idf: dict[str, float] | None = None
) -> Prepared:
    weights = idf or {}
    return Prepared(list(signatures), list(symbols), list(weights), QueryWeights.of(weights, weights), [])


def signals(hit: Hit) -> dict[str, tuple[float, str]]:
    return {s.name: (s.strength, s.detail) for s in hit.signals}


def scored(
    record: Record, parts: Prepared | None = None, doc_terms: set[str] | None = None, **query: Any
) -> dict[str, tuple[float, str]]:
    q = Query(text="q", project_key=query.pop("project_key", "zlib-port"), **query)
    return signals(score(record, q, parts or prepared(), title_terms(doc_terms or set()), NOW))


def title_terms(terms: set[str], normalized: tuple[str, ...] = ()) -> Indexed:
    """A record indexed with ``terms`` once each in its title."""
    return Indexed(dict.fromkeys(terms, 1), {}, normalized)


# -- the weights, the order, the sum ---------------------------------------------------------


def test_weights_are_the_spec_table_in_its_order() -> None:
    assert list(WEIGHTS) == SIGNALS
    assert WEIGHTS == {
        "error_signature": 0.30, "code_symbol": 0.20, "lexical": 0.15, "same_project": 0.10, "environment": 0.05,
        "recency": 0.05, "tool_name": 0.05, "trust": 0.05, "evidence": 0.05,
    }  # fmt: skip


def test_every_hit_carries_nine_signals_in_order_and_scores_their_sum() -> None:
    record = made()
    hit = score(record, Query(text="q", project_key="zlib-port"), prepared(record.signatures), title_terms(set()), NOW)
    assert [s.name for s in hit.signals] == SIGNALS
    assert all(0.0 <= s.strength <= 1.0 for s in hit.signals)
    assert math.isclose(hit.score, sum(WEIGHTS[s.name] * s.strength for s in hit.signals))
    assert hit.signals[0].contribution == 0.30


# -- each signal: strength and detail --------------------------------------------------------


def test_error_signature_is_all_or_nothing() -> None:
    record = made()
    other = analyze(YAML_ERROR).signatures
    assert scored(record, prepared(other + record.signatures))["error_signature"] == (1.0, record.signatures[0])
    assert scored(record, prepared(other))["error_signature"] == (0.0, "-")


def test_code_symbol_is_the_overlap_up_to_three_shared() -> None:
    record = made(symbols=("deflate", "inflate", "crc32", "zlibVersion"))
    # Three shared symbols are full strength; the detail lists them in the query's order.
    full = scored(record, prepared(symbols=("zlibVersion", "deflate", "crc32", "gzopen")))["code_symbol"]
    assert full == (1.0, "zlibVersion,deflate,crc32")
    assert scored(record, prepared(symbols=("deflate", "gzopen", "gzread", "gzclose")))["code_symbol"][0] == 1 / 3
    # The denominator is the smaller side: a record with one symbol matched on it is full strength.
    assert scored(made(symbols=("deflate",)), prepared(symbols=("deflate", "gzopen")))["code_symbol"] == (
        1.0,
        "deflate",
    )
    assert scored(record, prepared(symbols=("inflate", "gzopen")))["code_symbol"] == (0.5, "inflate")
    assert scored(record, prepared(symbols=("gzopen",)))["code_symbol"] == (0.0, "-")


def test_lexical_is_the_weighted_share_above_the_floor() -> None:
    idf = {"deflate": 3.0, "zlib": 1.0, "missing": 1.0, "gzip": 5.0}
    strength, detail = scored(made(), prepared(idf=idf), {"zlib", "deflate", "other"})["lexical"]
    assert strength == 0.4 and detail == "deflate,zlib"  # (3 + 1) / 10, matched terms sorted
    # One tenth of the query is below LEXICAL_FLOOR: noise, shown as nothing.
    assert LEXICAL_FLOOR > 0.1
    assert scored(made(), prepared(idf=idf), {"zlib"})["lexical"] == (0.0, "-")
    assert scored(made(), prepared(idf={"error": 1.0, "failed": 1.0}), {"error", "failed"})["lexical"] == (0.0, "-")


def test_same_project_names_the_project() -> None:
    record = made(project="zlib port (fork)", project_key="github.com/x/zlib-port")
    assert scored(record, project_key="github.com/x/zlib-port")["same_project"] == (1.0, "zlib port (fork)")
    assert scored(record, project_key="other")["same_project"] == (0.0, "-")


def test_environment_is_the_share_of_the_records_facts_that_match_os_and_arch_first() -> None:
    record = made(environment={"python": "3.11", "os": "linux", "arch": "x86_64", "cc": "gcc"})
    strength, detail = scored(record, environment={"os": "linux", "python": "3.11", "cc": "clang"})["environment"]
    assert strength == 0.5 and detail == "os=linux,python=3.11"
    full = scored(record, environment={"os": "linux", "arch": "x86_64", "python": "3.11", "cc": "gcc"})
    assert full["environment"] == (1.0, "os=linux,arch=x86_64,cc=gcc,python=3.11")
    assert scored(made(environment={}), environment={"os": "linux"})["environment"] == (0.0, "-")


@pytest.mark.parametrize(("days", "strength"), [(0, 1.0), (90, 0.5), (180, 0.25), (45, 0.5**0.5)])
def test_recency_halves_every_ninety_days(days: int, strength: float) -> None:
    got, detail = scored(made(updated=stamp(days)))["recency"]
    assert math.isclose(got, strength) and detail == f"{days}d"


def test_recency_of_a_future_or_unreadable_stamp_is_today() -> None:
    assert scored(made(updated=stamp(-3)))["recency"] == (1.0, "0d")
    assert scored(made(updated="yesterday"))["recency"] == (1.0, "0d")


def test_tool_name_matches_the_failing_tool_in_any_case() -> None:
    record = made(tool_name="Bash")
    assert scored(record, failure_tool="BASH")["tool_name"] == (1.0, "bash")
    assert scored(record, failure_tool="make")["tool_name"] == (0.0, "-")
    assert scored(made(tool_name=None), failure_tool=None)["tool_name"] == (0.0, "-")


@pytest.mark.parametrize(
    ("origin", "strength"), [("team_verified", 1.0), ("human", 1.0), ("local_auto", 0.6), ("note", 0.4), ("team", 0.3)]
)
def test_trust_by_origin_and_outdated_at_a_fifth(origin: str, strength: float) -> None:
    assert scored(made(origin=origin))["trust"] == (strength, origin)
    outdated = made(origin=origin, marked=[Relation("lr_" + "0" * 32, "outdated")])
    got, detail = scored(outdated)["trust"]
    assert math.isclose(got, strength * 0.2) and detail == origin


def test_evidence_grows_with_sources_and_used_success() -> None:
    one = scored(made(sources=1, used_success=0))["evidence"]
    assert math.isclose(one[0], 0.2) and one[1] == "sources=1,used_success=0"
    # A confirmed use counts as two sources: it is the stronger evidence.
    used = scored(made(sources=1, used_success=1))["evidence"][0]
    assert math.isclose(used, 1 - 0.8**3) and used == scored(made(sources=3))["evidence"][0]
    assert scored(made(sources=30, used_success=30))["evidence"][0] < 1.0


# -- over a store: candidates, the hit rules, the displayed line ------------------------------


def put(store: Store, record: Record, marks: list[tuple[str, str]] | None = None) -> Record:
    revision = Revision(record.hex, 1, record.session_id, record.updated, "created", snapshot(record))
    store.write_record(record, revision, derive(record), marks=marks or [])
    return record


def found(store: Store, text: str, project: str = "zlib-port", **query: Any) -> list[str]:
    return [h.record.title for h in rank(store, Query(text=text, project_key=project, **query), limit=5, now=NOW)]


def test_a_hit_needs_topical_evidence(store: Store) -> None:
    # Same project, same environment, fresh, trusted, well used: none of that is a hit on its own.
    put(store, made(environment={"os": "linux"}, origin="human", sources=5, used_success=5, tool_name="make"))
    query = {"environment": {"os": "linux"}, "failure_tool": "make"}
    assert found(store, "segmentation fault in libpng", **query) == []
    # Words the record shares only with every error (`error`, `failed`, `line`) are no evidence either.
    generic = "error: build failed at line 3 of the file"
    put(store, made("A build note", what=generic, why="-", where="-", learned="-", signatures=(), symbols=()))
    assert found(store, "error failed line") == []
    # A record that holds a word of the query's symbol (`yaml`) is scored, yet with one word of
    # eight and not the symbol itself it has nothing topical: scored, then left out.
    settings = "settings are read from config.yaml"
    put(store, made("Settings file", what=settings, why="-", where="-", learned="-", signatures=(), symbols=()))
    assert found(store, "ModuleNotFoundError: No module named 'yaml' while importing the plugin loader") == []
    # One topical signal above zero suffices, whichever it is.
    assert found(store, ZLIB_ERROR) == ["Link zlib with -lz"]  # signature
    assert found(store, "deflate") == ["Link zlib with -lz"]  # symbol and words
    hits = rank(store, Query(text="zlib link line"), limit=5, now=NOW)  # words alone
    assert [h.record.title for h in hits] == ["Link zlib with -lz"]
    assert {s.name for s in hits[0].signals if s.strength > 0} & {"error_signature", "code_symbol"} == set()


def test_the_same_error_outranks_a_shared_word(store: Store) -> None:
    # Shares three of the query's four words, but not the error.
    put(store, made("Notes on ld symbols", what="the deflate symbol in ld output", signatures=(), symbols=()))
    put(store, made())
    put(store, made("Install PyYAML", what=YAML_ERROR))
    assert found(store, "/usr/bin/ld: undefined symbol deflate") == ["Link zlib with -lz", "Notes on ld symbols"]
    # The session's last failure feeds the signature, symbol and tool signals (docs/spec.md §1).
    hits = rank(store, Query(text="why?", failure_tool="Bash", failure_error=YAML_ERROR), limit=5, now=NOW)
    assert [h.record.title for h in hits] == ["Install PyYAML"]
    assert signals(hits[0])["error_signature"][0] == 1.0


# Two real records and a real query (bench/data/clusters.jsonl c016, c104): a traceback's frames are
# what any two Python tracebacks share, so they must not outweigh the error line itself.
MARKUPSAFE = "\n".join(
    [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/flask", line 5, in <module>',
        "    from flask.cli import main",
        '  File "/usr/local/lib/python3.9/site-packages/flask/__init__.py", line 14, in <module>',
        "    from jinja2 import escape",
        '  File "/usr/local/lib/python3.9/site-packages/jinja2/filters.py", line 13, in <module>',
        "    from markupsafe import soft_unicode",
        "ImportError: cannot import name 'soft_unicode' from 'markupsafe'"
        " (/usr/local/lib/python3.9/site-packages/markupsafe/__init__.py)",
    ]
)
KNN = (
    "ImportError: (...)/KNN_CUDA/knn_cuda/csrc/_ext/knn/knn.so: undefined symbol:"
    " _ZN3c105ErrorC1ENS_14SourceLocationERKSs"
)


@needs_demangler  # the record names the symbol as people write it; the query has it mangled
def test_a_traceback_query_is_matched_by_its_error_not_its_frames(store: Store) -> None:
    put(store, made("MarkupSafe 2.1 removed soft_unicode", what=MARKUPSAFE, why="pin markupsafe", learned="-"))
    why = "The extension references C++ symbols (c10::Error, torch::jit::parseSchema) of another torch"
    put(store, made("Rebuild the PyTorch extension", what=KNN, why=why, learned="rebuild the extension"))
    assert found(store, TORCH_EXTENSION)[:1] == ["Rebuild the PyTorch extension"]


def test_wrong_records_are_never_returned(store: Store) -> None:
    bad = put(store, made("Reinstall the compiler"))
    put(store, made("Link zlib with -lz", origin="human"), marks=[(bad.hex, "wrong")])
    assert found(store, ZLIB_ERROR) == ["Link zlib with -lz"]
    # Its own words would make it the only hit: still nothing.
    assert found(store, "Reinstall the compiler") == []


def test_outdated_records_stay_but_lose_trust(store: Store) -> None:
    old = put(store, made("Old: link with -lz", origin="team_verified", updated=stamp(1)))
    put(store, made("New: link ZLIB::ZLIB", origin="team_verified", updated=stamp(2)), marks=[(old.hex, "outdated")])
    hits = rank(store, Query(text=ZLIB_ERROR, project_key="zlib-port"), limit=5, now=NOW)
    assert [h.record.title for h in hits] == ["New: link ZLIB::ZLIB", "Old: link with -lz"]
    assert math.isclose(signals(hits[1])["trust"][0], 0.2)


def test_project_scope_stays_in_its_project_and_global_goes_everywhere(store: Store) -> None:
    put(store, made("Project fix", scope="project"))
    put(store, made("Global fix", scope="global", project="elsewhere", project_key="elsewhere"))
    assert sorted(found(store, ZLIB_ERROR, project="zlib-port")) == ["Global fix", "Project fix"]
    assert found(store, ZLIB_ERROR, project="another-project") == ["Global fix"]


def test_own_session_and_excluded_records_are_left_out(store: Store) -> None:
    mine = put(store, made("Mine", session_id="me"))
    put(store, made("Theirs"))
    got = rank(store, Query(text=ZLIB_ERROR), limit=5, exclude_session="me", now=NOW)
    assert [h.record.title for h in got] == ["Theirs"]
    got = rank(store, Query(text=ZLIB_ERROR), limit=5, exclude_hexes=[got[0].record.hex], now=NOW)
    assert [h.record.hex for h in got] == [mine.hex]


def test_limit_and_order_best_first(store: Store) -> None:
    for days in (30, 0, 60, 10, 90, 20):
        put(store, made(f"{days} days old", updated=stamp(days)))
    hits = rank(store, Query(text=ZLIB_ERROR), limit=3, now=NOW)
    assert [h.record.title for h in hits] == ["0 days old", "10 days old", "20 days old"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


_MATCHED = re.compile(r"^   matched: (.*)$", re.M)
_ONE = re.compile(r"^(\w+) (.+) \((\d\.\d\d)\)$")


def test_the_matched_line_shows_nine_signals_cut_and_rounded(store: Store) -> None:
    put(store, made(environment={"os": "linux", "arch": "x86_64", "python": "3.11"}, tool_name="make", sources=2))
    query = Query(
        text="/usr/bin/ld: undefined symbol deflate\nmake: *** [Makefile:3: zlib-port] Error 1",
        project_key="zlib-port",
        failure_tool="make",
        environment={"os": "linux", "arch": "x86_64", "python": "3.11"},
    )
    hits = rank(store, query, limit=5, now=NOW)
    line = _MATCHED.search(formats.search_text(hits))
    assert line is not None
    parts = [_ONE.match(p) for p in line.group(1).split(", ")]
    assert all(parts) and [p.group(1) for p in parts if p] == SIGNALS
    by_name = {p.group(1): p for p in parts if p}
    for signal in hits[0].signals:
        shown = by_name[signal.name]
        assert shown.group(3) == f"{signal.contribution:.2f}"
        # A detail longer than 24 characters is its first 24 and `…`; a shorter one is whole.
        detail = signal.detail
        assert shown.group(2) == (detail if len(detail) <= 24 else detail[:24] + "…")
    assert by_name["error_signature"].group(2) == hits[0].record.signatures[0][:24] + "…"
    assert by_name["error_signature"].group(3) == "0.30"
    assert by_name["environment"].group(2) == "os=linux,arch=x86_64,pyt…"
    assert by_name["same_project"].group(2) == "zlib-port"
    assert by_name["tool_name"].group(2) == "make" and by_name["recency"].group(2) == "0d"
    assert by_name["evidence"].group(2) == "sources=2,used_success=0"


def test_a_key_line_look_alikes_share_counts_by_how_much_of_the_query_each_holds(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every gem whose library is missing prints this line; the query names which library it was.
    wrapper = "ERROR: Failed to build gem native extension."
    detail = "checking for libpq-fe.h... no\nCan't find the PostgreSQL client library (libpq): try --with-pg-config"
    for n, topic in enumerate(("zlib", "openssl", "readline", "sqlite3")):  # a store, not two records
        put(store, made(f"{topic} note", what=f"{topic} was missing: install {topic} headers", sources=n + 1))
    generic = put(store, made("Native gems need their build tools", what=wrapper, why="-", where="-", learned="-"))
    specific = put(
        store,
        made(
            "pg gem: install libpq-dev for libpq-fe.h",
            what=f"gem install pg: {detail}", why="the PostgreSQL client headers are missing", where="-",
            learned="apt install libpq-dev, or pass --with-pg-config",
        ),
    )  # fmt: skip
    query = f"{wrapper}\n{detail}"
    assert set(analyze(query).signatures) & set(generic.signatures)
    assert not set(analyze(query).signatures) & set(specific.signatures)

    def ranked() -> list[Hit]:
        return rank(store, Query(text=query, project_key="zlib-port"), limit=5, now=NOW)

    hits = ranked()
    assert [h.record.hex for h in hits][:2] == [specific.hex, generic.hex]
    # The shared line still counts for the record that prints it, at its share of the best evidence.
    sig = signals(hits[1])["error_signature"]
    assert 0.0 < sig[0] < 1.0 and sig[1].startswith("sha256:")
    # Counted whole whatever else the query says, the shared line put the generic record first.
    monkeypatch.setattr(shapes, "SIGNATURE_SHARE_POWER", 0)
    assert ranked()[0].record.hex == generic.hex


def test_signature_share_falls_with_the_share_of_the_best_evidence() -> None:
    assert signature_share(1.2, 1.2) == 1.0 == signature_share(2.0, 1.0)
    assert signature_share(0.0, 0.0) == 1.0  # no candidate holds a word: nothing to weigh it by
    assert 0.0 < signature_share(0.5, 1.0) < signature_share(0.9, 1.0) < 1.0
