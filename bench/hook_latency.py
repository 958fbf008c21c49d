"""Wall time of one ``jiyi hook claude-code`` event, process start to exit (SPEC §8: ≤ 50 ms).

``python bench/hook_latency.py [--runs 20] [--entry module|script]`` spawns the hook for a
``PostToolUseFailure`` and a ``PostToolUse`` event and prints the median and p90 of each, once with
the environment as it is and once with ``PYTHONDONTWRITEBYTECODE`` unset (so cached bytecode is
written and used). ``--entry script`` runs the ``jiyi`` console script beside the interpreter, as
an agent's hook configuration does; ``module`` runs ``python -m jiyi``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAILURE = {
    "hook_event_name": "PostToolUseFailure",
    "tool_name": "Bash",
    "tool_input": {"command": "cc main.o -o app"},
    "tool_use_id": "toolu_bench",
    "error": 'Exit code 1\nUndefined symbols for architecture arm64:\n  "_deflate", referenced from:\n'
    "      _compress_chunk in main.o\nld: symbol(s) not found for architecture arm64",
    "is_interrupt": False,
}
SUCCESS = {
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "cc main.o -lz -o app"},
    "tool_use_id": "toolu_bench2",
    "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
}


def once(command: list[str], payload: bytes, env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=payload, capture_output=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or done.stdout or done.stderr:
        raise SystemExit(f"hook misbehaved: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return elapsed


def p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--entry", choices=("module", "script"), default="module")
    args = parser.parse_args()
    if args.entry == "script":
        command = [str(Path(sys.executable).with_name("jiyi")), "hook", "claude-code"]
    else:
        command = [sys.executable, "-m", "jiyi", "hook", "claude-code"]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "zlib-port")
        project.mkdir()
        base = {**os.environ, "JIYI_HOME": str(Path(tmp, "home")), "JIYI_CONFIG_DIR": str(Path(tmp, "config"))}
        writing = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
        label = f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}"
        for mode, env in ((f"as set ({label})", base), ("PYTHONDONTWRITEBYTECODE unset", writing)):
            for name, event in (("PostToolUseFailure", FAILURE), ("PostToolUse", SUCCESS)):
                payload = json.dumps({**event, "session_id": "bench", "cwd": str(project)}).encode()
                once(command, payload, env, tmp)  # warm-up: creates the store, writes bytecode if allowed
                times = [once(command, payload, env, tmp) for _ in range(args.runs)]
                print(
                    f"{mode:<40} {name:<19} median {statistics.median(times) * 1000:6.1f} ms"
                    f"  p90 {p90(times) * 1000:6.1f} ms  ({args.runs} runs, {args.entry})"
                )
        baseline = [once([sys.executable, "-c", "pass"], b"", base, tmp) for _ in range(args.runs)]
        print(f"{'interpreter alone (python -c pass)':<60} median {statistics.median(baseline) * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
