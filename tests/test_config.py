from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jiyi import config
from jiyi.errors import SettingError


def test_defaults_need_no_file(jiyi_home: Path) -> None:
    settings = config.load()
    assert settings.home == jiyi_home
    assert settings.notes is True
    assert settings.read_budget == 20000
    assert settings.locale == "zh"
    assert settings.store_path == jiyi_home / "jiyi.db"


def test_user_file_then_project_file_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("notes = false\nread_budget = 100\nlocale = 'en'\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".jiyi.toml").write_text("[jiyi]\nread_budget = 200\n")
    settings = config.load(project)
    assert (settings.notes, settings.read_budget, settings.locale) == (False, 200, "en")
    monkeypatch.setenv("JIYI_NOTES", "true")
    monkeypatch.setenv("JIYI_READ_BUDGET", "300")
    monkeypatch.setenv("JIYI_SESSION_ID", "abc")
    settings = config.load(project)
    assert (settings.notes, settings.read_budget, settings.session_id) == (True, 300, "abc")


@pytest.mark.parametrize(("var", "value"), [("JIYI_NOTES", "maybe"), ("JIYI_READ_BUDGET", "-1"), ("JIYI_LOCALE", "fr")])
def test_bad_values_name_the_setting(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingError) as info:
        config.load()
    assert info.value.source == var


def test_broken_toml_is_reported() -> None:
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("notes = = false")
    with pytest.raises(SettingError) as info:
        config.load()
    assert info.value.key == "config"


def test_claude_code_session_id_names_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "cc-123")
    assert config.load().session_id == "cc-123"
    monkeypatch.setenv("JIYI_SESSION_ID", "explicit")
    assert config.load().session_id == "explicit"


def test_settings_are_read_only_and_replace_makes_a_changed_copy(jiyi_home: Path) -> None:
    settings = config.Settings(read_budget=100)
    with pytest.raises(AttributeError):
        settings.notes = False  # type: ignore[misc]
    changed = settings.replace(notes=False, team_url="https://jiyi.example.com", team_token="t")
    assert (changed.notes, changed.read_budget, changed.team) == (False, 100, True)
    assert (settings.notes, settings.team) == (True, False)
    assert settings.home == jiyi_home and changed.home == jiyi_home
    assert changed.replace(notes=True, team_url=None, team_token=None) == settings
    assert changed != settings and hash(settings) == hash(config.Settings(read_budget=100))
    assert repr(settings).startswith(f"Settings(home={jiyi_home!r}, notes=True, read_budget=100,")
    with pytest.raises(TypeError):
        settings.replace(budget=1)
    import copy
    import pickle

    assert copy.copy(changed) == changed and pickle.loads(pickle.dumps(changed)) == changed


def _imported_by_load(tmp_path: Path, config_dir: Path) -> list[str]:
    """The heavy modules a fresh interpreter has imported after ``config.load()`` (the hook's way)."""
    code = (
        "import sys, jiyi.config as c; s = c.load(); print(s.read_budget); "
        "print(' '.join(m for m in ('tomllib', 'tomli', 'dataclasses', 'typing') if m in sys.modules))"
    )
    env = {"PATH": os.environ.get("PATH", ""), "JIYI_HOME": str(tmp_path / "home"), "JIYI_CONFIG_DIR": str(config_dir)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    budget, modules = done.stdout.split("\n")[:2]
    return [budget, *modules.split()]


def test_toml_is_parsed_only_when_a_file_exists(tmp_path: Path) -> None:
    # Settings are read on every hook event: without a file, no TOML parser nor dataclasses.
    assert _imported_by_load(tmp_path, tmp_path / "no-config") == ["20000"]
    (tmp_path / "config").mkdir()
    # A flat file, as users write them: read without tomllib (toml_flat).
    (tmp_path / "config" / "config.toml").write_text("# mine\n[jiyi]\nread_budget = 123\nlocale = 'zh'\n")
    assert _imported_by_load(tmp_path, tmp_path / "config") == ["123"]
    # Anything past that subset is tomllib's to read.
    (tmp_path / "config" / "config.toml").write_text("read_budget = 1_234\n")
    budget, *modules = _imported_by_load(tmp_path, tmp_path / "config")
    assert budget == "1234" and {"tomllib", "tomli"} & set(modules)
    assert "dataclasses" not in modules


def test_an_unreadable_settings_file_is_reported(tmp_path: Path) -> None:
    config.user_config_path().mkdir(parents=True)  # a folder where the file should be
    with pytest.raises(SettingError) as info:
        config.load()
    assert info.value.key == "config"


def test_a_bad_setting_is_one_line_naming_the_key_its_source_and_the_allowed_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jiyi.errors import SettingError

    monkeypatch.setenv("JIYI_LOCALE", "fr")
    with pytest.raises(SettingError) as info:
        config.load()
    assert (info.value.key, info.value.source, info.value.allowed) == ("locale", "JIYI_LOCALE", "zh, en")
    assert info.value.code == "E_UNAVAILABLE"
    monkeypatch.delenv("JIYI_LOCALE")
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text('notes = "maybe"\n')
    with pytest.raises(SettingError) as info:
        config.load()
    assert info.value.source == str(config.user_config_path()) and "true, false" in info.value.allowed
    config.user_config_path().write_text("team_url = 'team.internal:8080'\n")
    with pytest.raises(SettingError) as info:
        config.load()
    assert info.value.key == "team_url" and "http:// or https://" in info.value.text()


def test_an_unknown_setting_is_warned_about_with_the_closest_known_one(capsys: pytest.CaptureFixture[str]) -> None:
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("nots = false\n")
    assert config.load().notes is True  # ignored, not guessed
    err = capsys.readouterr().err
    assert "unknown setting 'nots'" in err and "did you mean 'notes'?" in err
