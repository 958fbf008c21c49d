"""English words for a query's Chinese words (glossary.py): how CC-CEDICT's lines become the table,
what a Chinese word stands for, and the table kept in ``<home>/cache``."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
from collections.abc import Iterator
from pathlib import Path

import pytest

from jiyi.analysis import glossary

# CC-CEDICT's format, lines as the dictionary has them.
LINES = [
    "# CC-CEDICT",
    "證書 证书 [zheng4 shu1] /credentials/certificate/",
    "編譯 编译 [bian1 yi4] /to translate and edit/translator-editor/(computing) to compile (source code)/",
    "代理 代理 [dai4 li3] /to act on behalf of sb in a responsible position/to act as an agent or proxy/surrogate/",
    "合併 合并 [he2 bing4] /to merge/to annex/",
    "合并 合并 [he2 bing4] /variant of 合併|合并[he2 bing4]/",
    "歷史 历史 [li4 shi3] /history/CL:門|门[men2],段[duan4]/",
    "公司 公司 [gong1 si1] /(business) company/firm/corporation/incorporated/",
    "一 一 [yi1] /one/single/a (article)/",
    "百分之百 百分之百 [bai3 fen1 zhi1 bai3] /a hundred percent/",
    "不到 不到 [bu4 dao4] /not to arrive/not reaching/insufficient/less than/",
    "找不到 找不到 [zhao3 bu5 dao4] /can't find/",
    "文件 文件 [wen2 jian4] /document/file/CL:份[fen4]/",
    "資源 资源 [Zi1 yuan2] /Ziyuan county in Guilin 桂林[Gui4 lin2], Guangxi/",
    "資源 资源 [zi1 yuan2] /natural resource (such as water or minerals)/resource (such as manpower or tourism)/",
    "三八 三八 [san1 ba1] /International Women's Day 婦女節|妇女节[Fu4 nu:3 jie2], 8th March/foolish/stupid/",
    "一把手 一把手 [yi1 ba3 shou3] /working hand; member of a work team; participant/the boss/",
    "一級棒 一级棒 [yi1 ji2 bang4] /first-rate/excellent (loanword from Japanese 一番, ichiban)/",
    "七情 七情 [qi1 qing2] /seven emotional states/seven affects of traditional Chinese medical theory and "
    "therapy, namely: joy 喜[xi3], anger 怒[nu4], anxiety 憂|忧[you1], thought 思[si1], grief 悲[bei1], fear "
    "恐[kong3], fright 驚|惊[jing1]/seven relations/",
]


@pytest.fixture
def fresh() -> Iterator[None]:
    """No table or folder left over from another test."""
    glossary.use("")
    glossary.table.cache_clear()
    glossary._kept.cache_clear()
    yield
    glossary.use("")
    getattr(glossary.table, "cache_clear", lambda: None)()  # a test may have put another table there
    glossary._kept.cache_clear()


def test_two_character_words_get_their_first_senses_words_computing_first() -> None:
    table = glossary.build(LINES)
    assert table["证书"] == table["證書"] == ("credentials", "certificate")
    assert table["编译"] == ("compile", "translate", "edit", "translator")  # (computing) goes first
    # Function words and the dictionary's own shorthand (`sb`) go; four words at most.
    assert table["代理"] == ("act", "behalf", "responsible", "position")
    # A variant's cross-reference and a measure word (`CL:`) are no senses.
    assert table["合并"] == ("merge", "annex")
    assert table["历史"] == ("history",)
    assert "一" not in table  # one character: no bigram meets it
    assert table["百分之百"] == ("hundred", "percent")  # longer words are looked up in a query's runs


def test_a_name_and_a_reference_to_another_word_give_no_english_words() -> None:
    table = glossary.build(LINES)
    # An entry of capitalised pinyin is a name (a county), not the word: `资源` is a resource.
    assert table["资源"] == ("natural", "resource")
    # Another word's Chinese and pinyin (`婦女節|妇女节[Fu4 nu:3 jie2]`) are no English words.
    assert table["三八"] == ("international", "women", "day", "8th")
    assert all(word.isascii() for words in table.values() for word in words)


def test_a_longer_word_takes_the_place_of_the_bigrams_inside_it(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glossary, "table", lambda: glossary.build(LINES))
    bigrams = ["找不", "不到", "到文", "文件"]  # 找不到文件: cannot find the file
    before = glossary.english(bigrams)
    assert before["insufficient"] == (pytest.approx(3**-0.5), "不到")  # 不到 alone: not reaching
    found = glossary.english(bigrams, ["找不到文件"])
    assert found["find"] == (1.0, "找不到")
    assert found["document"] == (1.0, "文件")  # a bigram outside it keeps its words (`file`: too common)
    assert not {"arrive", "reaching", "insufficient"} & set(found)
    # A run's words of three and four characters are looked up; none found leaves the bigrams as they were.
    assert glossary.english(bigrams, ["到文件"]) == before


def test_a_word_of_one_sense_counts_whole_an_ambiguous_one_less(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glossary, "table", lambda: glossary.build(LINES))  # no folder: the whole table
    found = glossary.english(["合并", "无关", "历史", "并无"])
    assert found["history"] == (1.0, "历史")
    assert found["merge"] == (pytest.approx(2**-0.5), "合并")
    assert set(found) == {"merge", "annex", "history"}  # a bigram that is no word stands for nothing


def test_the_dictionary_gives_technical_words_and_is_kept_in_the_folder(fresh: None, tmp_path: Path) -> None:
    glossary.use(str(tmp_path))
    found = glossary.lookup(["证书", "代理", "编译", "并无"])
    assert "certificate" in found["证书"] and "proxy" in found["代理"] and found["编译"][0] == "compile"
    assert "并无" not in found or found["并无"]  # a bigram the dictionary lacks has no entry
    kept = list(tmp_path.glob("glossary-*.sqlite"))
    assert len(kept) == 1
    # A later process looks words up in the kept table and never reads the dictionary.
    glossary._kept.cache_clear()
    glossary.table.cache_clear()
    reading = glossary.build
    try:
        glossary.build = None  # type: ignore[assignment]
        assert glossary.lookup(["证书"]) == {"证书": found["证书"]}
    finally:
        glossary.build = reading


def test_a_long_text_is_looked_up_in_batches_under_sqlites_bound_on_variables(fresh: None, tmp_path: Path) -> None:
    # A Chinese text's three- and four-character pieces run to twice its length: bound in one
    # statement, they failed past SQLite's bound on a statement's variables (999 before 3.32) and the
    # text got no glosses at all. Here the bound of such a build, on the kept table's connection.
    import sqlite3

    glossary.use(str(tmp_path))
    kept = glossary._kept(str(tmp_path))
    assert kept is not None
    kept.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    filler = [f"\u4e00{chr(0x4E00 + i)}\u4e00" for i in range(3000)]
    found = glossary.lookup([*filler, "证书", "代理"])
    assert "certificate" in found["证书"] and "proxy" in found["代理"]


def test_an_unreadable_kept_table_is_written_again_from_the_dictionary(fresh: None, tmp_path: Path) -> None:
    glossary.use(str(tmp_path))
    glossary.lookup(["证书"])
    kept = next(tmp_path.glob("glossary-*.sqlite"))
    kept.write_bytes(b"\x00 not a database")
    glossary._kept.cache_clear()
    assert "certificate" in glossary.lookup(["证书"])["证书"]
    assert kept.read_bytes()[:15] == b"SQLite format 3"  # written again


def test_where_nothing_can_be_kept_the_process_reads_the_whole_table(fresh: None, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    glossary.use(str(blocked))
    assert "certificate" in glossary.lookup(["证书"])["证书"]


def test_without_the_dictionary_there_are_no_glosses(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    def unimportable(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(importlib.resources, "files", unimportable)
    glossary.use("")
    assert glossary.table() == {}
    assert glossary.english(["证书"]) == {}
