from __future__ import annotations

from pathlib import Path

import pytest

from jiyi import project


def _repo(root: Path, url: str | None) -> Path:
    (root / ".git").mkdir(parents=True)
    body = "[core]\n\tbare = false\n"
    if url:
        body += f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (root / ".git" / "config").write_text(body)
    return root


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:madler/zlib.git",
        "https://github.com/madler/zlib",
        "ssh://git@github.com/madler/zlib.git",
        "https://user@github.com/madler/zlib.git/",
    ],
)
def test_clones_of_one_remote_are_one_project(tmp_path: Path, url: str) -> None:
    root = _repo(tmp_path / "checkout-elsewhere", url)
    (root / "src" / "deep").mkdir(parents=True)
    found = project.detect(root / "src" / "deep")
    assert found.key == "github.com/madler/zlib"
    assert found.name == "zlib"
    assert found.root == root.resolve()


def test_repository_without_remote_uses_its_folder(tmp_path: Path) -> None:
    root = _repo(tmp_path / "zlib-port", None)
    assert project.detect(root).name == "zlib-port"


def test_plain_folder(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    found = project.detect(folder)
    assert (found.name, found.root) == ("scratch", None)


def test_environment_facts() -> None:
    env = project.environment()
    assert set(env) == {"os", "arch", "python"}
    assert env["os"] in {"linux", "darwin", "windows"} or env["os"]
