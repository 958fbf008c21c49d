"""Wall time of one ``jiyi hook claude-code`` event, process start to exit (SPEC §8: ≤ 50 ms).

``python bench/hook_latency.py [--runs 30] [--entry script|module]`` spawns the hook ``--runs`` times
for each kind of event and prints the median and p90, each kind in a store of its own:

- ``PostToolUse``: a tool that succeeded with no failure pending — most events an agent sends;
- ``PostToolUseFailure``: a failure no record matches;
- ``PostToolUseFailure, recalled``: a failure a record matches (``jiyi: [lr_…]`` goes to the agent
  on the first, and the look-up runs on every later one);
- ``PostToolUse, closes loop``: the success after a failure, alternating with that failure (the
  pair's median is reported per event).

``--entry script`` (the default) runs the ``jiyi`` console script beside the interpreter, as an
agent's hook configuration does; ``module`` runs ``python -m jiyi`` (runpy adds ~10 ms). The
source's bytecode is compiled first, as an installed package's is.
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
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"hook misbehaved: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return elapsed


def p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def _event(event: dict[str, object], session: str, project: Path) -> bytes:
    return json.dumps({**event, "session_id": session, "cwd": str(project)}).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--entry", choices=("module", "script"), default="script")
    parser.add_argument("--json", type=Path, default=None, help="also write the medians here (bench/run_all.py)")
    args = parser.parse_args()
    if args.entry == "script":
        command = [str(Path(sys.executable).with_name("jiyi")), "hook", "claude-code"]
    else:
        command = [sys.executable, "-m", "jiyi", "hook", "claude-code"]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).parents[1] / "src")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "zlib-port")
        project.mkdir()

        def env(name: str) -> dict[str, str]:
            return {**os.environ, "JIYI_HOME": str(Path(tmp, name)), "JIYI_CONFIG_DIR": str(Path(tmp, "config"))}

        rows: list[tuple[str, list[float]]] = []
        start = _event({"hook_event_name": "SessionStart", "source": "startup"}, "bench", project)
        for name, event, home in (("PostToolUse", SUCCESS, "ok"), ("PostToolUseFailure", FAILURE, "fail")):
            once(command, start, env(home), tmp)
            payload = _event(event, "bench", project)
            once(command, payload, env(home), tmp)  # warm-up: the compiled patterns are kept
            rows.append((name, [once(command, payload, env(home), tmp) for _ in range(args.runs)]))
        # A record of the failure: the first session's failure, fixed by another command.
        once(command, _event(FAILURE, "fixer", project), env("recall"), tmp)
        once(command, _event(SUCCESS, "fixer", project), env("recall"), tmp)
        payload = _event(FAILURE, "bench", project)
        recalled = once(command, payload, env("recall"), tmp)
        rows.append(
            (
                "PostToolUseFailure, recalled",
                [recalled] + [once(command, payload, env("recall"), tmp) for _ in range(args.runs - 1)],
            )
        )
        pairs: list[float] = []
        for i in range(args.runs):
            session = f"loop{i}"
            once(command, _event(FAILURE, session, project), env("loop"), tmp)
            pairs.append(once(command, _event(SUCCESS, session, project), env("loop"), tmp))
        rows.append(("PostToolUse, closes loop", pairs))
        for name, times in rows:
            print(
                f"{name:<30} median {statistics.median(times) * 1000:6.1f} ms  p90 {p90(times) * 1000:6.1f} ms"
                f"  ({len(times)} runs, {args.entry})"
            )
        baseline = [once([sys.executable, "-c", "pass"], b"", env("ok"), tmp) for _ in range(args.runs)]
        print(f"{'interpreter alone (-c pass)':<30} median {statistics.median(baseline) * 1000:6.1f} ms")
        rows.append(("interpreter alone (-c pass)", baseline))
    if args.json:  # for bench/run_all.py
        found = {name: {"median": statistics.median(t) * 1000, "p90": p90(t) * 1000} for name, t in rows}
        args.json.write_text(json.dumps(found))


if __name__ == "__main__":
    main()
