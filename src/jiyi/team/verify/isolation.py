"""The sandbox a replayed record's commands run in (docs/spec.md §5: "no network, no sockets,
nothing readable or writable outside the checkout and the toolchain, resource limits").

A record's reproduction and fix come from another member of the team, so they run in bubblewrap
(Debian package ``bubblewrap``), a tool made for exactly this, not in confinement built by hand:

- new user, mount, network, PID, IPC, UTS (and, where the kernel has it, cgroup) namespaces,
  every capability dropped, no new user namespaces inside, a session of its own (no terminal);
- a file system built from nothing: the toolchain (``/usr``, ``/bin``, ``/lib*``, ``/sbin``, a few
  harmless files of ``/etc``) read-only; the throw-away checkout writable at :data:`CHECKOUT` (its
  ``.git`` read-only: the runner's git reads it afterwards) and a home of the replay at
  :data:`HOME`; a private ``/tmp``, ``/dev/shm``, ``/dev`` and ``/proc``. No ``/run``,
  ``/var/run``, host ``/tmp`` (so no Unix socket of the host), no home of the runner, no
  ``/etc/shadow``, no ``/var/lib``: what is not bound does not exist;
- resource limits set inside, after the user namespace is made (``prlimit``): processes
  (``RLIMIT_NPROC``, counted per user namespace), address space, CPU seconds, file size, no core
  files; as root, whose own processes that limit does not bind, also a pids cgroup
  (:mod:`.cgroup`). The wall-clock limit kills bubblewrap, and its ``--die-with-parent`` takes
  the whole PID namespace along.

Whether it works is probed once per process (:func:`sandbox_problem`): a machine without
bubblewrap, or whose kernel or container forbids its namespaces, has no sandbox, and the runner
refuses unless told to run the commands uncontained.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CHECKOUT", "HOME", "MISSING", "Limits", "Sandbox", "describe", "etc_files", "sandbox_problem", "wrap"]

CHECKOUT = "/replay/checkout"
HOME = "/replay/home"
UID = 1000  # who the commands are inside; outside they stay the runner's user
MISSING = (
    "replays run only in a bubblewrap sandbox, and this machine has none that works ({why}); "
    "install the Debian package bubblewrap (apt-get install bubblewrap), or pass --no-sandbox "
    "on a runner you trust to run the commands uncontained"
)
# The toolchain: bound read-only where it is a folder, a link where /usr is merged.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Of /etc only what the loader, TLS and name lookups of localhost read; nothing with secrets.
# /etc/ssl/private (a private key, readable by root) is why /etc/ssl is not bound whole.
_ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl/certs", "ssl/openssl.cnf",
    "ca-certificates.conf", "localtime", "timezone", "nsswitch.conf", "hosts", "host.conf",
    "protocols", "services", "mime.types", "os-release", "debian_version", "shells", "bash.bashrc",
    "profile", "inputrc", "gai.conf",
)  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """What one replayed command (with all it starts) may take."""

    processes: int = 256
    memory_mib: int = 4096  # address space of each process
    cpu_s: int = 600  # CPU seconds of each process; the wall-clock limit is the replay's timeout
    file_mib: int = 2048  # the largest file it may write
    tmp_mib: int = 512  # the private /tmp and /dev/shm, each (in memory)


@dataclass(frozen=True)
class Sandbox:
    """How the commands run: in bubblewrap unless ``contained`` is False (``--no-sandbox``)."""

    contained: bool = True
    network: bool = False  # the runner's network (and its 127.0.0.1) inside the sandbox
    read_only: tuple[Path, ...] = ()  # more toolchain, bound read-only at the same path
    limits: Limits = field(default_factory=Limits)


def wrap(sandbox: Sandbox, argv: list[str], *, checkout: Path, home: Path, etc: Path, cwd: str) -> list[str]:
    """``argv`` run in the sandbox, in ``cwd`` relative to the checkout; ``etc`` holds the
    replay's own ``passwd`` and ``group`` (:func:`etc_files`). Uncontained: ``argv`` itself."""
    if not sandbox.contained:
        return list(argv)
    limits = sandbox.limits
    cmd = ["bwrap", "--unshare-all", "--unshare-user", *(["--share-net"] if sandbox.network else [])]
    cmd += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", *_disable_userns()]
    cmd += ["--uid", str(UID), "--gid", str(UID), "--hostname", "replay"]
    for top in _SYSTEM:
        path = Path(top)
        if path.is_symlink():
            cmd += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            cmd += ["--ro-bind", top, top]
    for name in _ETC:
        if Path("/etc", name).exists():
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    cmd += ["--ro-bind", str(etc / "passwd"), "/etc/passwd", "--ro-bind", str(etc / "group"), "/etc/group"]
    for extra in sandbox.read_only:
        cmd += ["--ro-bind", str(extra.resolve()), str(extra.resolve())]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    tmpfs = str(limits.tmp_mib * 1024 * 1024)
    cmd += ["--size", tmpfs, "--tmpfs", "/tmp", "--size", tmpfs, "--tmpfs", "/dev/shm"]
    cmd += ["--bind", str(checkout), CHECKOUT, "--bind", str(home), HOME]
    if (checkout / ".git").exists():
        cmd += ["--ro-bind", str(checkout / ".git"), f"{CHECKOUT}/.git"]
    cmd += ["--chdir", f"{CHECKOUT}/{cwd}" if cwd else CHECKOUT, "--"]
    mib = 1024 * 1024
    cmd += [
        "prlimit",
        f"--nproc={limits.processes}",
        f"--as={limits.memory_mib * mib}",
        f"--cpu={limits.cpu_s}",
        f"--fsize={limits.file_mib * mib}",
        "--core=0",
        "--",
    ]
    return cmd + list(argv)


