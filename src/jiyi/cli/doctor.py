"""``jiyi doctor``: the settings in force and where each came from, the agent integrations it can
see (is ``jiyi`` on PATH, is it registered, are the hooks wired), the team server, and the store
(migrations, integrity, search terms, the queue of automatic records); ``--fix`` retires what older
versions recorded as a fix while the agent only looked (``capture/curation.py``)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from .. import config as config_module
from .. import project
from ..config import user_config_path
from ..errors import JiyiError, SettingError, Unavailable
from ..memory import Memory
from ..store.sqlite.store import SQLiteStore
from . import _locale
from .common import emit_json, json_option
from .data import _lexical_line, _terms_version


@click.command("doctor")
@click.option(
    "--fix",
    "fix",
    is_flag=True,
    help="Retire automatic records whose fix only read (ls, cat, git status…), as older versions wrote "
    "them: forgotten (jiyi restore ID brings one back), on the team too.",
)
@json_option
def doctor_command(fix: bool, as_json: bool) -> None:
    """Check the settings (each with where it came from), the agents' integration, the team server
    and the store: its path, the migrations applied and pending, and an integrity check."""
    try:
        memory = Memory()
    except SettingError as exc:
        _bad_setting(exc, as_json)
        return
    fixed = _retire(memory, as_json) if fix else None
    path = memory.settings.store_path
    config = user_config_path()
    report: dict[str, object] = {
        "home": str(memory.settings.home),
        "config": str(config),
        "config_exists": config.is_file(),
        "store": str(path),
        "settings": _settings(memory),
        "integrations": _integrations(),
        "team": _team(memory),
        "ok": False,
    }
    if fixed is not None:
        report["fixed"] = fixed
    try:
        store = memory.store
        report["migrations"] = [{"name": n, "applied_at": a} for n, a in store.applied_migrations()]
        # Normally none (opening migrates): listed for a store that could not apply them.
        report["pending_migrations"] = store.pending_migrations()
        problems = store.integrity_check()
        report["problems"] = problems
        report["records"] = store.count()
        version, left = store.lexical_state()
        report["lexical"] = {"version": version, "current": _terms_version(), "left": left}
        if isinstance(store, SQLiteStore):
            # Written by a detached finisher after the hook (capture/finisher.py); a row given up on
            # stays for inspection.
            waiting, given_up = store.auto_record_queue()
            report["auto_records_queued"] = {"waiting": waiting, "given_up": given_up}
        report["ok"] = not problems
    except JiyiError as exc:
        report["problems"] = [getattr(exc, "reason", "") or exc.message]
    finally:
        memory.close()
    if as_json:
        emit_json(report)
    else:
        click.echo(f"home: {report['home']}")
        click.echo(f"config: {config}" + ("" if report["config_exists"] else " (none: defaults)"))
        click.echo(f"store: {report['store']}")
        _echo_context(report)
        for m in report.get("migrations", []):  # type: ignore[attr-defined]
            click.echo(f"migration {m['name']} applied {m['applied_at']}")
        for name in report.get("pending_migrations", []):  # type: ignore[attr-defined]
            click.echo(f"migration {name} pending")
        if "records" in report:
            click.echo(f"records: {report['records']}")
        if "lexical" in report:
            click.echo(_lexical_line(report["lexical"]))  # type: ignore[arg-type]
        queued = report.get("auto_records_queued")
        if isinstance(queued, dict) and (queued["waiting"] or queued["given_up"]):
            click.echo(
                f"automatic records queued: {queued['waiting']} waiting, {queued['given_up']} given up "
                "(the next hook event finishes the waiting ones)"
            )
        for problem in report["problems"]:  # type: ignore[attr-defined]
            click.echo(f"problem: {problem}")
        click.echo("ok" if report["ok"] else Unavailable().first_line(memory.settings.locale))
    if not report["ok"]:
        sys.exit(1)


def _bad_setting(exc: SettingError, as_json: bool) -> None:
    """``doctor`` when a setting cannot be used: which, from where, and what it may be."""
    config = user_config_path()
    if as_json:
        setting = {"key": exc.key, "value": exc.value, "source": exc.source, "allowed": exc.allowed}
        emit_json({"config": str(config), "ok": False, "setting": setting, "problems": [exc.detail]})
    else:
        click.echo(f"config: {config}" + ("" if config.is_file() else " (none: defaults)"))
        english = _locale() == "en"
        click.echo(f"problem: {exc.detail_en if english else exc.detail}")
        click.echo(exc.first_line("en" if english else "zh"))
    sys.exit(1)


def _retire(memory: Memory, as_json: bool) -> dict[str, object]:
    """``doctor --fix``: retire what capture before the same-operation rule recorded as a fix
    (``capture/curation.py``), and tell the team when one was pushed."""
    from ..capture.curation import retire

    try:
        done = retire(memory.store)
    except JiyiError as exc:
        click.echo(f"doctor --fix: {exc.message}", err=True)
        return {"error": exc.code}
    if done.retired and memory.settings.team and isinstance(memory.store, SQLiteStore):
        try:
            from ..team.client import forget
            from ..team.client.http import TeamClient

            with TeamClient.from_settings(memory.settings) as client:
                forget.send(memory.store, client)
        except (ImportError, JiyiError) as exc:  # queued: the next sync sends it
            reason = exc.code if isinstance(exc, JiyiError) else "the team extra is not installed"
            click.echo(f"the team server is told on the next sync ({reason})", err=True)
    if not as_json:
        click.echo(
            f"fix: {len(done.retired)} of {done.checked} automatic records retired (their fix only read)"
            + ("; jiyi restore ID brings one back" if done.retired else "")
        )
        for record in done.retired:
            click.echo(f"  retired {record.id}  {record.title}")
    return {"checked": done.checked, "retired": [r.id for r in done.retired]}


def _settings(memory: Memory) -> list[dict[str, object]]:
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


def _integrations() -> dict[str, object]:
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


def _team(memory: Memory) -> dict[str, object] | None:
    """Whether the team server answers, and takes this machine's token (a pull of nothing)."""
    settings = memory.settings
    if not settings.team:
        return None
    try:
        from ..team.client.http import TeamClient
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


def _echo_context(report: dict[str, object]) -> None:
    for row in report["settings"]:  # type: ignore[attr-defined]
        click.echo(f"setting {row['key']} = {row['value']!r} ({row['source']})")
    found = report["integrations"]
    assert isinstance(found, dict)
    if found["jiyi_on_path"]:
        click.echo(f"jiyi on PATH: {found['jiyi_on_path']}")
    else:
        click.echo(
            "jiyi on PATH: no — agents start `jiyi mcp` and `jiyi hook` by name and fail with ENOENT; "
            "install with pipx or uv tool, or put this environment's bin folder on PATH"
        )
    for agent in ("claude_code", "codex", "gemini"):
        state = found[agent]
        parts = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in state.items())
        click.echo(f"{agent.replace('_', ' ')}: {parts}")
    team = report.get("team")
    if isinstance(team, dict):
        answer = "answers, token accepted" if team.get("answers") else f"does not answer: {team.get('error')}"
        click.echo(f"team server {team['url']}: {answer}")


COMMANDS = [doctor_command]
