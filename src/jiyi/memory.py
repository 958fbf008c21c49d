"""``jiyi.Memory``: opens the store and hands out sessions.

The store opens lazily and is retried on the next call after a failure, so a server started while
the store was locked or broken recovers without a restart and answers ``记忆暂不可用`` meanwhile.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from . import config, project
from .analysis import glossary
from .config import Settings
from .project import Project
from .session import Session
from .store.base import Store


class Memory:
    """The memory of this machine: opens the store (in ``home``, else the settings' home) and
    hands out sessions::

        with jiyi.Memory() as memory:
            session = memory.session(project="zlib-port")
    """

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        store: Store | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        if settings is None:
            settings = config.load(project.find_root(self.cwd.resolve()))
        if home is not None:
            settings = settings.replace(home=Path(home))
        self.settings = settings
        self._store = store
        glossary.use(str(settings.home / "cache"))
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                from .store.sqlite.store import SQLiteStore

                self._store = SQLiteStore(self.settings.store_path, busy_timeout_ms=self.settings.busy_timeout_ms)
            return self._store

    def session(
        self,
        project: str | Project | None = None,
        env: dict[str, str] | None = None,
        session_id: str | None = None,
    ) -> Session:
        if project is None:
            found = _detect(self.cwd)
        elif isinstance(project, str):
            found = self.project(project)
        else:
            found = project
        return Session(self, found, env if env is not None else _environment(), session_id)

    def project(self, name: str) -> Project:
        """The project a name stands for (``session(project=…)``, ``--project``): a project's key
        as detected (``github.com/madler/zlib``, a folder's path), or its readable name
        (``zlib-port``) when one project of this store has it. Two projects of one folder name
        (two checkouts without a remote) stay apart: the name is then ambiguous and their keys
        are asked for. A name no project has yet is a new project of that key."""
        from .errors import InvalidArgument, Unavailable

        try:
            keys = self.store.project_keys(name)
        except Unavailable:  # a store that cannot open now: the name is the key, as it always was
            keys = []
        if len(keys) == 1:
            return Project(name=name, key=keys[0])
        if len(keys) > 1 and name not in keys:
            listed = ", ".join(keys[:5])
            raise InvalidArgument("project", f"{len(keys)} projects are named {name}: give one's key ({listed})")
        return Project(name=name.rstrip("/").rsplit("/", 1)[-1] or name, key=name)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _detect(cwd: Path) -> Project:
    return project.detect(cwd)


def _environment() -> dict[str, str]:
    return project.environment()