def etc_files(folder: Path) -> None:
    """The replay's ``passwd`` and ``group``: tools that look their user up find one, and no one else."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "passwd").write_text(
        f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nreplay:x:{UID}:{UID}:replay:{HOME}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        encoding="utf-8",
    )
    (folder / "group").write_text(f"root:x:0:\nreplay:x:{UID}:\nnogroup:x:65534:\n", encoding="utf-8")


@functools.cache
def _disable_userns() -> tuple[str, ...]:
    """``--disable-userns`` where this bubblewrap has it (0.8 and later)."""
    try:
        helped = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("--disable-userns",) if "--disable-userns" in helped.stdout + helped.stderr else ()


@functools.cache
def sandbox_problem() -> str | None:
    """Why this machine cannot run a replay sandboxed, or None when it can: a sandboxed command
    writes in its checkout and sees nothing of the host but the toolchain."""
    for tool in ("bwrap", "prlimit"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH"
    with tempfile.TemporaryDirectory(prefix="jiyi-sandbox-probe-") as tmp:
        checkout, home, etc = Path(tmp, "checkout"), Path(tmp, "home"), Path(tmp, "etc")
        checkout.mkdir()
        home.mkdir()
        etc_files(etc)
        script = f'touch ok && ! test -e {tmp} && test -d /proc/1 && test "$(id -u)" = {UID}'
        argv = wrap(Sandbox(), ["/bin/sh", "-c", script], checkout=checkout, home=home, etc=etc, cwd="")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False, env=_env())
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bwrap did not run: {exc}"
        if done.returncode != 0 or not (checkout / "ok").exists():
            said = " ".join(done.stderr.split())[:200]
            return f"bwrap exited {done.returncode}: {said}" if said else f"bwrap exited {done.returncode}"
    return None


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}


def describe(sandbox: Sandbox, *, processes_cgroup: bool) -> str:
    """The containment a replay's commands run in, in one line (the runner's first)."""
    if not sandbox.contained:
        return (
            "replay isolation: NONE (--no-sandbox): the records' commands run uncontained, as this user, "
            "with its network, sockets and files"
        )
    limits = sandbox.limits
    net = "the runner's network" if sandbox.network else "no network"
    procs = f"≤{limits.processes} processes" + (" (pids cgroup)" if processes_cgroup else "")
    extra = "".join(f", {p} read-only" for p in sandbox.read_only)
    return (
        f"replay isolation: bubblewrap; {net}; writes only in the checkout ({CHECKOUT}) and {HOME}; "
        f"the toolchain read-only{extra}; {procs}, {limits.memory_mib} MiB address space, "
        f"{limits.cpu_s} CPU s, files ≤{limits.file_mib} MiB"
    )
