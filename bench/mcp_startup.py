"""Time from spawning ``jiyi mcp`` to the answer of ``tools/list`` (SPEC §8: ≤ 1 s).

``python bench/mcp_startup.py [--runs 10]`` prints the median and the slowest run.
"""

from __future__ import annotations

import argparse
import json
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
    with tempfile.TemporaryDirectory() as home:
        times = [anyio.run(once, home) for _ in range(args.runs)]
    print(f"tools/list after spawn: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps({"median": statistics.median(times) * 1000, "max": max(times) * 1000}))


if __name__ == "__main__":
    main()
