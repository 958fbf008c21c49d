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
from typing import TYPE_CHECKING

from . import git_head

if TYPE_CHECKING:
    from .records import Reproduction


@dataclass(frozen=True)
class Project:
    """The project a session works in: the name shown in ``source:`` lines, and the key it is
    matched by (detected from the working folder's git remote when not given)::

        session = memory.session(project=jiyi.Project(name="zlib", key="github.com/madler/zlib"))
    """

    name: str  # shown in `source:` lines, e.g. zlib-port
    key: str  # identity: normalised remote URL, else the folder path
    root: Path | None = None


def _git_dir(root: Path) -> Path | None:
    found = git_head.git_dir(str(root))
    return Path(found) if found is not None else None


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


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD names (``git_head.head_commit``); None on an unborn branch."""
    return git_head.head_commit(str(git_dir))


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


def reproduction_at(command: str | None, point: str | None) -> Reproduction | None:
    """How to meet a failure of ``command`` again from where it failed (``point``, the JSON of
    ``git_head.failure_point``): where to clone from (the checkout's remote URL, else its top
    folder), the commit and the folder; None without a command or a point."""
    if command is None or point is None:
        return None
    import json

    from .analysis.redact import redact
    from .records import Reproduction

    try:
        where = json.loads(point)
        top, commit, cwd = str(where["top"]), str(where["commit"]), str(where["cwd"])
    except (ValueError, KeyError, TypeError):
        return None
    git_dir = _git_dir(Path(top))
    repo = (remote_url(git_dir) if git_dir is not None else None) or top
    return Reproduction(command, redact(repo), commit, cwd)


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
