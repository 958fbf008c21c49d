"""Settings: defaults, then the user's TOML file, then the project's file, then ``JIYI_*`` variables.

No file is needed for the defaults. The user file is ``config.toml`` in the platform config dir
(``JIYI_CONFIG_DIR`` moves it); the project file is ``.jiyi.toml`` in the project's root folder.
``JIYI_HOME`` moves all data (the store), as ``LLM_USER_PATH`` does for llm.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import SettingError

# The hook reads the settings on every tool call (docs/spec.md §8: ≤ 50 ms an event): dataclasses (with
# inspect), typing and tomllib cost it ~12 ms together (`python -X importtime`), so Settings is a
# plain class, TOML is parsed only when a file exists, and a flat file without tomllib
# (``toml_flat``). mypy reads this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROJECT_FILE = ".jiyi.toml"
LOCALES = ("zh", "en")
TEAM_PUSH = ("all", "global", "none")  # which of this machine's notes go to the team server
# Only the user's file and the environment may name a team server and its token: a project file
# comes with the repository, and one naming its own server would receive the user's token and notes.
_USER_ONLY = ("team_url", "team_token")
# Each setting and how a value from a file or the environment is read.
_KINDS = {
    "home": "Path",
    "notes": "bool",
    "read_budget": "int",
    "session_id": "str",
    "locale": "str",
    "busy_timeout_ms": "int",
    "auto_records": "bool",
    "team_url": "str",
    "team_token": "str",
    "team_push": "str",
}


class Settings:
    """The settings in force; read-only, a changed copy comes from :meth:`replace`. :func:`load`
    reads them from the files and ``JIYI_*`` variables; a caller may also give them outright::

        memory = jiyi.Memory(settings=jiyi.Settings(notes=False, read_budget=5000))
    """

    __slots__ = tuple(_KINDS)
    home: Path
    notes: bool
    read_budget: int
    session_id: str | None
    locale: str
    busy_timeout_ms: int
    auto_records: bool
    team_url: str | None
    team_token: str | None
    team_push: str

    def __init__(
        self,
        home: Path | None = None,  # None: the default (JIYI_HOME, else the platform's data folder)
        notes: bool = True,
        read_budget: int = 20000,
        session_id: str | None = None,
        locale: str = "zh",
        # Milliseconds a writer waits for another process's lock before the store reports
        # E_UNAVAILABLE; long enough for a burst of concurrent notes, short enough for a hook.
        busy_timeout_ms: int = 5000,
        auto_records: bool = True,
        team_url: str | None = None,  # e.g. https://jiyi.example.com (docs/team-protocol.md)
        team_token: str | None = None,
        team_push: str = "all",
    ) -> None:
        values = (
            default_home() if home is None else home,
            notes,
            read_budget,
            session_id,
            locale,
            busy_timeout_ms,
            auto_records,
            team_url,
            team_token,
            team_push,
        )
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Settings are read-only: use replace({name}=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Settings are read-only")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def __reduce__(self) -> tuple[type[Settings], tuple[Any, ...]]:
        # copy and pickle rebuild through __init__ (the slots are read-only); the order of the
        # slots is the order of __init__'s parameters.
        return Settings, self._values()

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (setting names as keywords)."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        return Settings(**{name: changes.get(name, getattr(self, name)) for name in self.__slots__})

    @property
    def team(self) -> bool:
        """A team server is configured."""
        return bool(self.team_url and self.team_token)

    @property
    def store_path(self) -> Path:
        return self.home / "jiyi.db"


def default_home() -> Path:
    env = os.environ.get("JIYI_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("jiyi", appauthor=False))


def cache_dir() -> Path:
    """Where a process without a home (the team server) keeps what it can build again."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("jiyi", appauthor=False))


