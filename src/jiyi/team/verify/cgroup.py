"""A pids cgroup around one sandboxed command, for a runner that runs as root.

``RLIMIT_NPROC`` binds every user but the host's root: the kernel lets root's processes (the
sandbox's user is root outside it, when the runner is) fork past it. A cgroup's ``pids.max``
binds everyone, and root may make one: cgroup v2 when its root delegates ``pids``, else the v1
``pids`` hierarchy. Anyone else has no cgroup of its own to make here, and needs none.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["enter", "pids_hierarchy", "processes"]

_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/pids")
# Put the shell in the cgroup named by $0, then become the command: all it starts is counted.
_ENTER = 'echo $$ > "$0" && exec "$@"'


@functools.cache
def pids_hierarchy() -> Path | None:
    """Where this process may make a pids cgroup: only root, only where ``pids`` is there."""
    if os.geteuid() != 0:
        return None
    with contextlib.suppress(OSError):
        if "pids" in (_V2 / "cgroup.subtree_control").read_text().split():
            return _V2
    with contextlib.suppress(OSError):
        probe = _V1 / f"jiyi-probe-{uuid.uuid4().hex[:8]}"
        probe.mkdir()
        try:
            if (probe / "pids.max").exists():
                return _V1
        finally:
            probe.rmdir()
    return None


@contextlib.contextmanager
def processes(limit: int) -> Iterator[Path | None]:
    """A new pids cgroup allowing ``limit`` processes (None where none can be made); whatever
    is left in it at the end is killed and the cgroup removed."""
    root = pids_hierarchy()
    if root is None:
        yield None
        return
    group = root / f"jiyi-replay-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(f"{limit}\n")
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group
    finally:
        _empty(group)


def enter(group: Path | None, argv: list[str]) -> list[str]:
    """``argv`` started inside ``group``."""
    if group is None:
        return argv
    return ["/bin/sh", "-c", _ENTER, str(group / "cgroup.procs"), *argv]


def _empty(group: Path) -> None:
    for _ in range(100):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            break
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        group.rmdir()
