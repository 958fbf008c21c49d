"""Where a checkout stands, from git's files with ``os`` alone: its top folder and HEAD commit.

A failure's reproduction (docs/spec.md §5) names the commit the command failed at. The hook's quick path
keeps that point with the failure (:func:`failure_point`), because the commit may have moved by the
time the failure is fixed and its automatic record written: the success may follow a commit of
the fix itself, and at that commit the failure no longer reproduces. Reading the files rather than
running ``git`` costs the hook a few ``stat``/``open`` calls; no pathlib, no subprocess.
"""

from __future__ import annotations

import json
import os

_HEX = frozenset("0123456789abcdef")


def git_top(folder: str) -> str | None:
    """The nearest folder (``folder`` itself or a parent) with a ``.git``; None outside git."""
    here = folder
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def git_dir(top: str) -> str | None:
    """The git directory of the checkout at ``top``: ``.git``, or where a ``.git`` file points
    (worktrees and submodules: ``gitdir: <path>``)."""
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return target if os.path.isabs(target) else os.path.realpath(os.path.join(top, target))


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _common_dir(gitdir: str) -> str:
    """A worktree's branches and packed refs live in the main git dir (its ``commondir``)."""
    common = _read(os.path.join(gitdir, "commondir"))
    return os.path.realpath(os.path.join(gitdir, common)) if common else gitdir


def _ref_value(gitdir: str, common: str, ref: str) -> str | None:
    if not ref.startswith("refs/") or ".." in ref:
        return None
    for base in dict.fromkeys((gitdir, common)):  # per-worktree refs first, then the shared ones
        if os.path.isfile(os.path.join(base, ref)):
            return _read(os.path.join(base, ref))
    packed = _read(os.path.join(common, "packed-refs"))
    for line in (packed or "").splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and not line.startswith(("#", "^")):
            return sha
    return None


def _is_commit(value: str) -> bool:
    return len(value) in (40, 64) and set(value) <= _HEX  # SHA-1 or SHA-256


def head_commit(gitdir: str) -> str | None:
    """The commit HEAD names, from git's files (HEAD, loose refs, packed-refs); None on an unborn
    branch or a layout not read here (reftable)."""
    value = _read(os.path.join(gitdir, "HEAD"))
    common = _common_dir(gitdir)
    for _ in range(5):  # a symbolic ref may name another one
        if value is None:
            return None
        if not value.startswith("ref:"):
            return value if _is_commit(value) else None
        value = _ref_value(gitdir, common, value[4:].strip())
    return None


def failure_point(folder: str) -> str | None:
    """Where a command failing in ``folder`` (a real path) can be met again, as the store keeps
    it (``sessions.last_checkout``): JSON of the checkout's top, its HEAD commit and ``folder``
    relative to the top; None outside git or without a commit."""
    top = git_top(folder)
    gitdir = git_dir(top) if top is not None else None
    commit = head_commit(gitdir) if gitdir is not None else None
    if top is None or commit is None:
        return None
    cwd = os.path.relpath(folder, top) if folder != top else ""
    return json.dumps({"top": top, "commit": commit, "cwd": "" if cwd == "." else cwd.replace(os.sep, "/")})