def config_dir() -> Path:
    env = os.environ.get("JIYI_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("jiyi", appauthor=False))


def user_config_path() -> Path:
    return config_dir() / "config.toml"


_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off"}


_ALLOWED = {
    "bool": "true, false (or 1/0, yes/no, on/off)",
    "int": "a whole number, 0 or more",
    "Path": "a folder",
    "str": "text",
}


def allowed(name: str) -> str:
    """What setting ``name`` may be, as an error names it."""
    if name == "locale":
        return ", ".join(LOCALES)
    if name == "team_push":
        return ", ".join(TEAM_PUSH)
    if name == "team_url":
        return "an http:// or https:// URL"
    return _ALLOWED[_KINDS[name]]


def _coerce(name: str, value: Any, source: str) -> Any:
    kind = _KINDS[name]
    try:
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _BOOL_TRUE:
                return True
            if text in _BOOL_FALSE:
                return False
            raise ValueError(value)
        if kind == "int":
            if isinstance(value, bool):
                raise ValueError(value)
            number = int(value)
            if number < 0:
                raise ValueError(value)
            return number
        if kind == "Path":
            return Path(str(value)).expanduser()
        if name == "locale" and str(value) not in LOCALES:
            raise ValueError(value)
        if name == "team_push" and str(value) not in TEAM_PUSH:
            raise ValueError(value)
        if name == "team_url" and value not in (None, "") and not str(value).startswith(("http://", "https://")):
            raise ValueError(value)
        return None if value in (None, "") else str(value)
    except (TypeError, ValueError):
        raise SettingError(name, value, source, allowed(name)) from None


def _from_mapping(settings: Settings, data: dict[str, Any], source: str | dict[str, str]) -> Settings:
    """``data``'s settings over ``settings``; ``source`` names where they came from (a file, or
    each setting's variable). A key no setting has is warned about on stderr, with the closest."""
    updates = {}
    for key, value in data.items():
        where = source[key] if isinstance(source, dict) else source
        if key in _KINDS:
            updates[key] = _coerce(key, value, where)
        else:
            _unknown(key, where)
    return settings.replace(**updates) if updates else settings


def _unknown(key: str, source: str) -> None:
    import difflib
    import sys

    close = difflib.get_close_matches(key, list(_KINDS), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(_KINDS)}"
    print(f"jiyi: unknown setting {key!r} in {source}, ignored{hint}", file=sys.stderr)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}  # the common case: no file, and no TOML parser is imported
    except OSError as exc:
        raise SettingError("config", None, str(path), f"a readable TOML file ({exc.strerror or exc})") from None
    from .toml_flat import parse

    text = raw.decode()  # as tomllib.load does: not UTF-8 is an error of its own
    data = parse(text)  # the flat files users write, without tomllib's ~8 ms of imports
    if data is None:
        import sys

        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - exercised on 3.10 only
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SettingError("config", None, str(path), f"TOML ({exc})") from None
    # Both a flat file and a [jiyi] table are accepted; the table wins.
    table = data.get("jiyi")
    return dict(table) if isinstance(table, dict) else data


def load(project_root: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    return sourced(project_root, environ)[0]


def sourced(project_root: Path | None = None, environ: dict[str, str] | None = None) -> tuple[Settings, dict[str, str]]:
    """The settings as :func:`load` reads them, and where each one that is not a default came
    from (a file's path, a variable's name): what ``jiyi doctor`` shows."""
    env = os.environ if environ is None else environ
    settings = Settings()
    sources: dict[str, str] = {}
    user_file = user_config_path()
    layers: list[tuple[dict[str, Any], str | dict[str, str]]] = [(_read_toml(user_file), str(user_file))]
    if project_root is not None:
        project_file = project_root / PROJECT_FILE
        shared = {k: v for k, v in _read_toml(project_file).items() if k not in _USER_ONLY}
        layers.append((shared, str(project_file)))
    variables = {name: f"JIYI_{name.upper()}" for name in _KINDS}
    from_env = {name: env[var] for name, var in variables.items() if env.get(var)}
    # Claude Code starts a plugin's MCP server with the conversation's id in CLAUDE_CODE_SESSION_ID,
    # the same id its hooks receive as session_id: with it the server meets the hooks' failures.
    if "session_id" not in from_env and env.get("CLAUDE_CODE_SESSION_ID"):
        from_env["session_id"] = env["CLAUDE_CODE_SESSION_ID"]
        variables["session_id"] = "CLAUDE_CODE_SESSION_ID"
    layers.append((from_env, variables))
    for data, source in layers:
        settings = _from_mapping(settings, data, source)
        sources.update({k: source[k] if isinstance(source, dict) else source for k in data if k in _KINDS})
    return settings, sources
