"""`make` as the README says it: in the active virtual environment, else in a .venv it creates."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def _dry_run(folder: Path, **env: str) -> str:
    shutil.copy(ROOT / "Makefile", folder / "Makefile")
    clean = {"PATH": "/usr/bin:/bin", **env}
    done = subprocess.run(["make", "-n", "check"], cwd=folder, capture_output=True, text=True, env=clean, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_uses_the_active_virtual_environment(tmp_path: Path) -> None:
    venv = Path(sys.prefix)  # the interpreter running the tests: a virtual environment on CI
    out = _dry_run(tmp_path, VIRTUAL_ENV=str(venv))
    assert f"{venv}/bin/ruff check src tests" in out and f"{venv}/bin/pytest" in out
    assert "python3 -m venv" not in out or not (venv / "bin" / "python").exists()


def test_make_without_a_virtual_environment_creates_dot_venv_first(tmp_path: Path) -> None:
    out = _dry_run(tmp_path)
    assert out.splitlines()[0].startswith("python3 -m venv .venv && .venv/bin/python -m pip install -e")
    assert ".venv/bin/ruff check src tests" in out
