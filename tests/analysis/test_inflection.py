"""The other English inflections of a query's words (analysis/inflection.py): what ``forms`` makes
of a word, and what it leaves alone."""

from __future__ import annotations

import pytest

from jiyi.analysis.inflection import forms


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("installing", {"install", "installs", "installed"}),
        ("crashes", {"crash", "crashed", "crashing"}),
        ("parsed", {"parse", "parses", "parsing"}),
        ("copied", {"copy", "copies", "copying"}),
        ("mapped", {"map", "maps", "mapping"}),
        ("dependencies", {"dependency"}),
        ("cache", {"caches", "cached", "caching"}),
    ],
)
def test_a_word_gets_its_regular_inflections(word: str, expected: set[str]) -> None:
    made = forms(word)
    assert expected <= set(made)
    assert word not in made
    assert len(made) == len(set(made))


@pytest.mark.parametrize("word", ["npm", "go", "v8", "cuda11", "Install", "pthread_create", "错误", "ошибка"])
def test_short_words_identifiers_and_other_scripts_have_none(word: str) -> None:
    assert forms(word) == ()


def test_a_double_s_is_not_a_plural() -> None:
    # `address` is no plural of `addres`; `process` none of `proces`.
    assert "addres" not in forms("address") and "proces" not in forms("process")
    assert {"addressed", "addresses"} <= set(forms("address"))


def test_forms_are_spelled_by_the_rules_of_english() -> None:
    # A silent e drops before -ing and takes -d; a sibilant takes -es; a consonant's y turns to ie.
    assert set(forms("parse")) == {"parses", "parsed", "parsing"}
    assert set(forms("crash")) == {"crashes", "crashed", "crashing"}
    assert set(forms("copy")) == {"copies", "copied", "copying"}
    # A short word ending consonant, vowel, consonant may double its last letter.
    assert {"committed", "committing"} <= set(forms("commit"))
    # A word that looks inflected may be one of its own: it keeps its plural.
    assert "strings" in forms("string") and "statuses" in forms("status")
