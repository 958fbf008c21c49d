"""Wall time of one ``jiyi hook claude-code`` event, process start to exit (docs/spec.md §8: ≤ 50 ms).

``python bench/hook_latency.py [--runs 30] [--entry script|module]`` spawns the hook ``--runs`` times
for each kind of event and prints the median and p90, each kind in a store of its own:

- ``PostToolUse``: a tool that succeeded with no failure pending — most events an agent sends;
- ``PostToolUseFailure``: a failure no record matches;
- ``PostToolUseFailure, recalled``: a failure a record matches (``jiyi: [lr_…]`` goes to the agent
  on the first, and the look-up runs on every later one);
- ``PostToolUse, closes loop``: the success after a failure, alternating with that failure (the
  success is timed); the automatic record it queues is written by a detached finisher, and
  ``its record stored`` times the success's start until the record is in the store;
- ``PostToolUse, with config.toml``: the first kind with a user settings file present, which the
  hook must parse (``config.load``) rather than take the defaults.

``--git`` makes the project a git checkout with one commit, as an agent's project usually is: a
failure with a command then also keeps where it failed (``git_head.failure_point``, for the
automatic record's reproduction), which the plain folder skips.

``--entry script`` (the default) runs the ``jiyi`` console script beside the interpreter, as an
agent's hook configuration does; ``module`` runs ``python -m jiyi`` (runpy adds ~10 ms). The
source's bytecode is compiled first, as an installed package's is.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sqlite3
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


class Run(float):
    """The wall time of one run, with the CPU time (user + system) the process used: on a loaded
    machine the CPU time moves far less than the wall time, so both are printed."""

    cpu: float


def once(command: list[str], payload: bytes, env: dict[str, str], cwd: str) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, input=payload, capture_output=True, env=env, cwd=cwd, check=False)
    elapsed = Run(time.perf_counter() - started)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"hook misbehaved: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return elapsed


def _written(store: Path, started: float) -> Run:
    """Seconds from ``started`` until the store's queue of automatic records is empty (its
    finisher is not this process's child: no CPU time)."""
    while True:
        with sqlite3.connect(store, timeout=5) as db:
            try:
                left = db.execute("SELECT count(*) FROM auto_record_queue").fetchone()[0]
            except sqlite3.OperationalError:  # a jiyi that writes the record in the hook itself
                left = 0
        db.close()
        if not left:
            break
        time.sleep(0.002)
    landed = Run(time.perf_counter() - started)
    landed.cpu = float("nan")
    return landed


def p90(times: list[Run]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def _event(event: dict[str, object], session: str, project: Path) -> bytes:
    return json.dumps({**event, "session_id": session, "cwd": str(project)}).encode()


def _git_checkout(folder: Path) -> None:
    (folder / "main.c").write_text("int main(void) { return 0; }\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "main.c"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@jiyi.invalid", *args],
                       cwd=folder, env=env, check=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--entry", choices=("module", "script"), default="script")
    parser.add_argument("--json", type=Path, default=None, help="also write the medians here (bench/run_all.py)")
    parser.add_argument("--git", action="store_true", help="the project is a git checkout with one commit")
    args = parser.parse_args()
    if args.entry == "script":
        command = [str(Path(sys.executable).with_name("jiyi")), "hook", "claude-code"]
    else:
        command = [sys.executable, "-m", "jiyi", "hook", "claude-code"]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).parents[1] / "src")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "zlib-port")
        project.mkdir()
        if args.git:
            _git_checkout(project)

        def env(name: str, config: str = "config") -> dict[str, str]:
            return {**os.environ, "JIYI_HOME": str(Path(tmp, name)), "JIYI_CONFIG_DIR": str(Path(tmp, config))}

        # A settings file as a user keeps one: the defaults spelled out, nothing that changes the work.
        Path(tmp, "config-file").mkdir()
        Path(tmp, "config-file", "config.toml").write_text('[jiyi]\nread_budget = 20000\nlocale = "zh"\n')

        rows: list[tuple[str, list[Run]]] = []
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
        pairs: list[Run] = []
        landed: list[Run] = []
        for i in range(args.runs):
            session = f"loop{i}"
            once(command, _event(FAILURE, session, project), env("loop"), tmp)
            started = time.perf_counter()
            pairs.append(once(command, _event(SUCCESS, session, project), env("loop"), tmp))
            # The automatic record is written by a detached finisher after the hook returned: wait
            # for it (as the agent's next call would come later), and time when it landed.
            landed.append(_written(Path(tmp, "loop", "jiyi.db"), started))
        rows.append(("PostToolUse, closes loop", pairs))
        rows.append(("  its record stored (deferred)", landed))
        configured = env("configured", "config-file")
        once(command, start, configured, tmp)
        payload = _event(SUCCESS, "bench", project)
        once(command, payload, configured, tmp)
        rows.append(
            ("PostToolUse, with config.toml", [once(command, payload, configured, tmp) for _ in range(args.runs)])
        )
        rows.append(("interpreter alone (-c pass)", [once([sys.executable, "-c", "pass"], b"", env("ok"), tmp)
                                                      for _ in range(args.runs)]))  # fmt: skip
        for name, times in rows:
            cpu = statistics.median(t.cpu for t in times)  # nan for a process not waited for
            print(
                f"{name:<30} median {statistics.median(times) * 1000:6.1f} ms  p90 {p90(times) * 1000:6.1f} ms"
                f"  cpu {cpu * 1000:6.1f} ms  ({len(times)} runs, {args.entry})"
            )
    if args.json:  # for bench/run_all.py
        found = {
            name: {
                "median": statistics.median(t) * 1000,
                "p90": p90(t) * 1000,
                "cpu": None if math.isnan(t[0].cpu) else statistics.median(r.cpu for r in t) * 1000,
            }
            for name, t in rows
        }
        args.json.write_text(json.dumps(found))


if __name__ == "__main__":
    main()
