"""bench/retrieval.py's measure of the data (``indistinct``): a recurring query counts when its words
tell its record from no look-alike's record, and only then."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import retrieval  # noqa: E402  (bench/ is not a package: run as a script, it is on sys.path)

DOCS = [
    retrieval.Doc(None, "a distractor", "ValueError: bad value", "check the value"),
    retrieval.Doc("c1", "pip fails", "No module named 'yaml'", "install pyyaml", why="not installed"),
    retrieval.Doc("c2", "pip fails", "No module named 'yaml'", "run the venv's python", why="another interpreter"),
    retrieval.Doc("c3", "import fails", "No module named 'cv2'", "install opencv-python-headless"),
]
HARD = {"c1": {"c2"}, "c2": {"c1"}}


def query(kind: str, cluster: str, text: str) -> retrieval.Query:
    return retrieval.Query(kind, cluster, f"{kind}:{cluster}:{text}", text, None)


def test_a_query_holding_only_what_both_look_alikes_hold_is_indistinct() -> None:
    q = query("recurring", "c1", "No module named 'yaml'")
    assert retrieval.indistinct([q], DOCS, HARD) == {q.label}


def test_a_word_only_its_own_record_holds_tells_it_apart() -> None:
    q = query("recurring", "c2", "No module named 'yaml' (running the venv interpreter)")
    assert retrieval.indistinct([q], DOCS, HARD) == set()


def test_only_recurring_queries_of_clusters_with_look_alikes_count() -> None:
    questions = [query("nl", "c1", "No module named 'yaml'"), query("recurring", "c3", "No module named 'cv2'")]
    assert retrieval.indistinct(questions, DOCS, HARD) == set()


def test_told_apart_counts_only_the_recurring_queries_words_can_tell_apart() -> None:
    alike = query("recurring", "c1", "No module named 'yaml'")  # indistinct: left out
    apart = query("recurring", "c2", "No module named 'yaml' (running the venv interpreter)")
    confused = query("recurring", "c1", "No module named 'yaml' after pip install pyyaml")
    other = query("nl", "c3", "cv2 import fails")  # not recurring: left out
    questions = [alike, apart, confused, other]
    assert retrieval.indistinct(questions, DOCS, HARD) == {alike.label}
    ranked = [[1], [2], [2], [3]]  # doc indexes best first: c1, c2, c2 (c1's look-alike), c3
    result = retrieval.Result("jiyi", ranked=ranked)
    assert retrieval.told_apart(result, questions, DOCS, HARD, {alike.label}, "tune") == (1, 1, 2)
    assert retrieval.told_apart(result, questions, DOCS, HARD, {alike.label}, "test") == (0, 0, 0)
