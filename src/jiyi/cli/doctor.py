"""``jiyi doctor``: the settings in force and where each came from, the agent integrations it can
see (is ``jiyi`` on PATH, is it registered, are the hooks wired), the team server, and the store
(migrations, integrity, search terms, the queue of automatic records); ``--fix`` retires what older
versions recorded as a fix while the agent only looked (``capture/curation.py``)."""

from __future__ import annotations

import sys

import click

from ..config import user_config_path
from ..diagnosis import integrations, settings_rows, store_health, team_check
from ..errors import JiyiError, SettingError, Unavailable
from ..memory import Memory
from ..store.sqlite.store import SQLiteStore
from . import _locale
from .common import emit_json, json_option
from .data import _lexical_line, _signature_line


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
        "settings": settings_rows(memory),
        "integrations": integrations(),
        "team": team_check(memory),
        "ok": False,
    }
    if fixed is not None:
        report["fixed"] = fixed
    try:
        report.update(store_health(memory))
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
        if "signatures" in report:
            click.echo(_signature_line(report["signatures"]))  # type: ignore[arg-type]
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
