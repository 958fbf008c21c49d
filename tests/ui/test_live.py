"""Where no browser is installed the browser tests skip with the reason, except in CI, where they fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import live


def test_a_missing_browser_skips_here_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(live, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no browser at .*no-chromium"):
        live.required()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI runs the browser tests"):
        live.required()
