"""Automatic records on realistic agent sessions (docs/spec.md §5; §8: ≥ 95 % precision, ≥ 85 % recall).

``python bench/capture.py [--baseline REF] [--split tune|test|all] [--json] [--limit N] [--details]``

Each session of ``bench/data/capture_sessions.jsonl`` (see its README) is fed event by event to
``python -m jiyi hook <agent>`` of two trees in one run: this working tree's ``src/`` (row ``new``)
and a baseline commit's (a ``git worktree`` in a temporary folder, removed at the end). Per session
and tree: a fresh git checkout as cwd, a fresh ``JIYI_HOME``, an empty ``XDG_CONFIG_HOME``; then
``jiyi hook --finish`` and ``jiyi export``. The automatic records (origin ``local_auto``, topic
``auto/…``) are judged here, without jiyi's code: a record matches an expected one when all its
``fix`` strings are in title + where + learned + fix command (whitespace collapsed), one-to-one and
greedy; precision = matched / written, recall = matched / expected; read-only fixes, bogus records
(in sessions expecting none), flaky sessions caught (``flaky_failures``), titles holding the key
error line, and each hook process's wall time (median, p95).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "capture_sessions.jsonl"
BASELINE = "7008f5e27ec518bdc9c379ec719369793e54063d"
PLACEHOLDER = "{cwd}"
Doc = dict[str, Any]
# A command is read-only when every part of it (split at |, &&, ||, ;) starts with one of these
# words or word sequences, or has a version/help argument.
READ_ONLY = {"ls", "cat", "head", "tail", "less", "grep", "rg", "find", "which", "env", "echo", "pwd", "wc", "id"}
READ_ONLY_PREFIXES = [
    tuple(words.split())
    for words in "git status,git log,git diff,git show,git remote,pip show,pip list,pip freeze,pip3 show,pip3 list,"
    "npm ls,npm view,npm config get,go env,gem list,sed -n,docker info,docker ps,docker images,docker image inspect,"
    "uname".split(",")
]
VERSION_ARGS = {"--version", "-V", "--help", "-version"}
EDIT_TOOLS = {"Edit", "MultiEdit", "Read", "replace", "read_file"}
COLUMNS = (
    "sessions expected written correct precision recall read_only_fixes bogus flaky_caught titles_right "
    "hook_median_ms hook_p95_ms"
).split()


def read_only(command: str) -> bool:
    parts = [part for part in re.split(r"\|\||&&|[|;]", command) if part.strip()]
    return bool(parts) and all(_read_only_part(part) for part in parts)


def _read_only_part(command: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return False
    words[0] = os.path.basename(words[0])
    if words[0] in READ_ONLY or any(tuple(words[: len(p)]) == p for p in READ_ONLY_PREFIXES):
        return True
    return any(word in VERSION_ARGS for word in words[1:])


def flat(text: str) -> str:
    return " ".join(text.split())


def fix_command(record: Doc) -> str:
    fix = record.get("fix") or {}
    if fix.get("command"):
        return str(fix["command"])
    title = str(record.get("title") or "")
    return title.split("fixed by ", 1)[1] if "fixed by " in title else ""


def record_text(record: Doc) -> str:
    fields = (record.get("title"), record.get("where"), record.get("learned"), (record.get("fix") or {}).get("command"))
    return flat(" ".join(str(part or "") for part in fields))


def matches(expected: list[Doc], records: list[Doc]) -> list[tuple[Doc, Doc]]:
    """Greedy one-to-one pairs (expected, record) whose fix strings are all in the record's text."""
    free, pairs = list(records), []
    for want in expected:
        found = next((r for r in free if all(flat(part) in record_text(r) for part in want["fix"])), None)
        if found is not None:
            pairs.append((want, found))
            free.remove(found)
    return pairs


@dataclass
class Outcome:
    records: list[Doc]
    flaky: int
    times: list[float]
    errors: int


