"""What ``jiyi doctor`` checks, as data: every setting with where it came from, what the agents on
this machine are told of jiyi, whether the team server answers, and the store's health. The command
prints it; the review page (``jiyi ui``, its health page) shows it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from . import config as config_module
from . import project
from .errors import JiyiError

if TYPE_CHECKING:
    from .memory import Memory


def settings_rows(memory: Memory) -> list[dict[str, object]]:
    """Every setting with its value and where it came from (``default`` when nothing set it)."""
    _, sources = config_module.sourced(project.find_root(memory.cwd.resolve()))
    rows = []
    for key in config_module.Settings.__slots__:
        value = getattr(memory.settings, key)
        shown: object = "(set)" if key == "team_token" and value else str(value) if isinstance(value, Path) else value
        rows.append({"key": key, "value": shown, "source": sources.get(key, "default")})
    return rows


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _claude_mcp(home: Path) -> bool:
    try:
        data = json.loads(_read(home / ".claude.json") or "{}")
    except ValueError:
        return False
    tables = [
        data.get("mcpServers") or {},
        *((p or {}).get("mcpServers") or {} for p in (data.get("projects") or {}).values()),
    ]
    return any("jiyi" in table for table in tables if isinstance(table, dict))


def integrations() -> dict[str, object]:
    """What this machine's agents are told of jiyi, as far as their files show (docs/agents.md)."""
    home = Path.home()
    plugins = _read(home / ".claude" / "plugins" / "installed_plugins.json")
    plugin = '"jiyi@' in plugins
    claude_hooks = any(
        "jiyi hook" in _read(p) for p in (home / ".claude" / "settings.json", Path(".claude/settings.json"))
    )
    codex = _read(home / ".codex" / "config.toml")
    gemini = _read(home / ".gemini" / "settings.json")
    return {
        "jiyi_on_path": shutil.which("jiyi"),
        "claude_code": {"plugin": plugin, "mcp": plugin or _claude_mcp(home), "hooks": plugin or claude_hooks},
        "codex": {
            "mcp": "[mcp_servers.jiyi]" in codex,
            "hooks": "jiyi hook codex" in codex + _read(home / ".codex" / "hooks.json"),
        },
        "gemini": {"mcp": "jiyi" in gemini and "mcp" in gemini, "hooks": "jiyi hook gemini" in gemini},
    }


def team_check(memory: Memory) -> dict[str, object] | None:
    """Whether the team server answers, and takes this machine's token (a pull of nothing)."""
    settings = memory.settings
    if not settings.team:
        return None
    try:
        from .team.client.http import TeamClient
    except ImportError:
        return {"url": settings.team_url, "answers": False, "error": "the team extra is not installed"}
    try:
        with TeamClient.from_settings(settings) as client:
            client.changes(0, 1)  # authenticated: a refused token says so here
        return {"url": settings.team_url, "answers": True, "token": "accepted"}
    except JiyiError as exc:
        return {
            "url": settings.team_url,
            "answers": False,
            "error": f"{exc.code}: {getattr(exc, 'reason', '') or exc.message}",
        }


def terms_version() -> int:
    """The version of the full-text terms this code derives."""
    from .analysis.lexical import VERSION

    return VERSION


def store_health(memory: Memory) -> dict[str, object]:
    """The store's part of the report: migrations applied and pending, the problems an integrity
    check finds, records, the versions of the full-text terms and of the key-line rules the records
    were signed with, the queue of automatic records; ``ok``."""
    from .store.sqlite.store import SQLiteStore

    report: dict[str, object] = {"ok": False}
    try:
        store = memory.store
        report["migrations"] = [{"name": n, "applied_at": a} for n, a in store.applied_migrations()]
        # Normally none (opening migrates): listed for a store that could not apply them.
        report["pending_migrations"] = store.pending_migrations()
        problems = store.integrity_check()
        report["problems"] = problems
        report["records"] = store.count()
        version, left = store.lexical_state()
        report["lexical"] = {"version": version, "current": terms_version(), "left": left}
        from .analysis.indexing import SIGNATURE_VERSION

        version, left = store.signature_state()
        report["signatures"] = {"version": version, "current": SIGNATURE_VERSION, "left": left}
        if isinstance(store, SQLiteStore):
            # Written by a detached finisher after the hook (capture/finisher.py); a row given up on
            # stays for inspection.
            waiting, given_up = store.auto_record_queue()
            report["auto_records_queued"] = {"waiting": waiting, "given_up": given_up}
        report["ok"] = not problems
    except JiyiError as exc:
        report["problems"] = [getattr(exc, "reason", "") or exc.message]
    return report
