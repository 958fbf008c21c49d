"""A note written while a failure is pending in a git repository keeps how to meet it again; the
store, export and import keep it and the replay runs; memory_read shows the 核验 line."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

import jiyi
from jiyi import transfer
from jiyi.analysis.indexing import derive
from jiyi.project import checkout_point, head_commit
from jiyi.records import Fix, Record, Reproduction, Verification, checked_by
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.tools import formats

from .helpers import CHECK_PY, MYLIB_DIFF, MYLIB_ERROR, git, git_repo

CONTENT = {"what": MYLIB_ERROR, "why": "never added", "where": "mylib.py", "learned": "add mylib.py"}
FIX = {"kind": "diff", "diff": MYLIB_DIFF}


def fail_and_note(cwd: Path, command: str | None = "python3 check.py", **note: object) -> Record:
    with jiyi.Memory(cwd=cwd) as memory:
        session = memory.session(session_id=f"s-repro-{cwd.name}")
        session.observe_tool_result("Bash", ok=False, error=f"Traceback …\n{MYLIB_ERROR}", command=command)
        args = {"title": "mylib is missing", "type": "bugfix", "scope": "project", "content": CONTENT, "fix": FIX}
        saved = session.note(**{**args, **note})
        stored = memory.store.get(saved.record.hex)
    assert stored is not None
    return stored


def test_a_note_in_a_git_repository_keeps_the_failing_command_repo_commit_and_folder(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    commit = git_repo(repo, {"check.py": CHECK_PY, "sub/README": "x\n"})
    record = fail_and_note(repo / "sub")
    assert record.reproduction == Reproduction("python3 check.py", str(repo.resolve()), commit, "sub")


def test_the_remote_url_is_where_to_clone_from(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    commit = git_repo(repo, {"check.py": CHECK_PY})
    git(repo, "remote", "add", "origin", "https://git.example.com/team/proj.git")
    assert fail_and_note(repo).reproduction == Reproduction(
        "python3 check.py", "https://git.example.com/team/proj.git", commit, ""
    )


def test_no_reproduction_outside_git_or_without_a_failing_command(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert fail_and_note(plain).reproduction is None
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    assert fail_and_note(repo, command=None).reproduction is None


def test_no_reproduction_for_a_note_about_something_else(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    content = {"what": "we pick tabs", "why": "house style", "where": "editorconfig", "learned": "tabs"}
    record = fail_and_note(repo, type="decision", content=content, fix=None)
    assert record.reproduction is None


def test_secrets_are_redacted_from_the_command_and_the_remote(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    git(repo, "remote", "add", "origin", f"https://bot:{token}@git.example.com/team/proj.git")
    with jiyi.Memory(cwd=repo) as memory:
        session = memory.session(session_id="s-secret")
        session.memory.store.touch_session(session.id, session.project.key, session.project.name)
        # straight into the store, as a hook of another version might: the note still redacts
        memory.store.set_failure(session.id, "Bash", MYLIB_ERROR, command=f"GITHUB_TOKEN={token} python3 check.py")
        saved = session.note(title="mylib", type="bugfix", scope="project", content=CONTENT, fix=FIX)
        exported = io.StringIO()
        transfer.export(memory.store, exported)
    repro = saved.record.reproduction
    assert repro is not None
    assert token not in repro.command and "[REDACTED:" in repro.command
    assert repro.command.endswith(" python3 check.py")
    assert token not in repro.repo and "git.example.com/team/proj.git" in repro.repo
    assert token not in exported.getvalue()


def test_a_revision_without_a_pending_failure_keeps_the_reproduction(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    commit = git_repo(repo, {"check.py": CHECK_PY})
    first = fail_and_note(repo, topic_key="build/mylib")
    assert first.reproduction is not None
    with jiyi.Memory(cwd=repo) as memory:
        later = memory.session(session_id="s-later")
        saved = later.note(
            title="mylib is missing", type="bugfix", scope="project", content=CONTENT, fix=FIX, topic_key="build/mylib"
        )
        stored = memory.store.get(first.hex)
    assert saved.record.revision == 2
    assert stored is not None and stored.reproduction == first.reproduction
    assert stored.reproduction.commit == commit


STUBBED = "PYTHONPATH=stub python3 check.py"


def test_a_fix_that_is_the_failing_command_changed_is_what_must_pass() -> None:
    failing = Reproduction("python3 check.py", "https://git.example/p.git", "ab" * 20)
    for changed in ("python3 check.py --with-stub", STUBBED, "touch mylib.py && python3 check.py"):
        assert checked_by(failing, Fix("command", command=changed)) == replace(failing, check=changed)
    # A repair of the checkout (the failing command must pass again), a command that merely exits
    # 0, the same command, its words out of order, a diff: no check.
    for other in ("pip install mylib", "ls", "python3  check.py", "check.py python3"):
        assert checked_by(failing, Fix("command", command=other)) == failing
    assert checked_by(failing, Fix("diff", diff=MYLIB_DIFF)) == failing
    assert checked_by(replace(failing, check=STUBBED), Fix("command", command="pip install mylib")) == failing
    assert checked_by(failing, None) == failing and checked_by(None, Fix("command", command=STUBBED)) is None


def test_the_check_is_in_the_dict_only_when_there_is_one() -> None:
    plain = Reproduction("make", "r", "c0ffee")
    assert plain.to_dict() == {"command": "make", "repo": "r", "commit": "c0ffee", "cwd": ""}
    assert Reproduction.from_dict(plain.to_dict()) == plain
    checked = replace(plain, check="make LDLIBS=-lz")
    assert checked.to_dict() == {**plain.to_dict(), "check": "make LDLIBS=-lz"}
    assert Reproduction.from_dict(checked.to_dict()) == checked
    assert Reproduction.from_dict({**plain.to_dict(), "check": None}) == plain


def test_a_note_whose_fix_is_the_command_changed_is_checked_by_it(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    stubbed = {"kind": "command", "command": STUBBED}
    first = fail_and_note(repo, fix=stubbed, topic_key="build/mylib")
    assert first.reproduction is not None and first.reproduction.check == STUBBED
    assert fail_and_note(repo, fix=FIX).reproduction == replace(first.reproduction, check=None)
    # A later revision with another fix and no failure pending: the check follows the fix.
    with jiyi.Memory(cwd=repo) as memory:
        later = memory.session(session_id="s-later")
        later.note(title="mylib", type="bugfix", scope="project", content=CONTENT, fix=FIX, topic_key="build/mylib")
        stored = memory.store.get(first.hex)
    assert stored is not None and stored.revision == 2
    assert stored.reproduction == replace(first.reproduction, check=None)


def test_head_is_read_from_packed_refs_detached_heads_and_worktrees(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    commit = git_repo(repo, {"check.py": CHECK_PY})
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git/refs/heads/main").exists()
    assert head_commit(repo / ".git") == commit
    (repo / "more").write_text("y\n", encoding="utf-8")
    git(repo, "add", "more")
    git(repo, "commit", "-q", "-m", "more")
    second = git(repo, "rev-parse", "HEAD")
    assert second != commit and head_commit(repo / ".git") == second
    git(repo, "checkout", "-q", "--detach", commit)
    assert head_commit(repo / ".git") == commit
    git(repo, "checkout", "-q", "main")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), commit)
    assert checkout_point(tmp_path / "wt") == (str(tmp_path / "wt"), commit)
    assert checkout_point(repo) == (str(repo), second)
    record = fail_and_note(tmp_path / "wt")
    assert record.reproduction is not None and record.reproduction.commit == commit


def test_an_unborn_branch_has_no_commit_to_replay(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    assert checkout_point(repo) is None
    assert fail_and_note(repo).reproduction is None


VERIFIED = Verification("replay", "2026-12-02", "os=linux,arch=x86_64", 1, 1)


def _team_verified(record: Record) -> Record:
    return replace(record, remote=True, origin="team_verified", verification=VERIFIED)


@pytest.mark.parametrize("fix", [FIX, {"kind": "command", "command": STUBBED}])
def test_export_and_import_keep_reproduction_and_verification(
    tmp_path: Path, jiyi_home: Path, fix: dict[str, str]
) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    noted = fail_and_note(repo, fix=fix)
    assert noted.reproduction is not None and noted.reproduction.check == fix.get("command")
    source = SQLiteStore(tmp_path / "source.db")
    revisions = SQLiteStore(jiyi_home / "jiyi.db").revisions(noted.hex)
    assert source.import_record(_team_verified(noted), revisions, [], derive(noted))
    first = io.StringIO()
    transfer.export(source, first)
    line = json.loads(first.getvalue())
    assert noted.reproduction is not None and line["reproduction"] == noted.reproduction.to_dict()
    assert line["verification"] == VERIFIED.to_dict()
    fresh = SQLiteStore(tmp_path / "fresh.db")
    assert transfer.import_lines(fresh, first.getvalue().splitlines()) == (1, 0)
    again = io.StringIO()
    transfer.export(fresh, again)
    assert again.getvalue() == first.getvalue()
    imported = fresh.get(noted.hex)
    assert imported is not None
    assert (imported.reproduction, imported.verification) == (noted.reproduction, VERIFIED)
    source.close()
    fresh.close()


def test_memory_read_shows_the_verification_of_team_verified_records_only(tmp_path: Path, jiyi_home: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    noted = fail_and_note(repo)
    verified = _team_verified(noted)
    text = formats.read_text(verified)
    assert text.endswith(MYLIB_DIFF.rstrip("\n") + "\n核验：replay · 2026-12-02 · os=linux,arch=x86_64 · 1/1")
    # the bytes: full-width colon U+FF1A, U+00B7 with a space each side
    pinned = (
        b"\n\xe6\xa0\xb8\xe9\xaa\x8c\xef\xbc\x9areplay \xc2\xb7 2026-12-02 \xc2\xb7 os=linux,arch=x86_64 \xc2\xb7 1/1"
    )
    assert text.encode("utf-8").endswith(pinned)
    assert "核验：" not in formats.read_text(replace(verified, origin="team"))  # all passed: not verified yet
    assert "核验：" not in formats.read_text(replace(verified, verification=None))
    with jiyi.Memory(cwd=tmp_path) as memory:
        memory.store.purge(noted.hex)
        assert memory.store.import_record(verified, [], [], derive(verified))
        read = memory.session(session_id="reader").read_text(verified.id)
    assert read == text
    assert read.splitlines()[1].startswith("source: 团队核验 · ")


def test_a_failed_replay_shows_its_line_and_lowers_the_records_trust(tmp_path: Path, jiyi_home: Path) -> None:
    from jiyi import ranking

    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    noted = fail_and_note(repo)
    failed = replace(noted, remote=True, origin="team", verification=replace(VERIFIED, passed=0, tries=1))
    assert formats.read_text(failed).endswith("\n核验：replay · 2026-12-02 · os=linux,arch=x86_64 · 0/1")
    plain = replace(failed, verification=None)
    assert ranking._replayed(plain) == 1.0 and ranking._replayed(failed) == ranking.FAILED_REPLAY_FACTOR
    half = replace(failed, verification=replace(VERIFIED, passed=1, tries=2))
    assert ranking.FAILED_REPLAY_FACTOR < ranking._replayed(half) < 1.0
