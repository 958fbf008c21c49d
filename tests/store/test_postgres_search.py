"""PostgreSQL: reading the query's terms out of a record's vector text (``search._some_fields``), as
ranking asks for them, must count what reading the whole vector counts (``search._fields``)."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg")

from jiyi.store.base import Indexed
from jiyi.store.postgres.search import _fields, _some_fields, lexeme, tsvector_text

TITLE = "deflate missing it's a\\b deflate"
BODY = "ld: undefined deflate inflate x:y it's 链接 链接 报错"


def _asked(terms: list[str]) -> dict[str, str]:
    return {lexeme(t): t for t in terms}


@pytest.mark.parametrize("terms", [["deflate", "inflate", "it's", "a\\b", "链接"], ["never", "'"], []])
def test_the_asked_terms_count_as_in_the_whole_vector(terms: list[str]) -> None:
    text = tsvector_text(" ".join(TITLE.split()), " ".join(BODY.split()))
    whole = _fields(text, ["line"])
    some = _some_fields(text, ["line"], _asked(terms))
    assert some.title == {t: n for t, n in whole.title.items() if t in terms}
    assert some.body == {t: n for t, n in whole.body.items() if t in terms}
    assert some.length == whole.length == len(TITLE.split()) + len(BODY.split())
    assert some.normalized == ("line",)


def test_words_said_one_after_the_other_read_alike_from_a_vector_and_from_the_text() -> None:
    # SQLite's Indexed answers from the indexed text, PostgreSQL's from the positions of the asked
    # terms in its vector: ranking's phrase share (shapes.phrase_share) must not differ by backend.
    title, body = " ".join(TITLE.split()), " ".join(BODY.split())
    text = tsvector_text(title, body)
    words = ["deflate", "missing", "it's", "a\\b", "ld:", "undefined", "inflate", "链接", "报错", "never"]
    sqlite = Indexed.of(title, body, [])
    for read in (_fields(text, []), _some_fields(text, [], _asked(words))):
        for first in words:
            for second in words:
                assert read.adjacent(first, second) == sqlite.adjacent(first, second), (first, second)
    assert sqlite.adjacent("deflate", "missing") and sqlite.adjacent("deflate", "ld:")  # the title runs on
    assert sqlite.adjacent("链接", "链接") and not sqlite.adjacent("missing", "deflate")


def test_a_vector_with_an_entry_of_no_positions_is_still_read() -> None:
    # PostgreSQL prints a lexeme without positions bare (strip(), or a vector written by other means).
    text = "'deflate':1A,4 'inflate' 'it''s':2,3A"
    some = _some_fields(text, [], _asked(["deflate", "inflate", "it's", "x"]))
    assert some.title == {"deflate": 1, "it's": 1}
    assert some.body == {"deflate": 1, "inflate": 1, "it's": 1}
    assert _some_fields("", [], _asked(["deflate"])).length == 0


@pytest.mark.parametrize(
    "text",
    [
        "'a b':1 'deflate':2A",  # a lexeme holding a space
        "'x'':y':1,2 'deflate':3A 'z'",  # one holding a quote and a colon, one without positions
        "'deflate':1A 'it''s'",  # the last without positions
    ],
)
def test_a_vector_that_does_not_cut_into_entries_is_read_lexeme_by_lexeme(text: str) -> None:
    whole = _fields(text, [])
    some = _some_fields(text, [], _asked(["deflate", "x':y", "a b", "it's", "z"]))
    assert (some.title, some.body) == (whole.title, whole.body)
