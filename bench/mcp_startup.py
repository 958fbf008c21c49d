"""Time from spawning ``jiyi mcp`` to the answer of ``tools/list`` (docs/spec.md §8: ≤ 1 s).

``python bench/mcp_startup.py [--runs 10]`` prints the median and the slowest run, and the median
CPU time of the server process: on a machine shared with other work the wall time follows the load,
the CPU time far less, so it tells a slower start from a busier machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters


async def once(home: str) -> float:
    params = StdioServerParameters(command=sys.executable, args=["-m", "jiyi", "mcp"], env={"JIYI_HOME": home})
    started = time.perf_counter()
    async with Client(params) as client:
        await client.list_tools()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None, help="also write the times here (bench/run_all.py)")
    args = parser.parse_args()
    times: list[float] = []
    cpu: list[float] = []  # of the server process, start to exit (its shutdown included)
    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(anyio.run(once, home))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    median, slowest, cpu_median = statistics.median(times) * 1000, max(times) * 1000, statistics.median(cpu) * 1000
    print(
        f"tools/list after spawn: median {median:.0f} ms, max {slowest:.0f} ms (server CPU median {cpu_median:.0f} ms)"
    )
    if args.json:
        args.json.write_text(json.dumps({"median": median, "max": slowest, "cpu_median": cpu_median}))


if __name__ == "__main__":
    main()
