"""Bad input to the `jiyi` command (issue 15): a missing, binary or directory file, a binary or
deeply nested import, a full disk. Each prints its docs/spec.md §2 text, exits non-zero, prints no
traceback and leaves the store as it was."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jiyi.cli import main

from .test_cli import PATCH, ZLIB_FLAGS

CODED = re.compile(r"参数无效：(?P<field>[^：\n]+)：[^\n]+\n错误码：E_INVALID_ARGUMENT\n")
UNAVAILABLE = "记忆暂不可用\n错误码：E_UNAVAILABLE\n"


def run(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, prog_name="jiyi")


def records(home: Path) -> list[tuple[str, int]]:
    if not (home / "jiyi.db").exists():
        return []
    with sqlite3.connect(home / "jiyi.db") as db:
        return [(r[0], r[1]) for r in db.execute("SELECT hex, revision FROM records ORDER BY hex")]


def refused(home: Path, *args: str, field: str, input: bytes | str | None = None) -> None:
    before = records(home)
    result = run(*args, input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1, (args, result.output)
    match = CODED.fullmatch(result.stderr)
    assert match and match["field"] == field, result.stderr
    assert "Traceback" not in result.output
    assert records(home) == before


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"missing": tmp_path / "no-such-file", "binary": binary, "directory": folder}


@pytest.mark.parametrize("kind", ["missing", "binary", "directory"])
def test_a_fix_file_that_cannot_be_read_is_an_invalid_argument(
    jiyi_home: Path, files: dict[str, Path], kind: str
) -> None:
    assert run("note", *ZLIB_FLAGS, "--topic", "build/zlib").exit_code == 0
    path = str(files[kind])
    refused(jiyi_home, "note", *ZLIB_FLAGS, "--topic", "build/zlib", "--fix-diff", path, field="fix.diff")
    refused(
        jiyi_home, "note", *ZLIB_FLAGS, "--topic", "build/zlib", "--fix-config", "a.cfg", "--fix-content", path,
        field="fix.content",
    )  # fmt: skip
    refused(jiyi_home, "note", "--json", path, field="json")
    refused(jiyi_home, "note", *ZLIB_FLAGS[:-2], "--learned", "@" + path, field="content.learned")
    refused(jiyi_home, "import", path, field="import")


def test_binary_stdin_is_an_invalid_argument(jiyi_home: Path) -> None:
    blob = bytes(range(128, 256)) * 4
    refused(jiyi_home, "note", *ZLIB_FLAGS, "--fix-diff", "-", input=blob, field="fix.diff")
    refused(jiyi_home, "import", "-", input=blob, field="import")


def test_a_readable_fix_file_still_works(jiyi_home: Path, tmp_path: Path) -> None:
    patch = tmp_path / "fix.diff"
    patch.write_text(PATCH, encoding="utf-8")
    assert run("note", *ZLIB_FLAGS, "--fix-diff", str(patch)).exit_code == 0


@pytest.mark.parametrize("depth", [5000, 200_000])
def test_importing_deeply_nested_json_is_an_invalid_argument(jiyi_home: Path, tmp_path: Path, depth: int) -> None:
    assert run("note", *ZLIB_FLAGS).exit_code == 0
    exported = tmp_path / "export.jsonl"
    assert run("export", str(exported)).exit_code == 0
    line = exported.read_text(encoding="utf-8").splitlines()[0]
    deep = tmp_path / "deep.jsonl"
    deep.write_text(line[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}\n", encoding="utf-8")
    refused(jiyi_home, "import", str(deep), field="import")
    deep.write_text("[" * depth + "]" * depth + "\n", encoding="utf-8")
    refused(jiyi_home, "import", str(deep), field="import")
    deep.write_text('{"a": ' * depth + "1" + "}" * depth + "\n", encoding="utf-8")
    refused(jiyi_home, "import", str(deep), field="import")


# -- a full disk ---------------------------------------------------------------------------------
def _fill(folder: Path) -> None:
    """Take every free byte of ``folder``'s file system."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 512, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)


def _tmpfs(where: Path, size: str) -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


@pytest.mark.timeout(120)
def test_a_full_disk_during_note_is_unavailable_and_loses_nothing(tmp_path: Path) -> None:
    # A real full disk: a small tmpfs as JIYI_HOME (root may mount one; elsewhere this is skipped).
    # SQLite's max_page_count does not stand in: it fails the INSERT, not the COMMIT, and the bug
    # ("cannot rollback - no transaction is active") needs SQLite to have rolled back by itself.
    home = tmp_path / "small"
    if not _tmpfs(home, "2m"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        env = {**os.environ, "JIYI_HOME": str(home)}
        jiyi = [sys.executable, "-m", "jiyi"]
        first = subprocess.run([*jiyi, "note", *ZLIB_FLAGS, "--topic", "build/zlib"], env=env, capture_output=True)
        assert first.returncode == 0, first
        before = records(home)
        _fill(home)
        big = "ld: undefined symbol deflate " + "x" * 19000
        flags = [*ZLIB_FLAGS[:-8], "--what", big, *ZLIB_FLAGS[-6:]]
        for extra in ([], ["--topic", "build/zlib"]):
            done = subprocess.run([*jiyi, "note", *flags, *extra], env=env, capture_output=True, timeout=60)
            assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", UNAVAILABLE)
        (home / "filler").unlink()
        assert records(home) == before
        with sqlite3.connect(home / "jiyi.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)
