"""Every benchmark in one command, one table: ``python bench/run_all.py [--quick]``.

Runs, each in its own process (its own ``JIYI_HOME`` under a temporary folder, deleted after):

- ``retrieval.py``: jiyi, plain FTS5 BM25 and all-MiniLM-L6-v2 embeddings side by side (the
  embeddings are skipped with a message when the ``bench`` extra is not installed);
- ``cjk.py``: Chinese and mixed queries, CJK bigrams against FTS5 trigram and jieba;
- ``scale.py``: ``memory_search`` p50/p99 and the raw FTS5 query at 10 000, 100 000 and 1 000 000
  records (``--quick``: 10 000 and 100 000), with rich progress while the stores are built;
- ``hook_latency.py``: one hook event, process start to exit;
- ``mcp_startup.py``: spawning ``jiyi mcp`` until ``tools/list`` answers.

Each prints its own detail while it runs; the summary table with the targets (issue 3, docs/spec.md §8)
comes last. ``--home DIR`` keeps the scale stores there for a rerun (they take ~20 minutes and
~2.3 GB at 1 000 000 records); without it they are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).parent
console = Console(width=170)


def run(script: str, out: Path, *args: str) -> Any:
    console.rule(f"[bold]{script} {' '.join(args)}")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(out)], check=False)
    console.print(f"{script}: {time.perf_counter() - started:.0f} s, exit {done.returncode}")
    if done.returncode != 0 or not out.exists():
        return None
    return json.loads(out.read_text())


def mark(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "[red]missed[/red]")


def pct(share: str) -> float:
    # "91/91 (100.0%)" -> 100.0
    n, d = share.split(" ")[0].split("/")
    return 100 * int(n) / int(d) if int(d) else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="scale at 10 000 and 100 000 only, fewer repeats")
    parser.add_argument("--home", type=Path, default=None, help="keep the scale stores here (reused by a rerun)")
    parser.add_argument("--distractors", type=int, default=4000)
    args = parser.parse_args()
    sizes = "10000,100000" if args.quick else "10000,100000,1000000"
    with tempfile.TemporaryDirectory(prefix="jiyi-run-all-") as tmp:
        out = Path(tmp)
        home = args.home or out / "scale"
        retrieval = run(
            "retrieval.py", out / "retrieval.json", "--distractors", str(args.distractors), "--closest", "0"
        )
        cjk = run("cjk.py", out / "cjk.json", "--distractors", str(args.distractors))
        scale = run(
            "scale.py", out / "scale.json", "--sizes", sizes, "--home", str(home),
            "--repeat", "3" if args.quick else "5", "--notes", "50" if args.quick else "200",
        )  # fmt: skip
        hook = run("hook_latency.py", out / "hook.json", "--runs", "10" if args.quick else "20")
        mcp = run("mcp_startup.py", out / "mcp.json", "--runs", "5" if args.quick else "10")

    table = Table(title="jiyi benchmarks" + (" (--quick)" if args.quick else ""))
    for col in ("benchmark", "figure", "jiyi", "BM25 (FTS5)", "MiniLM-L6", "target", "verdict"):
        table.add_column(col, justify="left" if col in ("benchmark", "figure", "target", "verdict") else "right")
    if retrieval:
        s = retrieval["summary"]
        systems = retrieval["systems"]
        names = list(systems)
        jiyi, others = systems[names[0]], [systems[n] for n in names[1:] if systems[n]]
        checks = {
            "recurring top-1": (
                "≥ 95 %, ahead of both",
                lambda v: pct(v) >= 95 and all(pct(v) > pct(o["recurring top-1"]) for o in others),
            ),
            "MRR@5": ("ahead of both", lambda v: all(float(v) > float(o["MRR@5"]) for o in others)),
            "look-alike confusion": ("≤ 2 %", lambda v: pct(v) <= 2),
            "natural-language top-1": ("≥ 80 %", lambda v: pct(v) >= 80),
            "p50 query ms": ("", None),
        }
        for n, (key, (target, ok)) in enumerate(checks.items()):
            cells = [systems[name][key] if systems[name] else "skipped" for name in names]
            label = f"retrieval: {s['records']:,} records, {s['recurring']}+{s['nl']} queries" if n == 0 else ""
            table.add_row(label, key, *cells, target, mark(ok(jiyi[key]) if ok and jiyi else None))
        for name, why in retrieval["skipped"].items():
            if why:
                console.print(f"[yellow]{name}: {why}[/yellow]")
    else:
        table.add_row("retrieval", "failed", "", "", "", "", "")
    if cjk:
        for n, (name, m) in enumerate(cjk.items()):
            value = "skipped" if m is None else (
                f"top-1 {m['top1']} (zh {m['zh_top1']}), MRR {m['mrr']}, {m['index_kb']:,.0f} KB, "
                f"{m['p50_ms']:.2f} ms, start-up {m['startup_ms']:.0f} ms"
            )  # fmt: skip
            table.add_row("Chinese / mixed queries" if n == 0 else "", name, value, "", "", "", "")
    if scale:
        for r in scale:
            n = r["records"]
            p50_target = 30.0 if n >= 1_000_000 else 5.0
            p99_target = 25.0 if n < 1_000_000 else None
            ok = r["search_p50"] <= p50_target and (p99_target is None or r["search_p99"] <= p99_target)
            target = f"p50 ≤ {p50_target:.0f}" + (f", p99 ≤ {p99_target:.0f}" if p99_target else "")
            search = f"{r['search_p50']:.2f} / {r['search_p99']:.2f}"
            raw = f"{r['raw_p50']:.1f} / {r['raw_p99']:.1f}"
            table.add_row(f"scale: {n:,} records", "search p50 / p99 ms", search, raw, "", target, mark(ok))
            table.add_row("", "right first · notes/s · MB", f"{r['first']} · {r['notes_rate']:.0f} · {r['mb']:.0f}",
                          f"raw {r['raw_p50'] / r['search_p50']:.0f}× slower", "", "", "")  # fmt: skip
    if hook:
        for n, (name, m) in enumerate(hook.items()):
            # The interpreter is the calibration; a deferred record is written after the hook exited.
            target = "" if name.startswith("interpreter") or "deferred" in name else "≤ 50 ms"
            table.add_row("hook (process start → exit)" if n == 0 else "", name, f"{m['median']:.1f} ms", "", "",
                          target, mark(m["median"] <= 50 if target else None))  # fmt: skip
    if mcp:
        table.add_row("MCP start-up", "spawn → tools/list, median / max", f"{mcp['median']:.0f} / {mcp['max']:.0f} ms",
                      "", "", "≤ 1 000 ms", mark(mcp["median"] <= 1000))  # fmt: skip
    console.rule("[bold]summary")
    console.print(table)


if __name__ == "__main__":
    main()
