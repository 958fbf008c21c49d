"""Replay verification (回放验证, docs/spec.md §5): does a record's fix really fix its failure?

In a throw-away checkout of the record's repository at its commit, the reproduction command must
fail with one of the record's error signatures; then the fix is applied (a command run, a diff
applied, a config file written inside the checkout) and the check must pass: the reproduction's
``check`` when it has one (the fix is the failing command changed, ``records.checked_by``), else
the failing command again. A command fix that is the check itself runs once, as the check. Only
``jiyi team verify`` calls this, on a runner a team opts into: search never runs a fix (docs/spec.md §6).

The record's commands run in a sandbox (``isolation``: bubblewrap; no network, nothing of the
host but the toolchain, only the checkout writable, resource limits), with a minimal environment
(no tokens of the runner), killed whole when the time is up; a machine without a working sandbox
refuses unless the runner says to run them uncontained. Git itself (clone, checkout, apply) runs
outside it, as the runner's user with its credentials: it is the runner's tool, not the record's,
and it fetches only remote URLs (https, ssh, ``user@host:path``) unless local repositories are
allowed: a record must not make the runner copy a private folder of its machine into a replay.
The list of dangerous commands refuses the obvious ones early; it is a label, not the guarantee.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ... import project
from ...analysis.signature import analyze
from ...records import FIX_KINDS, Record
from ...tools.formats import is_dangerous
from . import cgroup
from .isolation import HOME, MISSING, Sandbox, etc_files, sandbox_problem, wrap

__all__ = ["STAGES", "ReplayResult", "environment_text", "remote_allowed", "replay", "sandbox_problem"]

STAGES = ("passed", "refused", "checkout", "not-reproduced", "fix-failed", "still-failing", "timeout")
OUTPUT_HEAD = 16 * 1024  # bytes of a command's output kept from its start …
OUTPUT_TAIL = 48 * 1024  # … and from its end, where the error usually is
DETAIL_MAX = 600
COMMAND_SHOWN = 160  # of the checked command in a result's detail, which keeps the error's key line
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
# What a record's command may see of the runner's environment: nothing secret, enough to find tools.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
# Git must not run hooks a system template installs, nor ask for a password on a terminal.
_GIT = ("git", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never", "-c", "advice.detachedHead=false")
# Clones only over these unless local repositories are allowed (git's own check, behind ours).
_REMOTE_ONLY = ("-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.ssh.allow=always")
_URL = re.compile(r"(?:https|ssh|git\+ssh|ssh\+git)://[A-Za-z0-9\[][^\s/]*/\S*")
_SCP = re.compile(r"(?:[A-Za-z0-9][\w.+-]*@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!//)[^\s:]\S*")
LOCAL_REFUSED = (
    "not a remote repository (https://, ssh:// or user@host:path): {repo!r}; "
    "a runner replays local repositories only with --allow-local-repos"
)


@dataclass(frozen=True)
class ReplayResult:
    passed: bool
    stage: str  # one of STAGES: where the replay stopped ("passed" when it went through)
    detail: str
    environment: str  # "os=linux,arch=x86_64"


class _Stop(Exception):
    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(detail)
        self.stage = stage
        self.detail = detail


@dataclass(frozen=True)
class _Run:
    code: int | None  # None: killed at the time limit
    output: str


def environment_text() -> str:
    env = project.environment()
    return f"os={env['os']},arch={env['arch']}"


def replay(
    record_or_line: Record | dict[str, Any],
    *,
    timeout_s: float = 300,
    sandbox: Sandbox | None = None,
    allow_local_repos: bool = False,
    workdir: str | Path | None = None,
) -> ReplayResult:
    """Replay a record (or an export line with its ``reproduction``); ``timeout_s`` bounds the whole
    replay, checkout included. Its commands run in ``sandbox`` (by default: bubblewrap, no network,
    the default limits); a machine without a working one refuses, unless the sandbox says
    uncontained. Its repository must be a remote URL unless ``allow_local_repos``. Nothing is run
    when the record is refused."""
    env_text = environment_text()
    sandbox = sandbox or Sandbox()
    try:
        record = _as_record(record_or_line)
        _check(record, allow_local_repos=allow_local_repos)
        problem = sandbox_problem() if sandbox.contained else None
        if problem is not None:
            raise _Stop("refused", MISSING.format(why=problem))
        deadline = time.monotonic() + timeout_s
        with tempfile.TemporaryDirectory(prefix="jiyi-replay-", dir=workdir, ignore_cleanup_errors=True) as scratch:
            try:
                detail = _replay_in(record, Path(scratch), deadline, sandbox, local=allow_local_repos)
            finally:
                _make_removable(Path(scratch))
        return ReplayResult(True, "passed", detail, env_text)
    except _Stop as stop:
        return ReplayResult(False, stop.stage, stop.detail[:DETAIL_MAX], env_text)


def _as_record(value: Record | dict[str, Any]) -> Record:
    if isinstance(value, Record):
        return value
    from ...transfer import record_from_json

    try:
        return record_from_json(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise _Stop("refused", f"not a jiyi record: {exc}") from None


def remote_allowed(repo: str) -> bool:
    """Whether ``repo`` names a remote repository git reaches over https or ssh."""
    return bool(_URL.fullmatch(repo) or _SCP.fullmatch(repo))


def _check(record: Record, *, allow_local_repos: bool) -> None:
    """Refuse what must not or cannot be replayed, before anything runs."""
    repro, fix = record.reproduction, record.fix
    if repro is None:
        raise _Stop("refused", "the record has no reproduction (command, repository, commit)")
    if fix is None:
        raise _Stop("refused", "the record has no fix")
    if not record.signatures:
        raise _Stop("refused", "the record has no error signature to compare the failure with")
    if is_dangerous(repro.command):
        raise _Stop("refused", f"dangerous reproduction command: {repro.command}")
    if repro.check is not None and is_dangerous(repro.check):
        raise _Stop("refused", f"dangerous check command: {repro.check}")
    if fix.kind not in FIX_KINDS:
        raise _Stop("refused", f"unknown fix kind: {fix.kind}")
    if fix.kind == "command" and (fix.command is None or is_dangerous(fix.command)):
        raise _Stop("refused", f"dangerous or missing fix command: {fix.command}")
    if fix.kind == "diff" and not fix.diff:
        raise _Stop("refused", "the diff fix is empty")
    if fix.kind == "config":
        _relative(fix.path or "")
    if repro.cwd:
        _relative(repro.cwd)
    if not _COMMIT.fullmatch(repro.commit):
        raise _Stop("refused", f"not a commit id: {repro.commit}")
    if not repro.repo or repro.repo.startswith("-"):
        raise _Stop("refused", f"not a repository: {repro.repo}")
    if not allow_local_repos and not remote_allowed(repro.repo):
        raise _Stop("refused", LOCAL_REFUSED.format(repo=repro.repo))


def _replay_in(record: Record, scratch: Path, deadline: float, sandbox: Sandbox, *, local: bool) -> str:
    repro, fix = record.reproduction, record.fix
    assert repro is not None and fix is not None  # _check
    top, home, etc = scratch / "checkout", scratch / "home", scratch / "etc"
    home.mkdir()
    etc_files(etc)
    protocols = () if local else _REMOTE_ONLY
    clone = [*protocols, "clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", repro.repo, str(top)]
    _git(clone, scratch, deadline)
    _git(["checkout", "--quiet", "--detach", repro.commit], top, deadline)
    cwd = _inside(top, "", repro.cwd) if repro.cwd else top
    if not cwd.is_dir():
        raise _Stop("checkout", f"no folder {repro.cwd} at {repro.commit[:12]}")
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    if sandbox.contained:
        env.update(HOME=HOME, TMPDIR="/tmp", USER="replay", LOGNAME="replay", GIT_TERMINAL_PROMPT="0")
    else:
        env.update(HOME=str(home), TMPDIR=str(home), GIT_TERMINAL_PROMPT="0")
    shell = shutil.which("bash") or "/bin/sh"

    def run(command: str, step: str) -> _Run:
        argv = wrap(sandbox, [shell, "-c", command], checkout=top, home=home, etc=etc, cwd=repro.cwd)
        confining = cgroup.processes(sandbox.limits.processes) if sandbox.contained else contextlib.nullcontext()
        with confining as group:
            result = _run(cgroup.enter(group, argv), cwd if not sandbox.contained else scratch, env, deadline)
        if result.code is None:
            raise _Stop("timeout", f"the time limit ran out during {step}: {_tail(result.output)}")
        return result

    first = run(repro.command, "the reproduction")
    if first.code == 0:
        raise _Stop("not-reproduced", f"the command passed before the fix: {repro.command}")
    met = set(analyze(first.output).signatures) & set(record.signatures)
    if not met:
        raise _Stop("not-reproduced", f"it failed (exit {first.code}) with another error: {_key(first.output)}")

    check = repro.check or repro.command
    # The changed command that fixed it is the fix and the check at once: run once, as the check.
    # Only with a check: a record without one replays as it always did.
    same = fix.kind == "command" and (fix.command or "").split() == check.split()
    fix_is_check = repro.check is not None and same
    if fix.kind == "command" and not fix_is_check:
        applied = run(fix.command or "", "the fix command")
        if applied.code != 0:
            raise _Stop("fix-failed", f"the fix command exited {applied.code}: {_tail(applied.output)}")
    elif fix.kind == "diff":
        _apply_diff(fix.diff or "", top, scratch, deadline)
    elif fix.kind == "config":
        target = _inside(top, repro.cwd, fix.path or "")
        target.parent.mkdir(parents=True, exist_ok=True)
        _inside(top, repro.cwd, fix.path or "")  # again: a folder made above may not lead outside
        target.write_text(fix.content or "", encoding="utf-8")

    checked = f"checked: {_cut(check)}"
    second = run(check, "the check after the fix")
    if second.code != 0:
        raise _Stop("still-failing", f"exit {second.code} after the {fix.kind} fix ({checked}): {_key(second.output)}")
    return f"failed as recorded (exit {first.code}), passed after the {fix.kind} fix ({checked})"


def _relative(relative: str) -> PurePosixPath:
    given = PurePosixPath(relative)
    if not relative or given.is_absolute() or ".." in given.parts or ".git" in given.parts or "\\" in relative:
        raise _Stop("refused", f"the path must stay inside the checkout: {relative!r}")
    return given


def _inside(top: Path, cwd: str, relative: str) -> Path:
    """``relative`` (to ``cwd`` in the checkout) as a path that stays inside ``top`` and out of
    its ``.git``; a symbolic link leading out counts as leaving."""
    base = top / cwd if cwd else top
    target = base / _relative(relative)
    real_top = top.resolve()
    real = target.resolve()
    if real != real_top and real_top not in real.parents:
        raise _Stop("refused", f"the path leads out of the checkout: {relative!r}")
    return target


def _apply_diff(diff: str, top: Path, scratch: Path, deadline: float) -> None:
    patch = scratch / "fix.diff"
    patch.write_text(diff if diff.endswith("\n") else diff + "\n", encoding="utf-8")
    problems = []
    for strip in ("-p1", "-p0"):  # "a/x b/x" as git writes them, or bare paths
        check = _run([*_GIT, "apply", "--check", strip, str(patch)], top, None, deadline)
        if check.code == 0:
            _git(["apply", strip, str(patch)], top, deadline, stage="fix-failed")
            return
        problems.append(check.output.strip())
    raise _Stop("fix-failed", f"the diff does not apply: {_tail(problems[0])}")


def _git(args: list[str], cwd: Path, deadline: float, *, stage: str = "checkout") -> None:
    result = _run([*_GIT, *args], cwd, None, deadline, extra_env={"GIT_TERMINAL_PROMPT": "0"})
    verb = next(a for a in args if not a.startswith("-") and "=" not in a)
    if result.code is None:
        raise _Stop("timeout", f"the time limit ran out during git {verb}")
    if result.code != 0:
        raise _Stop(stage, f"git {verb} failed: {_tail(result.output)}")


def _run(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    deadline: float,
    *,
    extra_env: dict[str, str] | None = None,
) -> _Run:
    """Run ``argv`` in a process group of its own, stdout and stderr together, bounded; the whole
    group is killed at ``deadline`` and when the command ends (what it left behind goes too)."""
    if env is None:
        env = {**os.environ, **(extra_env or {})}
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return _Run(None, "")
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out = proc.stdout
    assert isinstance(out, io.BufferedReader)
    head, tail, dropped = bytearray(), bytearray(), [0]

    def collect() -> None:
        for chunk in iter(lambda: out.read1(65536), b""):
            room = OUTPUT_HEAD - len(head)
            head.extend(chunk[:room])
            tail.extend(chunk[room:] if room > 0 else chunk)
            if len(tail) > OUTPUT_TAIL:
                dropped[0] += len(tail) - OUTPUT_TAIL
                del tail[:-OUTPUT_TAIL]

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    code: int | None
    try:
        code = proc.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _kill_group(proc.pid)
        proc.wait()
    reader.join(timeout=5)
    out.close()
    gap = f"\n… {dropped[0]} bytes left out …\n".encode() if dropped[0] else b""
    return _Run(code, bytes(head + gap + tail).decode("utf-8", "replace"))


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _key(output: str) -> str:
    found = analyze(output).key_lines
    return found[0] if found else _tail(output)


def _cut(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= COMMAND_SHOWN else flat[: COMMAND_SHOWN - 1] + "…"


def _tail(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-300:] or "(no output)"


def _make_removable(folder: Path) -> None:
    """A command may leave read-only folders (Go's module cache does): open them so the checkout goes.
    Not through a link: one the command left could name any folder of the runner."""
    for path, dirs, _files in os.walk(folder):
        for name in dirs:
            inner = os.path.join(path, name)
            if not os.path.islink(inner):
                with contextlib.suppress(OSError):
                    os.chmod(inner, 0o700)
