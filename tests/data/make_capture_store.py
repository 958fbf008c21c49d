"""How store-main-capture.sqlite was made: automatic records as the jiyi of commit 7008f5e (the main
before the same-operation rule) wrote them from its hook, e.g.

    git archive 7008f5e | tar -x -C OLD
    PYTHONPATH=OLD/src python tests/data/make_capture_store.py tests/data

Four sessions, each a failure and then one successful Bash call: `ls tests`, `cat main.c` and
`git status` (the agent only looked: that jiyi recorded each as the fix), and a failing `cc` fixed
by editing main.c and building again (a true fix). tests/capture/test_curation.py retires the first
three with the current code and keeps the fourth.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SESSIONS = (
    ("pytest tests/test_api.py", "E   ModuleNotFoundError: No module named 'yaml'", [("Bash", "ls tests")]),
    ("cc -o app main.c", "main.c:(.text+0x5a): undefined reference to `deflate'", [("Bash", "cat main.c")]),
    ("git push", "error: failed to push some refs to 'origin'", [("Bash", "git status")]),
    ("cc -o app main.c", "main.c:3:10: fatal error: zlib.h: No such file or directory",
     [("Edit", "main.c"), ("Bash", "cc -o app main.c -lz")]),
)  # fmt: skip


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        work.mkdir()
        env = {**os.environ, "JIYI_HOME": str(home), "JIYI_CONFIG_DIR": str(Path(tmp) / "config")}
        for n, (command, error, after) in enumerate(SESSIONS):
            sid = f"capture-{n}"
            events = [
                {"hook_event_name": "SessionStart"},
                {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": command},
                 "error": f"Exit code 1\n{error}"},
            ]  # fmt: skip
            for tool, value in after:
                if tool == "Edit":
                    events.append({"hook_event_name": "PostToolUse", "tool_name": "Edit",
                                   "tool_input": {"file_path": str(work / value)}, "tool_response": {}})  # fmt: skip
                else:
                    events.append({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                                   "tool_input": {"command": value}, "tool_response": {"stdout": ""}})  # fmt: skip
            for event in events:
                payload = json.dumps({**event, "session_id": sid, "cwd": str(work)})
                subprocess.run([sys.executable, "-m", "jiyi", "hook", "claude-code"], input=payload.encode(),
                               env=env, check=True)  # fmt: skip
            subprocess.run(
                [sys.executable, "-m", "jiyi", "hook", "--finish", str(home / "jiyi.db")], env=env, check=True
            )
        db = home / "jiyi.db"
        subprocess.run([sys.executable, "-c", f"import sqlite3; sqlite3.connect({str(db)!r}).execute('VACUUM')"],
                       check=True)  # fmt: skip
        shutil.copy(db, out / "store-main-capture.sqlite")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
