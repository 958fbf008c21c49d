"""``jiyi run -- <command>``'s library half: run a command with its output passed through unchanged,
keeping the tail of it for the session's last failure (the CLI, ``cli/capture.py``, records it),
and what the checkout holds besides its commit (:func:`worktree_state`), so a fix made by hand in
another shell between a failure and its passing re-run is seen as the files it changed.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import deque
from typing import IO

from .cleaning import MAX_ERROR


def run(command: list[str], limit: int = MAX_ERROR) -> tuple[int, str]:
    """Run ``command`` with its stdout and stderr copied through unchanged; returns the exit status
    (128 + signal when killed, 127 when it cannot start) and the tail of its output: the tail of
    stdout, then the tail of stderr. Each stream is kept apart because two pipes read by two
    threads have no order between them, and stderr goes last because that is where tools put the
    error; it gets the larger share of ``limit``."""
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        message = f"jiyi run: {command[0]}: {exc.strerror or exc}"
        print(message, file=sys.stderr, flush=True)
        return 127, message

    def pump(source: IO[bytes], target: IO[bytes], tail: deque[bytes]) -> None:
        read = getattr(source, "read1", source.read)
        kept = 0
        while chunk := read(65536):
            target.write(chunk)
            target.flush()
            tail.append(chunk)
            kept += len(chunk)
            while kept - len(tail[0]) >= 4 * limit:
                kept -= len(tail.popleft())

    assert child.stdout is not None and child.stderr is not None
    out_tail: deque[bytes] = deque()
    err_tail: deque[bytes] = deque()
    pumps = [
        threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, out_tail), daemon=True),
        threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer, err_tail), daemon=True),
    ]
    for thread in pumps:
        thread.start()
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:  # the child got the same signal; wait for it to end
            continue
    for thread in pumps:
        thread.join()
    child.stdout.close()  # read to the end: closed here, not left to the collector (a caller may live on)
    child.stderr.close()
    code = status if status >= 0 else 128 - status
    out = b"".join(out_tail).decode("utf-8", "replace").rstrip("\n")
    err = b"".join(err_tail).decode("utf-8", "replace").rstrip("\n")
    err = _tail(err, limit)
    room = limit - len(err) - 1  # what is left for stdout after stderr and the joining newline
    out = _tail(out, room) if room > 0 else ""
    return code, "\n".join(part for part in (out, err) if part)


# A checkout with more changed files than this is not watched (the record would name none usefully).
WATCHED_FILES = 500
_HASHED_BYTES = 8 * 1024 * 1024


def worktree_state(top: str) -> dict[str, str] | None:
    """The checkout's files that differ from its commit or are untracked (``git status``), each
    with a digest of its content ("-" when deleted); None outside git, or with more than
    ``WATCHED_FILES``. Runs git: for ``jiyi run``, never on the hook's path."""
    import hashlib
    import os

    try:
        done = subprocess.run(
            ["git", "-C", top, "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    entries = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    state: dict[str, str] = {}
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        if entry[0] in "RC":
            index += 1  # a rename's source path follows
        path = entry[3:]
        full = os.path.join(top, path)
        try:
            if os.path.getsize(full) > _HASHED_BYTES:
                digest = f"size:{os.path.getsize(full)}:{os.stat(full).st_mtime_ns}"
            else:
                with open(full, "rb") as handle:
                    digest = hashlib.sha1(handle.read(), usedforsecurity=False).hexdigest()
        except OSError:
            digest = "-"
        state[path] = digest
        if len(state) > WATCHED_FILES:
            return None
    return state


def changed_paths(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files whose state differs between two :func:`worktree_state`s."""
    return sorted(p for p in {*before, *after} if before.get(p) != after.get(p))


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, starting at a line (else a word): a cut in the
    middle of a token would leave a piece redaction no longer recognises."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    for mark in ("\n", " "):
        at = cut.find(mark)
        if at >= 0:
            return cut[at + 1 :]
    return ""
