from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def jiyi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test touches the real home: every one gets its own store and config."""
    home = tmp_path / "jiyi-home"
    monkeypatch.setenv("JIYI_HOME", str(home))
    monkeypatch.setenv("JIYI_CONFIG_DIR", str(tmp_path / "jiyi-config"))
    for name in ("JIYI_NOTES", "JIYI_READ_BUDGET", "JIYI_SESSION_ID", "JIYI_LOCALE", "CLAUDE_CODE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    yield home
