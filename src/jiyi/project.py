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
