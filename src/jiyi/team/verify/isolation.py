"""What a replayed record's command may reach (docs/spec.md §5: replay runs in an isolated runner).

A record's reproduction and fix commands come from another member of the team, so ``replay`` runs
them confined, with util-linux alone (``unshare``, ``mount``, ``setpriv``: no package beyond the
``unshare`` network isolation already needed):

- **no network**: ``unshare -rn``, a user namespace (the runner's user as root inside) and a
  network namespace with no interface up;
- **no writes outside the throw-away checkout and its private temp folder**: a mount namespace
  in which those folders are bound onto themselves and every other mount is remounted read-only
  (the checkout's ``.git`` too: the runner's git reads it after the command ran), with a private
  ``/dev/shm``; a PID namespace with its own ``/proc``, so the command cannot reach the runner's
  other processes (signals, ``/proc/<pid>/root``); then every capability dropped
  (``setpriv --bounding-set=-all``, no new privileges), because root of the user namespace could
  otherwise simply remount a folder writable again.

bubblewrap would do the second as well, but it is one more package to install on every runner,
and unprivileged it needs the same user namespaces ``unshare -r`` does: it reaches no machine this
cannot. What neither closes: a Unix socket file the runner's user may connect to stays reachable
(connecting is no write to the file system).

Either isolation is probed once per process (:func:`network_isolation`,
:func:`filesystem_isolation`): a machine without user namespaces, or a container that forbids
mounts in them, has neither, and the runner refuses unless told to run the commands without it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["NETWORK_MISSING", "WRITES_MISSING", "confined", "describe", "filesystem_isolation", "network_isolation"]

# Run inside the new namespaces as ``bash -c _JAIL jail <writable>... --ro <read-only>... -- argv``:
# bind each writable folder onto itself, remount every other mount read-only (mountinfo escapes a
# space as \040; a mount point the runner cannot even reach is no way out), make the read-only
# folders within writable ones read-only binds, enter the working folder again (the process's
# folder was taken before the binds: it still names the mount made read-only), then run argv.
# A mount it cannot make read-only stops it: exit 125 before the command runs.
_JAIL = r"""
set -e
keep=()
while [ "$1" != --ro ]; do mount --bind "$1" "$1"; keep+=("$1"); shift; done
shift
frozen=()
while [ "$1" != -- ]; do frozen+=("$1"); shift; done
shift
while read -r _ _ _ _ point _; do
  point=$(printf '%b' "${point//\\/\\0}")
  for k in "${keep[@]}"; do [ "$point" = "$k" ] && continue 2; done
  [ -e "$point" ] || continue
  mount -o remount,bind,ro "$point" 2>/dev/null || { echo "jiyi: cannot make $point read-only" >&2; exit 125; }
done < /proc/self/mountinfo
for f in "${frozen[@]}"; do
  if [ -e "$f" ]; then mount --bind "$f" "$f" && mount -o remount,bind,ro "$f" || exit 125; fi
done
mount -t tmpfs -o mode=1777,size=256m tmpfs /dev/shm || exit 125
cd -- "$PWD"
exec "$@"
"""
NETWORK_MISSING = (
    "this machine cannot run commands without network (unshare -rn fails); pass --allow-network on a runner you trust"
)
WRITES_MISSING = (
    "this machine cannot keep commands from writing outside their checkout (unshare -rm with read-only "
    "remounts fails); pass --allow-writes on a runner you trust"
)
_DROP = ("setpriv", "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all")


def confined(
    argv: Sequence[str], *, network: bool, writable: Sequence[Path] | None, read_only: Sequence[Path] = ()
) -> list[str]:
    """``argv`` run without network unless ``network``, and, with ``writable`` folders given,
    unable to write anywhere else (nor in ``read_only`` folders within them); None for
    ``writable`` leaves the file system as it is. Paths are resolved: mountinfo names real paths."""
    if writable is None:
        return list(argv) if network else ["unshare", "-rn", *argv]
    jail = ["bash", "-c", _JAIL, "jail", *(str(p.resolve()) for p in writable)]
    jail += ["--ro", *(str(p.resolve()) for p in read_only), "--"]
    spaces = ["-r", "-m", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc"]
    return ["unshare", *spaces, *([] if network else ["-n"]), *jail, *_DROP, *argv]


@functools.cache
def network_isolation() -> bool:
    """Whether this machine can run a command without network: ``unshare -rn true`` works."""
    if shutil.which("unshare") is None:
        return False
    return _probe(["unshare", "-rn", "true"]) == 0


@functools.cache
def filesystem_isolation() -> bool:
    """Whether this machine can keep a command from writing outside given folders: a confined
    command writes in the folder it was given and fails to write beside it."""
    if any(shutil.which(tool) is None for tool in ("unshare", "bash", "setpriv", "mount")):
        return False
    with tempfile.TemporaryDirectory(prefix="jiyi-isolation-") as tmp:
        inside, frozen = Path(tmp, "inside"), Path(tmp, "inside", "frozen")
        frozen.mkdir(parents=True)
        script = "touch ok; touch ../outside frozen/x 2>/dev/null; exit 0"
        argv = confined(["sh", "-c", script], network=True, writable=[inside], read_only=[frozen])
        code = _probe(argv, cwd=str(inside))
        return (
            code == 0
            and Path(tmp, "inside", "ok").exists()
            and not any(p.exists() for p in (Path(tmp, "outside"), frozen / "x"))
        )


def _probe(argv: list[str], cwd: str | None = None) -> int | None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False, cwd=cwd, env=_probe_env())
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode


def _probe_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}


def describe(*, allow_network: bool, allow_writes: bool) -> str:
    """The isolation a replay with these permissions runs its commands in, in one line."""
    net = "network allowed" if allow_network else "no network (unshare -n)"
    files = (
        "writes allowed anywhere the runner's user may write"
        if allow_writes
        else "writes only in the checkout and its temp folder (read-only remounts in unshare -m)"
    )
    return f"replay isolation: {net}; {files}"
