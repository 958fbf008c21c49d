"""The retrieval benchmark's data keeps the rules bench/data/README.md states for it, in the sets
measured and in those waiting in ``next/``: a cluster is one cause met in at least three threads, a
thread belongs to one cluster, look-alikes name each other, and a question does not come from the
thread whose text the store holds for its cluster (from set S on; the older sets' exceptions are
counted, not grown)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"
PLACES = (DATA, DATA / "next")
# The first set gathered under the rule that no question comes from the thread of its cluster's
# stored occurrence (bench/data/README.md, set S); the development set and sets N to R hold 186 such
# questions, gathered before it.
SAME_THREAD_RULE_FROM = 4100
SAME_THREAD_BEFORE = 186
# What an occurrence's os may say; bench/retrieval.py's os_fact makes them jiyi's facts.
OS_LABELS = ("linux", "windows", "macos", "darwin", "unknown")


def lines(pattern: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for place in PLACES:
        for path in sorted(place.glob(pattern)):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    found.append((f"{path.parent.name}/{path.name}", json.loads(line)))
    return found


def number(cluster: str) -> int:
    m = re.fullmatch(r"c([0-9]+)", cluster)
    assert m is not None, cluster
    return int(m.group(1))


def source(item: dict[str, Any]) -> str:
    return str(item.get("source") or "").rstrip("/")


@pytest.fixture(scope="module")
def clusters() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for where, c in lines("clusters*.jsonl"):
        assert c["id"] not in found, f"{c['id']} twice ({where})"
        found[c["id"]] = c
    return found


def test_every_cluster_is_one_cause_met_in_at_least_three_threads_of_its_own(
    clusters: dict[str, dict[str, Any]],
) -> None:
    assert len(clusters) > 2500
    owner: dict[str, str] = {}
    for cid, c in clusters.items():
        occurrences = c["occurrences"]
        assert len(occurrences) >= 3, cid
        for o in occurrences:
            assert o["text"].strip(), cid
            assert o.get("os") in (*OS_LABELS, None), cid
            s = source(o)
            assert s.startswith(("https://", "http://")), cid
            assert owner.setdefault(s, cid) == cid, f"{s} in {owner[s]} and {cid}"
        assert len({source(o) for o in occurrences}) == len(occurrences), cid


def test_look_alikes_name_each_other(clusters: dict[str, dict[str, Any]]) -> None:
    for cid, c in clusters.items():
        for other in c.get("hard_negative_of") or []:
            assert other in clusters, (cid, other)
            assert cid in (clusters[other].get("hard_negative_of") or []), (cid, other)


def test_questions_name_a_known_cluster_and_not_the_thread_the_store_holds(
    clusters: dict[str, dict[str, Any]],
) -> None:
    same_thread = []
    for where, q in lines("queries*.jsonl") + lines("nl_queries.jsonl"):
        assert q["cluster"] in clusters, (where, q["cluster"])
        assert q.get("kind", "nl") in ("nl", "zh", "mixed"), where
        assert q["query"].strip(), where
        stored = source(clusters[q["cluster"]]["occurrences"][0])
        if source(q) and source(q) == stored:
            same_thread.append(q["cluster"])
    assert all(number(c) < SAME_THREAD_RULE_FROM for c in same_thread), sorted(
        c for c in same_thread if number(c) >= SAME_THREAD_RULE_FROM
    )
    assert len(same_thread) <= SAME_THREAD_BEFORE
