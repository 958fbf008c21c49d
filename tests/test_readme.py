"""The README's CLI tour runs as written: same commands, same output up to ids, dates and the
machine's environment facts (sqlite-utils' tests/test_docs.py does the same for its docs)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from jiyi.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
_ID = re.compile(r"lr_[0-9a-f]{32}")
_DATE = re.compile(r"\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b")
_ENV = re.compile(r"environment \S+ \(")


def tour() -> list[tuple[str, str]]:
    block = README.read_text(encoding="utf-8").split("```console\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return [(command, "\n".join(out)) for command, out in steps]


def test_readme_tour_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    monkeypatch.chdir(folder)
    steps = tour()
    assert len(steps) >= 5
    ids: dict[str, str] = {}  # README id -> id of this run, so later commands name the same record

    def mask(text: str) -> str:
        text = _DATE.sub("<date>", text)
        return _ENV.sub("environment <env> (", text)

    runner = CliRunner()
    for command, expected in steps:
        argv = shlex.split(command)
        assert argv[0] == "jiyi"
        argv = [ids.get(a, a) for a in argv[1:]]
        result = runner.invoke(main, argv, catch_exceptions=False)
        got = (result.output).rstrip("\n")
        for theirs, ours in zip(_ID.findall(expected), _ID.findall(got), strict=False):
            if theirs != "lr_" + "0" * 32:
                ids.setdefault(theirs, ours)
        for theirs, ours in ids.items():
            expected = expected.replace(theirs, ours)
        assert mask(got) == mask(expected), command
