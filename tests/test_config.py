from __future__ import annotations

from pathlib import Path

import pytest

from jiyi import config
from jiyi.errors import InvalidArgument


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
    with pytest.raises(InvalidArgument):
        config.load()


def test_broken_toml_is_reported() -> None:
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("notes = = false")
    with pytest.raises(InvalidArgument) as info:
        config.load()
    assert info.value.field == "config"


def test_claude_code_session_id_names_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "cc-123")
    assert config.load().session_id == "cc-123"
    monkeypatch.setenv("JIYI_SESSION_ID", "explicit")
    assert config.load().session_id == "explicit"
