"""Which project a session works in, and the environment facts worth matching.

The project's identity comes from its git remote, so two clones of one repository meet; without a
remote it is the folder. Git's config is read as a file rather than by running ``git``: this runs
on the hook path, where a subprocess costs more than the whole rest of the event.
"""

from __future__ import annotations

import configparser
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Project:
    name: str  # shown in `source:` lines, e.g. zlib-port
    key: str  # identity: normalised remote URL, else the folder path
    root: Path | None = None


def _git_dir(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # worktrees and submodules: "gitdir: <path>"
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return target if target.is_absolute() else (root / target).resolve()
    return None


def find_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def remote_url(git_dir: Path) -> str | None:
    config = configparser.ConfigParser(strict=False, interpolation=None)
    candidates = [git_dir / "config"]
    common = git_dir / "commondir"
    if common.is_file():
        candidates.append((git_dir / common.read_text().strip()).resolve() / "config")
    try:
        config.read(candidates, encoding="utf-8")
    except configparser.Error:
        return None
    remotes = [s for s in config.sections() if s.startswith('remote "')]
    preferred = 'remote "origin"'
    for section in ([preferred] if preferred in remotes else []) + remotes:
        url = config.get(section, "url", fallback=None)
        if url:
            return url.strip()
    return None


_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256


def _common_dir(git_dir: Path) -> Path:
    common = git_dir / "commondir"  # a worktree's branches and packed refs live in the main git dir
    if common.is_file():
        return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def _ref_value(git_dir: Path, common: Path, ref: str) -> str | None:
    if not ref.startswith("refs/") or ".." in ref:
        return None
    for base in dict.fromkeys((git_dir, common)):  # per-worktree refs first, then the shared ones
        if (base / ref).is_file():
            return (base / ref).read_text(encoding="utf-8").strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and not line.startswith(("#", "^")):
                return sha
    return None


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD names, from git's files (HEAD, loose refs, packed-refs); None on an unborn
    branch or a layout not read here (reftable)."""
    common = _common_dir(git_dir)
    try:
        value = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        for _ in range(5):  # a symbolic ref may name another one
            if not value.startswith("ref:"):
                return value if _COMMIT.fullmatch(value) else None
            found = _ref_value(git_dir, common, value[4:].strip())
            if found is None:
                return None
            value = found
    except (OSError, UnicodeDecodeError):
        return None
    return None


def checkout_point(root: Path) -> tuple[str, str] | None:
    """(where to clone the repository at ``root`` from — its remote URL, else ``root`` itself —,
    its HEAD commit); None when ``root`` is no git repository with a commit."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return None
    commit = head_commit(git_dir)
    if commit is None:
        return None
    return remote_url(git_dir) or str(root), commit


def normalise_remote(url: str) -> str:
    """``git@github.com:a/b.git``, ``https://github.com/a/b`` and ``ssh://git@github.com/a/b`` meet."""
    text = url.strip()
    text = re.sub(r"^[a-z+]+://", "", text)
    text = re.sub(r"^[^@/]+@", "", text)
    text = re.sub(r"^([^/:]+):(?!\d+/)", r"\1/", text)  # scp-like host:path
    text = re.sub(r"^([^/:]+):\d+/", r"\1/", text)  # explicit port
    text = re.sub(r"\.git/?$", "", text).rstrip("/")
    return text.lower()


def detect(cwd: Path | None = None) -> Project:
    start = (cwd or Path.cwd()).resolve()
    root = find_root(start)
    if root is not None:
        git_dir = _git_dir(root)
        url = remote_url(git_dir) if git_dir is not None else None
        if url:
            key = normalise_remote(url)
            return Project(name=key.rsplit("/", 1)[-1] or root.name, key=key, root=root)
        return Project(name=root.name, key=str(root), root=root)
    return Project(name=start.name or str(start), key=str(start), root=None)


def environment() -> dict[str, str]:
    os_name = {"win32": "windows", "cygwin": "windows"}.get(sys.platform, sys.platform)
    if os_name.startswith("linux"):
        os_name = "linux"
    arch = platform.machine().lower() or "unknown"
    arch = {"amd64": "x86_64", "aarch64": "arm64"}.get(arch, arch)
    return {
        "os": os_name,
        "arch": arch,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