def project_files(events: list[Doc]) -> dict[str, str]:
    """The files the session's edits and reads name (relative), with the text an edit replaces."""
    files = {"README.md": "# project\n\n## Requirements\n\n## Development\n"}
    for event in events:
        tool_input: Doc = event["tool_input"] if isinstance(event.get("tool_input"), dict) else {}
        path = str(tool_input.get("file_path") or "")
        if event.get("tool_name") in EDIT_TOOLS and path.startswith(PLACEHOLDER + "/"):
            files.setdefault(path[len(PLACEHOLDER) + 1 :], str(tool_input.get("old_string") or ""))
        for line in str(tool_input.get("command") or "").splitlines():
            if line.startswith("*** Update File: "):
                files.setdefault(line.split(": ", 1)[1].strip(), "")
    return files


def checkout(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text + "\n", encoding="utf-8")
    git = ["git", "-C", str(folder), "-c", "user.name=capture-bench", "-c", "user.email=bench@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["-c", "commit.gpgsign=false", "commit", "-qm", "init"]):
        subprocess.run([*git, *args], check=True, capture_output=True)


def environment(tree: Path, home: Path, config: Path, extra: dict[str, str]) -> dict[str, str]:
    # Bytecode is written and reused, as an installed package's is: a hook that compiles its
    # modules at every event would time the compiler, not jiyi.
    dropped = ("CLAUDE_CODE_SESSION_ID", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIYI_") and k not in dropped}
    env.update(JIYI_HOME=str(home), XDG_CONFIG_HOME=str(config), PYTHONPATH=str(tree / "src"), **extra)
    return env


def wait_detached(home: Path, limit: float = 20.0) -> None:
    """Wait (ending none) for the detached ``jiyi hook --finish`` processes of this store."""
    needle, deadline = str(home).encode(), time.monotonic() + limit
    while Path("/proc").is_dir() and time.monotonic() < deadline:
        busy = False
        for entry in Path("/proc").iterdir():
            try:
                line = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            except OSError:
                continue
            busy = busy or (needle in line and b"--finish" in line)
        if not busy:
            return
        time.sleep(0.02)


def flaky_count(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as db:
        known = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'flaky_failures'").fetchone()
        total = db.execute("SELECT COALESCE(SUM(count), 0) FROM flaky_failures").fetchone()[0] if known else 0
    db.close()
    return int(total)


def run_session(session: Doc, tree: Path, extra: dict[str, str]) -> Outcome:
    tmp = Path(tempfile.mkdtemp(prefix=f"capture-{session['id']}-")).resolve()
    try:
        folder, home, config = tmp / f"{session['ecosystem']}-app", tmp / "home", tmp / "config"
        folder.mkdir()
        config.mkdir()
        checkout(folder, project_files(session["events"]))
        env, cwd, times, errors = environment(tree, home, config, extra), json.dumps(str(folder))[1:-1], [], 0
        hook = [sys.executable, "-m", "jiyi", "hook"]
        for event in session["events"]:
            payload = json.dumps({**event, "session_id": session["id"]}, ensure_ascii=False).replace(PLACEHOLDER, cwd)
            started = time.perf_counter()
            done = subprocess.run(
                [*hook, session["agent"]], input=payload.encode(), capture_output=True, env=env, cwd=folder
            )
            times.append(time.perf_counter() - started)
            errors += done.returncode != 0 or bool(done.stderr.strip())
        store = home / "jiyi.db"
        subprocess.run([*hook, "--finish", str(store)], capture_output=True, env=env, cwd=folder, timeout=300)
        wait_detached(home)
        out = subprocess.run(
            [sys.executable, "-m", "jiyi", "export"], capture_output=True, env=env, cwd=folder, text=True
        )
        lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        auto = [
            r for r in lines if r.get("origin") == "local_auto" and str(r.get("topic_key") or "").startswith("auto/")
        ]
        return Outcome(auto, flaky_count(store), times, errors + (out.returncode != 0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Row:
    n: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def add(self, session: Doc, outcome: Outcome) -> None:
        expected, flaky, records = session["expect"]["records"], bool(session["expect"]["flaky"]), outcome.records
        pairs = matches(expected, records)
        self.n.update(sessions=1, expected=len(expected), written=len(records), correct=len(pairs))
        self.n.update(read_only=sum(read_only(fix_command(r)) for r in records), bogus=0 if expected else len(records))
        self.n.update(flaky_expected=flaky, flaky_caught=flaky and outcome.flaky > 0, errors=outcome.errors)
        self.n["titles_right"] += sum(flat(want["key"]) in flat(str(r.get("title") or "")) for want, r in pairs)
        self.times += outcome.times
        if len(pairs) < max(len(expected), len(records)) or flaky != (outcome.flaky > 0):
            written = "; ".join(flat(str(r.get("title") or "")) for r in records) or "nothing"
            self.details.append(
                f"{session['id']} {session['kind']} ({session['agent']}): expected {len(expected)}"
                f"{' flaky' if flaky else ''}, matched {len(pairs)}, flaky count {outcome.flaky}; wrote: {written}"
            )

    def figures(self) -> Doc:
        n, ms = self.n, sorted(t * 1000 for t in self.times) or [0.0]
        return {
            **{k: n[k] for k in ("sessions", "expected", "written", "correct")},
            "precision": n["correct"] / n["written"] if n["written"] else None,
            "recall": n["correct"] / n["expected"] if n["expected"] else None,
            "read_only_fixes": n["read_only"],
            "bogus": n["bogus"],
            "flaky_caught": f"{n['flaky_caught']}/{n['flaky_expected']}",
            "titles_right": f"{n['titles_right']}/{n['correct']}",
            "hook_median_ms": round(statistics.median(ms), 1),
            "hook_p95_ms": round(statistics.quantiles(ms, n=20)[18] if len(ms) > 1 else ms[0], 1),
            "hook_errors": n["errors"],
        }


def check_tree(tree: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    found = subprocess.run(
        [sys.executable, "-c", "import jiyi; print(jiyi.__file__)"], capture_output=True, env=env, text=True
    )
    if not found.stdout.strip().startswith(str(tree / "src")):
        raise SystemExit(f"jiyi does not import from {tree / 'src'}: {found.stdout.strip() or found.stderr.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help="the commit of the baseline row")
    parser.add_argument("--split", choices=("tune", "test", "all"), default="all")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--limit", type=int, default=0, help="only the first N sessions of the split")
    parser.add_argument("--details", action="store_true", help="list the new tree's sessions that differ from expected")
    args = parser.parse_args()
    sessions = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    sessions = [s for s in sessions if args.split in ("all", s["split"])][: args.limit or None]
    scratch = Path(tempfile.mkdtemp(prefix="capture-baseline-"))
    worktree = scratch / "tree"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(worktree), args.baseline], check=True, capture_output=True)
    # The ablation: the same new tree with the lexicon of read-only programs and change verbs off
    # (analysis/commands.py: JIYI_CAPTURE_RULES=off); the command's shape and operation identity stay.
    trees: dict[str, tuple[Path, dict[str, str]]] = {
        "new": (ROOT, {}),
        "new, rules off": (ROOT, {"JIYI_CAPTURE_RULES": "off"}),
        "baseline": (worktree, {}),
    }
    rows = {name: Row() for name in trees}
    try:
        for tree, _ in trees.values():
            check_tree(tree)
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("sessions", total=len(sessions) * len(trees))
            for session in sessions:
                for name, (tree, extra) in trees.items():
                    rows[name].add(session, run_session(session, tree, extra))
                    progress.advance(task)
    finally:
        subprocess.run([*git, "remove", "--force", str(worktree)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    figures = {name: row.figures() for name, row in rows.items()}
    if args.json:
        out: Doc = {"split": args.split, "baseline": args.baseline, "rows": figures}
        if args.details:
            out["details"] = rows["new"].details
        print(json.dumps(out, indent=2))
        return
    table = Table(title=f"capture: {len(sessions)} sessions ({args.split}), baseline {args.baseline[:10]}")
    for column in ("tree", *COLUMNS):
        table.add_column(column.replace("_", " "), justify="left" if column == "tree" else "right")
    for name, values in figures.items():
        cells = (values[c] for c in COLUMNS)
        table.add_row(
            name, *("-" if v is None else f"{v:.1%}" if isinstance(v, float) and v <= 1 else str(v) for v in cells)
        )
    console = Console(width=shutil.get_terminal_size((160, 24)).columns)
    console.print(table)
    for name, values in figures.items():
        if values["hook_errors"]:
            console.print(f"[yellow]{name}: {values['hook_errors']} hook calls exited non-zero or wrote to stderr[/]")
    if args.details:
        for line in rows["new"].details:
            console.print(line, markup=False, highlight=False)


if __name__ == "__main__":
    main()
