"""Full-text terms (lexical.py): English error text, CJK bigrams, mixed text, query escaping, and
the IDF-weighted coverage behind the ``lexical`` signal (docs/spec.md §4, §6)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jiyi
from jiyi.analysis import lexical
from jiyi.analysis.indexing import lexical_index
from jiyi.analysis.inflection import INFLECTION_WEIGHT
from jiyi.analysis.lexical import QueryWeights, coverage, idf, index_text, match_expression, terms, unique_terms
from jiyi.errors import InvalidArgument
from jiyi.store.base import Store

from ..helpers import ZLIB, note

# -- tokenising ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Stopwords (`no`, `to`) go; the error class stays one lowercased word.
        ("ModuleNotFoundError: No module named 'yaml'", ["modulenotfounderror", "module", "named", "yaml"]),
        # Underscores belong to the identifier: `pthread_create` is one term, not `pthread` + `create`.
        ("undefined reference to `pthread_create'", ["undefined", "reference", "pthread_create"]),
        # Rust error codes keep their digits; repeats stay in order (terms() is the indexed stream).
        ("error[E0425]: cannot find value", ["error", "e0425", "cannot", "find", "value"]),
        # Leading and trailing underscores are decoration (`__init__` is found by `init`).
        ("__init__ _x_ a_b", ["init", "x", "a_b"]),
        # Punctuation splits: `std::vector<int>` is three terms, versions are cut at the dots.
        ("std::vector<int> 3.11", ["std", "vector", "int", "3", "11"]),
    ],
)
def test_english_error_text(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_text_is_nfkc_folded_and_lowercased() -> None:
    # Full-width letters and digits, as a Chinese input method types them, are the ASCII word.
    assert terms("ＡＢＣ１２３ ｚｌｉｂ ZLIB") == ["abc123", "zlib", "zlib"]


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert terms("链接时找不到") == ["链接", "接时", "时找", "找不", "不到"]
    assert terms("链") == ["链"]  # a lone ideograph is its own term
    assert terms("エラー 한국어") == ["エラ", "ラー", "한국", "국어"]


def test_mixed_text_splits_at_the_script_boundary() -> None:
    assert terms("链接时找不到 zlib") == ["链接", "接时", "时找", "找不", "不到", "zlib"]
    assert terms("zlib链接libz") == ["zlib", "链接", "libz"]
    # Full-width punctuation ends a CJK run: no bigram spans `：`.
    assert terms("失败：找不") == ["失败", "找不"]


def test_runs_are_the_cjk_text_terms_cuts_into_bigrams_folded_as_it_folds() -> None:
    # The glossary looks up the longer Chinese words of a query in them (analysis/glossary.py).
    assert lexical.runs("链接时找不到 zlib，失败：找不") == ["链接时找不到", "失败", "找不"]
    assert lexical.runs("ｍａｓｔｅｒ分支") == ["分支"]  # full-width ASCII folds to a word outside the run
    assert lexical.runs("ld: cannot find -lz") == []


def test_stopwords_and_overlong_words_are_dropped() -> None:
    assert terms("the a of is") == []
    word40, word41 = "x" * lexical.MAX_TERM, "y" * (lexical.MAX_TERM + 1)
    assert terms(f"{word40} {word41}") == [word40]


def test_unique_terms_keep_first_order_and_index_text_joins_them() -> None:
    assert unique_terms("deflate zlib deflate 链接 链接") == ["deflate", "zlib", "链接"]
    assert index_text("ld: undefined symbol deflate") == "ld undefined symbol deflate"


def test_identifiers_are_indexed_whole_and_by_their_words() -> None:
    words = lexical.identifier_words("VK_ERROR_INCOMPATIBLE_DRIVER vk::createInstanceUnique: ErrorIncompatibleDriver")
    assert words == [
        "vk", "error", "incompatible", "driver", "create", "instance", "unique", "error", "incompatible", "driver",
    ]  # fmt: skip
    assert lexical.identifier_words("HTTPServer cuda11 x86_64 python3 of_the") == [
        "http",
        "server",
        "cuda",
        "11",
        "86",
        "64",
        "python",
    ]
    # Plain words and single-word names have no pieces; a dotted name is already cut by terms().
    assert lexical.identifier_words("deflate zlib Error torch.load") == []
    assert index_text("gpu_memory_utilization") == "gpu_memory_utilization gpu memory utilization"


def test_words_of_every_alphabetic_script_are_terms() -> None:
    # Cyrillic and Greek were dropped whole before (VERSION 1); accents fold, case folds as FTS5 does.
    assert terms("Ошибка: не найден модуль") == ["ошибка", "не", "наиден", "модуль"]
    assert terms("ΣΦΆΛΜΑ: Δεν υπάρχει") == ["σφαλμα", "δεν", "υπαρχει"]
    # Letters and digits by Unicode category: Arabic, Hebrew and Devanagari words stay whole words.
    assert terms("ملف غير موجود") == ["ملف", "غير", "موجود"]
    assert terms("קובץ לא נמצא") == ["קובץ", "לא", "נמצא"]
    assert terms("फ़ाइल नहीं मिली") == ["फइल", "नह", "मल"]  # vowel signs are marks: folded like accents
    # Punctuation of any script separates: guillemets, the Greek question mark, the katakana dot.
    assert terms("«sh»; ア・イ") == ["sh", "ア", "イ"]


def test_accents_fold_so_a_plain_keyboard_meets_the_accented_word() -> None:
    # Accents are folded, not indexed beside the accented form: FTS5's unicode61 folds Latin
    # accents itself, so two forms would be one term in the index anyway.
    assert terms("naïve café Straße") == ["naive", "cafe", "strasse"]
    assert terms("naive cafe STRASSE") == ["naive", "cafe", "strasse"]
    # Letters without a decomposition are typed plain as well: Turkish ı and İ, Polish ł, Danish ø.
    assert terms("İzin bulunamadı Błąd Søg") == ["izin", "bulunamadi", "blad", "sog"]
    # The 40-character cap and the stopwords hold for every script.
    assert terms("д" * lexical.MAX_TERM + " " + "ж" * (lexical.MAX_TERM + 1)) == ["д" * lexical.MAX_TERM]
    assert terms("The naïve") == ["naive"]


def test_scripts_without_spaces_get_bigrams_and_cjk_keeps_its_marks() -> None:
    # Thai, Lao, Myanmar and Khmer write no spaces between words: bigrams, as for Chinese.
    assert terms("ไม่พบไฟล์") == ["ไม", "มพ", "พบ", "บไ", "ไฟ", "ฟล"]
    # Kana keep their voicing marks (が is not か): CJK text is never decomposed.
    assert terms("ファイルがありません") == ["ファ", "ァイ", "イル", "ルが", "があ", "あり", "りま", "ませ", "せん"]


def test_generic_words_include_error_and_warning_in_the_tested_languages() -> None:
    words = "ошибка предупреждение Fehler Warnung erreur avertissement σφάλμα προειδοποίηση hata uyarı"
    assert set(terms(words)) <= lexical.GENERIC  # spelled in GENERIC as terms() folds them
    for chinese in ("错误", "报错", "警告", "失败", "异常"):  # error, reported an error, warning, failed, exception
        assert terms(chinese) == [chinese] and chinese in lexical.GENERIC


def test_every_term_is_one_fts5_token_as_written(tmp_path: Path) -> None:
    """The store's FTS5 tokenizer (unicode61) must keep each term whole and unchanged, or its
    vocabulary counts (IDF) and the terms read back from the stored text would disagree."""
    from jiyi.store.sqlite.store import SQLiteStore

    texts = [*(what for what, _ in REAL_ERRORS.values()), *(q for _, q in REAL_ERRORS.values())]
    texts += [
        "naïve İzin ılık Straße ΣΦΆΛΜΑ ὅτι ﬁle ǅ",
        "ملف غير موجود קובץ לא נמצא फ़ाइल नहीं मिली",
        "ไม่พบไฟล์ ファイルが 链接时找不到 한국어",
    ]
    with jiyi.Memory(store=SQLiteStore(tmp_path / "jiyi.db")) as memory:
        writer = memory.session(project="p", session_id="w")
        for i, text in enumerate(texts):
            writer.note(**note(title=f"t{i}", what=text))
    db = sqlite3.connect(tmp_path / "jiyi.db")
    vocabulary = {t for (t,) in db.execute("SELECT term FROM records_vocab")}
    db.close()
    content = note()["content"]
    # As the store derives them (indexing.lexical_index: key lines with the title, no stack frames).
    indexed = [
        lexical_index(f"t{i}", text, content["why"], content["where"], content["learned"])
        for i, text in enumerate(texts)
    ]
    # The mark of text cut into bigrams is no text's term (terms strips its `_`); every other is terms' own.
    ours = {t for title, body in indexed for t in terms(f"{title} {body}".replace(lexical.BIGRAM_TEXT, " "))}
    written = {t for title, body in indexed for t in f"{title} {body}".split()}
    assert ours == written - {lexical.BIGRAM_TEXT}
    assert vocabulary == written


# -- real error texts in other languages (docs/spec.md §4: every language the users write) ------------

# Each: a real message as translated software printed it (the record's `what`) and another real
# occurrence of the same error (the query). Sources: glibc's and coreutils' translated messages
# in users' logs and issue threads, git's German catalogue (po/de.po).
REAL_ERRORS = {
    "ru-enoent": (
        "/home/den/Документы/vscode/RobotMotorsControl/hello_motor.cpp:10:10: fatal error: pigpiod_if2.h: "
        "Нет такого файла или каталога",
        "/usr/bin/env: «sh\r»: Нет такого файла или каталога",
    ),
    "ru-eacces": (
        "ls: невозможно открыть каталог '.': Отказано в доступе",
        "bash: /etc/apt/trusted.gpg.d/openvpn-repo-pkg-keyring.gpg: Отказано в доступе",
    ),
    "de-head": (
        "Sie scheinen HEAD verschoben zu haben. Keine Zurücksetzung, prüfen Sie HEAD.",
        "Sie scheinen HEAD verändert zu haben. Keine Rückspulung, prüfen Sie HEAD.",
    ),
    "de-eacces": (
        "cat: /var/log/icinga2/icinga2.log: Keine Berechtigung",
        "Fehler: Keine Berechtigung, auf die Registry zuzugreifen.",
    ),
    "fr-enoent": (
        "/home/romain/TL/test/base.c:2:21: erreur fatale : bonjour.h : Aucun fichier ou dossier de ce type",
        "rm: impossible de supprimer '/tmp/leases': Aucun fichier ou dossier de ce type",
    ),
    "fr-eacces": ("bash: /bin/tar: Permission non accordée", "-bash: ./date.sh: Permission non accordée"),
    "el-enoent": (
        "Failed to enumerate drm devices (errno 2: Δεν υπάρχει τέτοιο αρχείο ή κατάλογος)",
        "open(“/path/to/.config/libcalc.so”, O_RDONLY) = -1 ENOENT (Δεν υπάρχει τέτοιο αρχείο ή κατάλογος)",
    ),
    "tr-enoent": (
        "ls: '/nonexistent' ögesine erişilemedi: Böyle bir dosya ya da dizin yok",
        "bash: cd: tmp: Böyle bir dosya ya da dizin yok",
    ),
}
# Words of the language only the new terms read (accented or non-Latin), which must be among the
# matched terms: the ASCII words alone found some of these before.
NATIVE_WORDS = {
    "ru-enoent": "каталога",
    "ru-eacces": "отказано",
    "de-head": "prufen",
    "de-eacces": "berechtigung",
    "fr-enoent": "fichier",
    "fr-eacces": "accordee",
    "el-enoent": "αρχειο",
    "tr-enoent": "boyle",
}


@pytest.mark.parametrize("key", list(REAL_ERRORS))
def test_a_real_error_in_another_language_is_found_by_a_query_in_that_language(memory: jiyi.Memory, key: str) -> None:
    writer = memory.session(project="p", session_id="writer")
    for name, (what, _) in REAL_ERRORS.items():
        writer.note(**note(title=name, what=what, why="-", where="-", learned="-"))
    hits = memory.session(project="p", session_id="reader").search(REAL_ERRORS[key][1])
    assert [h.record.title for h in hits][:1] == [key]
    lexical_signal = next(s for s in hits[0].signals if s.name == "lexical")
    assert lexical_signal.strength > 0 and NATIVE_WORDS[key] in lexical_signal.detail.split(",")


def test_the_plain_spelling_finds_the_accented_record_and_back(memory: jiyi.Memory) -> None:
    writer = memory.session(project="p", session_id="writer")
    writer.note(**note(title="fr", what=REAL_ERRORS["fr-eacces"][0], why="-", where="-", learned="-"))
    writer.note(
        **note(title="plain", what="naive datetime compared with an aware one", why="-", where="-", learned="-")
    )
    reader = memory.session(project="p", session_id="reader")
    # One word each, so nothing but the folded spelling can match (VERSION 1 cut `naïve` into `na`, `ve`).
    assert [h.record.title for h in reader.search("accordee")] == ["fr"]
    assert [h.record.title for h in reader.search("naïve")] == ["plain"]


# -- query escaping --------------------------------------------------------------------------


def test_match_expression_quotes_every_term() -> None:
    assert match_expression(["deflate", "链接"]) == '"deflate" OR "链接"'
    assert match_expression(['a"b']) == '"a""b"'
    assert match_expression([]) == ""


@pytest.mark.parametrize("term", ["NEAR", "AND", "NOT", "OR", "*", '"', "a:b", "(x", "^y", "col:*", "a''b"])
def test_match_expression_is_literal_in_fts5(term: str) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES (?)", (f"before {term} after",))
    # Any operator or quote inside a term is searched for as text, never parsed as syntax.
    found = db.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match_expression([term, "before"]),)).fetchone()
    assert found == (1,)


# -- weights and coverage --------------------------------------------------------------------


def test_idf_falls_as_a_term_gets_common() -> None:
    assert idf(1, 100) > idf(10, 100) > idf(50, 100) > idf(100, 100) > 0.0
    assert math.isclose(idf(50, 100), math.log(2.0))


def test_unseen_words_weigh_the_mean_and_unseen_cjk_bigrams_nothing() -> None:
    weights = QueryWeights.of(["deflate", "zlib", "unseen", "块安", "deflate"], {"deflate": 3.0, "zlib": 1.0})
    assert weights.terms == ("deflate", "zlib", "unseen", "块安")
    assert weights.weights == {"deflate": 3.0, "zlib": 1.0, "unseen": 2.0, "块安": 0.0}
    assert weights.total == 6.0
    assert QueryWeights.of(["nothing", "known"], {}).total == 0.0


def test_coverage_is_the_idf_weighted_share_of_the_query() -> None:
    weights = QueryWeights.of(["deflate", "zlib", "symbol"], {"deflate": 4.0, "zlib": 2.0, "symbol": 2.0})
    assert coverage(weights, {"deflate", "other"}) == (0.5, ["deflate"])
    assert coverage(weights, {"zlib", "symbol"}) == (0.5, ["zlib", "symbol"])
    assert coverage(weights, {"deflate", "zlib", "symbol"})[0] == 1.0
    assert coverage(weights, set()) == (0.0, [])
    assert coverage(QueryWeights.of(["x"], {}), {"x"}) == (0.0, [])


def test_generic_words_alone_are_no_evidence() -> None:
    weights = QueryWeights.of(["error", "failed", "deflate"], {"error": 1.0, "failed": 1.0, "deflate": 1.0})
    # The matched words are still named, but their share counts as nothing ...
    assert coverage(weights, {"error", "failed"}) == (0.0, ["error", "failed"])
    # ... until one real word joins them, and then they count too.
    share, matched = coverage(weights, {"error", "failed", "deflate"})
    assert share == 1.0 and matched == ["error", "failed", "deflate"]


def test_function_words_weigh_nothing_in_a_query() -> None:
    # Rare in a store of logs, `i` and `when` would otherwise count as a problem's rarest words.
    idf_of = {"i": 5.0, "when": 4.0, "address": 3.0, "eaddrinuse": 6.0}
    weights = QueryWeights.of(["i", "when", "address", "eaddrinuse"], idf_of)
    assert weights.weights == {"i": 0.0, "when": 0.0, "address": 3.0, "eaddrinuse": 6.0}
    assert weights.full == 9.0
    assert lexical.strength(weights, {"i": 1, "when": 1}, {}) == (0.0, ["i", "when"])
    assert lexical.strength(weights, {"address": 1, "eaddrinuse": 1}, {})[0] == 1.0


def test_a_word_said_again_counts_more_as_in_bm25_up_to_twice_a_single_title_occurrence() -> None:
    weights = QueryWeights.of(["nbconvert", "dependency"], {"nbconvert": 4.0, "dependency": 2.0})
    once = lexical.evidence(weights, {"nbconvert": 1}, {})[0]
    again = lexical.evidence(weights, {"nbconvert": 1}, {"nbconvert": 4})[0]
    often = lexical.evidence(weights, {"nbconvert": 40}, {})[0]
    assert once < again < often < 2 * once
    # A word in the body alone still counts less than in the title, however often it is said there.
    assert lexical.evidence(weights, {}, {"nbconvert": 3})[0] < once
    # Repeats tell records apart past the signal's cap; the strength itself stays at most 1.0.
    assert lexical.strength(weights, {"nbconvert": 3, "dependency": 3}, {})[0] == 1.0


def test_a_word_few_records_hold_counts_in_the_body_nearly_as_in_the_title() -> None:
    total = 5000
    assert lexical.body_weight(1, total) == 1.0
    assert lexical.body_weight(lexical.RARE_BODY_DOCS, total) == lexical.BODY_WEIGHT
    assert lexical.body_weight(400, total) == lexical.BODY_WEIGHT
    assert lexical.body_weight(0, total) == lexical.BODY_WEIGHT  # never indexed: nothing to say
    assert 1.0 > lexical.body_weight(3, total) > lexical.body_weight(10, total) > lexical.BODY_WEIGHT
    # A small store cannot tell a rare word from one few records hold: rarity counts by its size.
    assert lexical.body_weight(1, 3) < lexical.BODY_WEIGHT + 0.01
    assert lexical.body_weight(1, 100) < lexical.body_weight(1, 500) < lexical.body_weight(1, 2000) == 1.0
    assert all(lexical.BODY_WEIGHT <= lexical.body_weight(n, 8) <= 1.0 for n in range(9))
    # In a record's body, a name on two records (`TOCropViewController`) outweighs a word on four
    # hundred that the query weighs the same: its place there says less than its rarity.
    counts = {"tocropviewcontroller": 2, "signing": 400}
    idf_of = {"tocropviewcontroller": 5.0, "signing": 5.0}
    weights = QueryWeights.of(list(counts), idf_of, doc_counts=counts, docs=total)
    rare = lexical.evidence(weights, {}, {"tocropviewcontroller": 1})[0]
    common = lexical.evidence(weights, {}, {"signing": 1})[0]
    titled = lexical.evidence(weights, {"signing": 1}, {})[0]
    assert common < rare <= titled
    # Without the counts every body word counts BODY_WEIGHT, as before.
    plain = QueryWeights.of(list(counts), idf_of)
    assert lexical.evidence(plain, {}, {"tocropviewcontroller": 1})[0] == common


# -- no query text can break the store (docs/spec.md §6) ---------------------------------------------


@pytest.fixture
def memory(store: Store) -> Iterator[jiyi.Memory]:
    """A ``Memory`` over the ``store`` fixture: once on SQLite, once on PostgreSQL."""
    with jiyi.Memory(store=store) as m:
        yield m


# Text an agent might paste: any code point (lone surrogates and controls included), plus the
# pieces of FTS5 and tsquery syntax, CJK and error words, so both halves meet in one query.
_SYNTAX = ['"', "'", "*", "^", ":", "(", ")", "NEAR", "AND", "OR", "NOT", "&", "|", "!", "<->", ":*", "\\", "\x00"]
_WORDS = ["deflate", "zlib", "链接", "找不到", "E0425", "pthread_create", "%", "_", "--", ";", "$1"]
_PIECES = st.sampled_from([*_SYNTAX, *_WORDS])
_ANY_CHARACTER = st.characters(exclude_categories=())  # lone surrogates too: JSON can carry \ud800
_QUERIES = st.lists(st.one_of(st.text(_ANY_CHARACTER, max_size=30), _PIECES), max_size=12).map(" ".join)


def test_random_text_never_raises_through_search(memory: jiyi.Memory) -> None:
    memory.session(project="zlib-port", session_id="writer").note(**ZLIB)
    memory.session(project="zlib-port", session_id="writer").note(**note(title="链接时找不到 zlib", what="链接失败"))
    reader = memory.session(project="zlib-port", session_id="reader")

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(_QUERIES)
    def search(query: str) -> None:
        try:
            hits = reader.search(query)
        except InvalidArgument:
            return  # empty, control characters, too long: docs/spec.md §2's answer, not a breakage
        assert all(h.topical for h in hits)
        # Bad input loses nothing: the records are still there and still found.
        assert reader.search("undefined symbol deflate")[0].record.title == ZLIB["title"]

    search()


def test_a_longer_record_holding_the_same_words_is_a_weaker_match() -> None:
    # BM25's length normalisation, against the query's other candidates: a long record holds some of
    # any query's words by its length alone.
    weights = QueryWeights.of(["deflate", "zlib", "symbol"], {"deflate": 4.0, "zlib": 2.0, "symbol": 2.0})
    body = {"deflate": 1, "zlib": 1}
    short, _ = lexical.strength(weights, {}, body, 0.5)
    usual, _ = lexical.strength(weights, {}, body)
    long, matched = lexical.strength(weights, {}, body, 3.0)
    assert 0.0 < long < usual < short <= 1.0 and matched == ["deflate", "zlib"]
    # A title holding every word is a full match whatever the length.
    assert lexical.strength(weights, {"deflate": 1, "zlib": 1, "symbol": 1}, {}, 3.0)[0] < 1.0
    assert lexical.strength(weights, {"deflate": 1, "zlib": 1, "symbol": 1}, {}, 1.0)[0] == 1.0


def test_relative_length_is_against_the_candidates_mean() -> None:
    assert lexical.relative_length({"a": 10, "b": 30}) == {"a": 0.5, "b": 1.5}
    assert lexical.relative_length({}) == {}
    assert lexical.relative_length({"a": 0}) == {"a": 1.0}


def test_a_word_held_in_another_form_counts_at_a_share_and_says_so() -> None:
    weights = QueryWeights.of(["installing", "pycairo"], {"installing": 3.0, "pycairo": 5.0})
    weights = replace(weights, forms={"installing": ("install", "installed")})
    exact = lexical.evidence(weights, {"installing": 1, "pycairo": 1}, {})
    other = lexical.evidence(weights, {"install": 1, "pycairo": 1}, {})
    neither = lexical.evidence(weights, {"pycairo": 1}, {})
    assert exact[0] > other[0] > neither[0]
    part = (other[0] - neither[0]) / (exact[0] - neither[0])
    assert math.isclose(part, INFLECTION_WEIGHT)
    assert other[1] == ["installing~install", "pycairo"]
    # The word itself, when held, is matched as it is: its forms beside it add nothing.
    assert lexical.evidence(weights, {"installing": 1, "installed": 2, "pycairo": 1}, {}) == exact
    # Only the forms the store held were asked for: a record with another one is not matched by it.
    assert lexical.evidence(weights, {"installs": 1, "pycairo": 1}, {}) == neither
