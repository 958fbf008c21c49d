"""What the store indexes for a record (indexing.py): mangled C++ names are indexed demangled too,
so the spelling in the record and the one in the query need not agree."""

from __future__ import annotations

from pathlib import Path

import jiyi
from jiyi.analysis import lexical
from jiyi.analysis.indexing import lexical_index

from ..helpers import note
from .test_signature import needs_demangler

# A PyTorch extension built against another torch, as the dynamic loader reports it (real, from
# tests/test_ranking.py), and the same symbol as the compiler or a person writes it.
MANGLED = (
    "ImportError: (...)/KNN_CUDA/knn_cuda/csrc/_ext/knn/knn.so: undefined symbol:"
    " _ZN3c105ErrorC1ENS_14SourceLocationERKSs"
)
DEMANGLED = "undefined reference to `c10::Error::Error(c10::SourceLocation, std::string const&)'"


@needs_demangler
def test_a_mangled_name_is_indexed_as_written_and_demangled() -> None:
    _, body = lexical_index("t", MANGLED, "-", "-", "-")
    words = body.split()
    assert "zn3c105errorc1ens_14sourcelocationerkss" in words  # as pasted: the same paste meets it
    assert {"c10", "sourcelocation", "std", "string"} <= set(words)


def test_text_without_a_mangled_name_is_indexed_once() -> None:
    title, body = lexical_index("Link zlib", "ld: undefined symbol deflate", "why", "where", "learned")
    # The key error line is indexed with the title (lexical.VERSION 3), and the body as it was.
    assert (title, body) == ("link zlib ld undefined symbol deflate", "ld undefined symbol deflate why where learned")


def test_a_record_holding_text_cut_into_bigrams_says_so_and_no_query_can_ask_for_it() -> None:
    # lexical.VERSION 5: the records holding such text are the population of a bigram's rarity (query.py).
    for title, what in (("安装失败", "error"), ("pip", "ошибка: 安装失败"), ("ไม่พบไฟล์", "-")):
        assert lexical_index(title, what, "-", "-", "-")[1].split()[-1] == lexical.BIGRAM_TEXT
    for title, what in (("Link zlib", "ld: undefined symbol deflate"), ("café", "ошибка: файл не найден")):
        assert lexical.BIGRAM_TEXT not in " ".join(lexical_index(title, what, "-", "-", "-")).split()
    assert lexical.BIGRAM_TEXT not in lexical.terms(f"{lexical.BIGRAM_TEXT} {lexical.BIGRAM_TEXT.upper()} 安装")


def _lexical(memory: jiyi.Memory, query: str) -> tuple[list[str], set[str]]:
    hits = memory.session(project="p", session_id="reader").search(query)
    signal = next((s for s in hits[0].signals if s.name == "lexical"), None) if hits else None
    return [h.record.title for h in hits], set(signal.detail.split(",")) if signal and signal.strength else set()


@needs_demangler
def test_the_demangled_query_finds_the_record_with_the_mangled_name(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="writer")
        writer.note(**note(title="Rebuild the extension", what=MANGLED, why="-", where="-", learned="-"))
        writer.note(**note(title="Other", what="undefined reference to `deflate'", why="-", where="-", learned="-"))
        titles, matched = _lexical(memory, "c10::Error::Error(c10::SourceLocation, std::string const&)")
        assert titles[:1] == ["Rebuild the extension"] and "sourcelocation" in matched


@needs_demangler
def test_the_mangled_query_finds_the_record_with_the_demangled_name(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        writer = memory.session(project="p", session_id="writer")
        writer.note(**note(title="Rebuild the extension", what=DEMANGLED, why="-", where="-", learned="-"))
        titles, matched = _lexical(memory, "undefined symbol: _ZN3c105ErrorC1ENS_14SourceLocationERKSs")
        assert titles[:1] == ["Rebuild the extension"] and "sourcelocation" in matched
