"""The `jiyi` command through click's CliRunner: help, a full tour, forget/purge, errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from jiyi.cli import main

from ..helpers import SIGNALS, YAML, ZLIB

QUERY = "ld: undefined symbol deflate"
ZLIB_FLAGS = [
    "--project",
    "zlib-port",
    "--title",
    "Link zlib with -lz",
    "--type",
    "bugfix",
    "--scope",
    "project",
    "--what",
    "ld: undefined symbol deflate",
    "--why",
    "zlib was not on the link line",
    "--where",
    "Makefile LDLIBS",
    "--learned",
    "add -lz after the object files",
]
PATCH = """\
--- a/Makefile
+++ b/Makefile
@@ -1,2 +1,2 @@
 CC = cc
-LDLIBS =
+LDLIBS = -lz
"""


def jiyi(*args: str, input: str | None = None, env: dict[str, str] | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(main, list(args), input=input, env=env, prog_name="jiyi")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return result


def saved_id(stdout: str) -> str:
    match = re.match(r"saved (lr_[0-9a-f]{32}) revision \d+", stdout)
    assert match, stdout
    return match.group(1)


def today() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d")


def store_bytes(home: Path) -> bytes:
    """Everything SQLite has on disk for the store: the main file and its write-ahead log."""
    return b"".join(p.read_bytes() for p in (home / "jiyi.db", home / "jiyi.db-wal") if p.exists())


# -- help ------------------------------------------------------------------------------------
def test_every_command_has_a_working_help() -> None:
    assert main.commands, "no commands registered"
    top = jiyi("--help")
    for name, command in sorted(main.commands.items()):
        assert name in top.stdout
        for flag in ("--help", "-h"):
            result = jiyi(name, flag)
            assert result.stdout.startswith(f"Usage: jiyi {name}"), (name, result.stdout)
            assert len(result.stdout.strip().splitlines()) > 2, name
            assert (command.help or "").strip(), f"{name} has no help text"
    assert jiyi("--version").stdout.strip().startswith("jiyi, version ")


def test_read_commands_take_json() -> None:
    for name in ("search", "read", "list", "show", "stats", "doctor"):
        assert "--json" in jiyi(name, "--help").stdout, name


def test_spec_commands_are_all_there() -> None:
    # docs/spec.md §7 also lists team: it arrives with the team memory issue.
    spec = "search read note list show forget export import stats doctor reindex mcp run hook".split()
    assert sorted(set(spec) - set(main.commands)) == []


# -- a tour ------------------------------------------------------------------------------------
def test_tour_note_search_read_list_show_stats_doctor_export_import(tmp_path: Path, jiyi_home: Path) -> None:
    before = today()
    saved = jiyi("note", *ZLIB_FLAGS, "--topic", "build/zlib-link")
    rid = saved_id(saved.stdout)
    assert saved.stdout == f"saved {rid} revision 1 under build/zlib-link; no similar memories found\n"

    # search, as text: the seed's four lines
    found = jiyi("search", "--project", "zlib-port", QUERY).stdout
    lines = found.rstrip("\n").split("\n")
    assert len(lines) == 4, found
    assert lines[0] == f"1. [{rid}] Link zlib with -lz"
    source = re.fullmatch(r"   source: 本机笔记 · zlib-port · (\d{4}-\d{2}-\d{2}) · 记录时会话结局：未知", lines[1])
    assert source, lines[1]
    day = source.group(1)
    assert day in {before, today()}
    assert re.match(r"   matched: error_signature sha256:[0-9a-f]{17}… \(0\.30\), code_symbol ", lines[2]), lines[2]
    names = re.findall(r"(?:^   matched: |, )([a-z_]+) ", lines[2])
    assert names == SIGNALS, lines[2]
    assert "same_project zlib-port (0.10)" in lines[2]
    assert lines[3] == "   ld: undefined symbol deflate"

    # search, as JSON
    hits = json.loads(jiyi("search", "--project", "zlib-port", "--json", QUERY).stdout)
    assert [h["id"] for h in hits] == [rid]
    assert [s["name"] for s in hits[0]["signals"]] == SIGNALS
    assert hits[0]["signals"][0]["detail"].startswith("sha256:")
    assert re.fullmatch(r"sha256:[0-9a-f]{24,}", hits[0]["signals"][0]["detail"])  # JSON keeps it whole
    assert hits[0]["score"] > 0
    assert hits[0]["record"]["content"]["what"] == QUERY
    assert hits[0]["record"]["topic_key"] == "build/zlib-link"
    assert jiyi("search", "--project", "zlib-port", "--json", "nothing like this at all").stdout.strip() == "[]"
    assert jiyi("search", "--project", "zlib-port", "nothing like this at all").stdout == "no matching memory\n"

    # read
    src = f"本机笔记 · zlib-port · {day} · 记录时会话结局：未知"
    full = (
        f"[{rid}] Link zlib with -lz\n"
        f"source: {src}\n"
        "\n"
        f"Link zlib with -lz（{rid}）\n"
        f"出处：{src}\n"
        "类型：bugfix · 范围：project\n"
        "现象（What）：ld: undefined symbol deflate\n"
        "原因（Why）：zlib was not on the link line\n"
        "位置（Where）：Makefile LDLIBS\n"
        "做法（Learned）：add -lz after the object files\n"
        "主题：build/zlib-link · 修订 1"
    )
    assert jiyi("read", "--project", "zlib-port", rid).stdout == full + "\n"
    as_json = json.loads(jiyi("read", "--project", "zlib-port", "--json", "rr_" + rid[3:]).stdout)
    assert (as_json["id"], as_json["text"], as_json["truncated"]) == (rid, full, False)

    # list
    listed = jiyi("list").stdout.splitlines()
    assert len(listed) == 1
    assert listed[0].startswith(f"{rid}  {day}  bugfix")
    assert listed[0].endswith("Link zlib with -lz (build/zlib-link r1)")
    assert [r["id"] for r in json.loads(jiyi("list", "--json").stdout)] == [rid]

    # the same topic again: revision 2 of the same record; show lists both revisions
    again = jiyi(
        "note",
        *ZLIB_FLAGS[:-4],
        "--where",
        "CMakeLists.txt",
        "--learned",
        "link ZLIB::ZLIB",
        "--topic",
        "build/zlib-link",
    )
    assert again.stdout == f"saved {rid} revision 2 under build/zlib-link; no similar memories found\n"
    shown = jiyi("show", rid).stdout
    body, _, history = shown.partition("\n\n修订记录：\n")
    assert body.startswith(f"[{rid}] Link zlib with -lz\n")
    assert "位置（Where）：CMakeLists.txt" in body.split("\n")
    assert "主题：build/zlib-link · 修订 2" in body.split("\n")
    revisions = history.rstrip("\n").split("\n")
    assert len(revisions) == 2, shown
    assert revisions[0].startswith(f"  修订 1 · {day} · ")
    assert revisions[1].startswith("  修订 2 · ")
    assert revisions[0].endswith(" · Link zlib with -lz")
    shown_json = json.loads(jiyi("show", "--json", rid).stdout)
    assert [r["revision"] for r in shown_json["revisions"]] == [1, 2]
    assert shown_json["revisions"][0]["snapshot"]["where"] == "Makefile LDLIBS"
    assert shown_json["revisions"][1]["snapshot"]["where"] == "CMakeLists.txt"

    # a second record with a diff fix, evidence and a mark: the export must carry all of it
    patch = tmp_path / "fix.diff"
    patch.write_text(PATCH, encoding="utf-8")
    second = jiyi(
        "note",
        "--project",
        "zlib-port",
        "--title",
        "zlib via pkg-config",
        "--type",
        "pattern",
        "--scope",
        "global",
        "--what",
        "undefined reference to `deflateInit_'",
        "--why",
        "the flags differ between platforms",
        "--where",
        "Makefile",
        "--learned",
        "ask pkg-config for the link flags",
        "--fix-diff",
        str(patch),
        "--evidence",
        rid,
        "--relates-to",
        f"{rid}:outdated",
    )
    second_id = saved_id(second.stdout)
    marked = jiyi("read", "--project", "zlib-port", rid).stdout
    assert f"状态：已被 {second_id} 标记为过时\n" in marked
    read_second = jiyi("read", "--project", "zlib-port", second_id).stdout
    assert "修法（Fix，补丁）：\n" + PATCH in read_second

    # stats and doctor
    stats = json.loads(jiyi("stats", "--json").stdout)
    assert (stats["records"], stats["forgotten"], stats["revisions"]) == (2, 0, 3)
    assert stats["by_type"] == {"bugfix": 1, "pattern": 1}
    assert stats["by_origin"] == {"note": 2}
    assert stats["by_project"] == {"zlib-port": 2}
    assert jiyi("stats").stdout.startswith("records 2 · forgotten 0 · revisions 3 · ")
    doctor = jiyi("doctor").stdout.splitlines()
    assert doctor[-1] == "ok"
    assert f"store: {jiyi_home / 'jiyi.db'}" in doctor
    config = Path(os.environ["JIYI_CONFIG_DIR"]) / "config.toml"
    assert f"config: {config} (none: defaults)" in doctor  # where a user would write one
    report = json.loads(jiyi("doctor", "--json").stdout)
    assert (report["ok"], report["problems"], report["records"]) == (True, [], 2)
    assert (report["config"], report["config_exists"]) == (str(config), False)
    assert report["migrations"]

    # export, to a file and to stdout
    first_export = tmp_path / "first.jsonl"
    jiyi("export", str(first_export))
    exported = first_export.read_bytes()
    assert jiyi("export").stdout_bytes == exported
    rows = [json.loads(line) for line in exported.decode("utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted([rid, second_id])
    by_id = {r["id"]: r for r in rows}
    assert [rev["revision"] for rev in by_id[rid]["revisions"]] == [1, 2]
    assert by_id[second_id]["fix"] == {"kind": "diff", "diff": PATCH}
    assert by_id[second_id]["marks"][0]["relation"] == "outdated"
    # no failure was pending: nothing to replay (tests/test_reproduction.py round-trips both)
    assert (by_id[second_id]["reproduction"], by_id[second_id]["verification"]) == (None, None)

    # import into a fresh home, export again: byte for byte the same
    fresh = tmp_path / "fresh-home"
    env = {"JIYI_HOME": str(fresh)}
    assert jiyi("import", str(first_export), env=env).stdout == "imported 2 records, skipped 0 already present\n"
    second_export = tmp_path / "second.jsonl"
    jiyi("export", str(second_export), env=env)
    assert second_export.read_bytes() == exported
    assert jiyi("import", str(first_export), env=env).stdout == "imported 0 records, skipped 2 already present\n"
    assert jiyi("import", "-", input=exported.decode("utf-8"), env=env).stdout.startswith("imported 0 records")
    # and the imported store answers like the first
    assert jiyi("search", "--project", "zlib-port", QUERY, env=env).stdout.startswith(f"1. [{rid}] ")
    assert json.loads(jiyi("show", "--json", rid, env=env).stdout)["revisions"] == shown_json["revisions"]


def test_note_json_from_stdin() -> None:
    call = {**ZLIB, "topic_key": "build/zlib-link", "fix": {"kind": "command", "command": "make LDLIBS=-lz"}}
    saved = jiyi("note", "--project", "zlib-port", "--json", "-", input=json.dumps(call, ensure_ascii=False))
    rid = saved_id(saved.stdout)
    assert saved.stdout == f"saved {rid} revision 1 under build/zlib-link; no similar memories found\n"
    text = jiyi("read", "--project", "zlib-port", rid).stdout
    assert text.endswith("主题：build/zlib-link · 修订 1\n修法（Fix，命令）：make LDLIBS=-lz\n")
    again = jiyi("note", "--project", "zlib-port", "--json", "-", input=json.dumps({**call, "title": "Link -lz"}))
    assert again.stdout.startswith(f"saved {rid} revision 2 under build/zlib-link")
    bad = jiyi("note", "--json", "-", input="{not json", code=1)
    assert bad.stderr.startswith("参数无效：json：") and bad.stderr.endswith("\n错误码：E_INVALID_ARGUMENT\n")
    bad = jiyi("note", "--json", "-", input=json.dumps({**ZLIB, "type": "bug"}), code=1)
    assert re.fullmatch(r"参数无效：type：[^\n]+\n错误码：E_INVALID_ARGUMENT\n", bad.stderr), bad.stderr
    assert json.loads(jiyi("stats", "--json").stdout)["records"] == 1


# -- forget and purge ------------------------------------------------------------------------
def test_every_json_read_carries_the_reproduction_and_the_verification(tmp_path: Path) -> None:
    rid = saved_id(jiyi("note", "--json", "-", input=json.dumps(YAML)).stdout)
    plain = json.loads(jiyi("show", "--json", rid).stdout)
    assert (plain["reproduction"], plain["verification"]) == (None, None)
    # A record as a team server hands it out after a replay: import it on a fresh machine.
    line = json.loads(jiyi("export").stdout.splitlines()[0])
    reproduction = {"command": "python -c 'import yaml'", "repo": "https://git.example/p.git", "commit": "ab" * 20}
    verification = {"how": "replay", "date": "2026-12-01", "environment": "os=linux", "passed": 2, "tries": 3}
    line.update(hex="c" * 32, id="lr_" + "c" * 32, reproduction=reproduction, verification=verification)
    line["revisions"] = [{**rev, "hex": "c" * 32} for rev in line["revisions"]]
    (tmp_path / "in.jsonl").write_text(json.dumps(line) + "\n")
    jiyi("import", str(tmp_path / "in.jsonl"))
    shown = json.loads(jiyi("show", "--json", "lr_" + "c" * 32).stdout)
    assert shown["reproduction"] == {**reproduction, "cwd": ""}
    assert shown["verification"] == verification
    # read, list and search give the same record object (cli.common.record_json).
    read = json.loads(jiyi("read", "--json", "lr_" + "c" * 32).stdout)
    listed = {r["id"]: r for r in json.loads(jiyi("list", "--json").stdout)}["lr_" + "c" * 32]
    found = json.loads(jiyi("search", "--json", "ModuleNotFoundError: No module named 'yaml'").stdout)
    for record in (read, listed, next(h["record"] for h in found if h["id"] == "lr_" + "c" * 32)):
        assert (record["reproduction"], record["verification"]) == (shown["reproduction"], verification)


def test_forget_takes_a_record_out_of_search_and_export() -> None:
    rid = saved_id(jiyi("note", *ZLIB_FLAGS).stdout)
    other = saved_id(jiyi("note", "--project", "zlib-port", "--json", "-", input=json.dumps(YAML)).stdout)
    assert jiyi("search", "--project", "zlib-port", QUERY).stdout.startswith(f"1. [{rid}]")
    assert jiyi("forget", rid).stdout == f"forgot {rid}\n"
    assert jiyi("search", "--project", "zlib-port", QUERY).stdout == "no matching memory\n"
    assert json.loads(jiyi("search", "--project", "zlib-port", "--json", QUERY).stdout) == []
    exported = [json.loads(line) for line in jiyi("export").stdout.splitlines()]
    assert [r["id"] for r in exported] == [other]
    assert [r["id"] for r in json.loads(jiyi("list", "--json").stdout)] == [other]
    stats = json.loads(jiyi("stats", "--json").stdout)
    assert (stats["records"], stats["forgotten"]) == (1, 1)
    # the other record is untouched
    assert jiyi("search", "--project", "zlib-port", "No module named 'yaml'").stdout.startswith(f"1. [{other}]")
    gone = jiyi("read", "--project", "zlib-port", rid, code=1)
    assert gone.stderr == f"没有这条记录：{rid}\n错误码：E_NOT_FOUND\n"


SECRET = "frobnicatorquux"
KEPT = "blorptastickeep"


def _purge_setup(jiyi_home: Path) -> tuple[str, str]:
    """A record carrying SECRET in every field, revised and read; another carrying KEPT."""

    def flags(word: str, *more: str) -> list[str]:
        common = ["--project", "zlib-port", "--type", "bugfix", "--scope", "project", "--where", "Makefile"]
        return [*common, "--why", f"the {word} was not linked", *more]

    rid = saved_id(
        jiyi(
            "note",
            *flags(SECRET, "--topic", "build/purge-me"),
            "--title",
            f"Link {SECRET}",
            "--what",
            f"ld: undefined symbol {SECRET}_init",
            "--learned",
            f"add -l{SECRET}",
            "--fix-command",
            f"make LDLIBS=-l{SECRET}",
        ).stdout
    )
    # a second revision, a read by another session: more places the text could linger
    revised = jiyi(
        "note",
        *flags(SECRET, "--topic", "build/purge-me"),
        "--title",
        f"Link {SECRET} (2)",
        "--what",
        f"{SECRET}: link error",
        "--learned",
        SECRET,
    )
    assert revised.stdout.startswith(f"saved {rid} revision 2 ")
    jiyi("read", "--project", "zlib-port", rid)
    other = saved_id(
        jiyi("note", *flags(KEPT), "--title", f"Keep {KEPT}", "--what", f"{KEPT} failed", "--learned", KEPT).stdout
    )
    assert SECRET.encode() in store_bytes(jiyi_home)
    assert KEPT.encode() in store_bytes(jiyi_home)
    return rid, other


def test_forget_purge_erases_the_record(jiyi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid, other = _purge_setup(jiyi_home)
    # without a terminal and without --yes it says how, rather than "Aborted!"
    refused = jiyi("forget", "--purge", rid, input="", code=2)
    assert "confirm in a terminal, or add --yes" in refused.stderr
    # in a terminal it asks, and "no" keeps the record
    from jiyi.cli import records

    with monkeypatch.context() as patched:
        patched.setattr(records, "_interactive", lambda: True)
        refused = jiyi("forget", "--purge", rid, input="n\n", code=1)
    assert "Aborted" in refused.stderr
    assert jiyi("show", rid).stdout.startswith(f"[{rid}] Link {SECRET} (2)\n")

    # a plain forget first, then the purge of the forgotten record
    jiyi("forget", rid)
    assert jiyi("forget", "--purge", "--yes", rid).stdout == f"purged {rid}\n"
    gone = jiyi("show", rid, code=1)
    assert gone.stdout == ""
    assert gone.stderr == f"没有这条记录：{rid}\n错误码：E_NOT_FOUND\n"
    assert jiyi("show", "--json", rid, code=1).stderr == gone.stderr
    assert jiyi("forget", "--purge", "--yes", rid, code=1).stderr == gone.stderr
    stats = json.loads(jiyi("stats", "--json").stdout)
    assert (stats["records"], stats["forgotten"], stats["revisions"]) == (1, 0, 1)
    assert [r["id"] for r in json.loads(jiyi("list", "--json").stdout)] == [other]
    assert [json.loads(line)["id"] for line in jiyi("export").stdout.splitlines()] == [other]
    assert jiyi("search", "--project", "zlib-port", f"{SECRET}: link error").stdout == "no matching memory\n"
    assert jiyi("doctor").stdout.splitlines()[-1] == "ok"
    # the topic is free again: a new note under it is a new record
    fresh = jiyi("note", *ZLIB_FLAGS, "--topic", "build/purge-me").stdout
    assert saved_id(fresh) != rid and " revision 1 under build/purge-me" in fresh


def test_forget_purge_leaves_no_trace_in_the_database_file(jiyi_home: Path) -> None:
    rid, _ = _purge_setup(jiyi_home)
    assert jiyi("forget", "--purge", "--yes", rid).stdout == f"purged {rid}\n"
    on_disk = store_bytes(jiyi_home)
    assert KEPT.encode() in on_disk  # the check really looks at the store's bytes
    assert rid[3:].encode() not in on_disk
    assert SECRET.encode() not in on_disk


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["read", "lr_" + "0" * 32], "没有这条记录：lr_" + "0" * 32 + "\n错误码：E_NOT_FOUND\n"),
        (["read", "rr_" + "f" * 32], "没有这条记录：rr_" + "f" * 32 + "\n错误码：E_NOT_FOUND\n"),
        (["show", "lr_" + "0" * 32], "没有这条记录：lr_" + "0" * 32 + "\n错误码：E_NOT_FOUND\n"),
        (["forget", "lr_" + "0" * 32], "没有这条记录：lr_" + "0" * 32 + "\n错误码：E_NOT_FOUND\n"),
        (["read", "lr_nope"], re.compile(r"参数无效：ref：[^\n]+\n错误码：E_INVALID_ARGUMENT\n")),
        (["search", "   "], "参数无效：query：不能为空\n错误码：E_INVALID_ARGUMENT\n"),
        (["search", "--limit", "9", "x"], re.compile(r"参数无效：limit：[^\n]+\n错误码：E_INVALID_ARGUMENT\n")),
        (["note", "--title", "t"], re.compile(r"参数无效：type：[^\n]+\n错误码：E_INVALID_ARGUMENT\n")),
    ],
)
def test_errors_exit_1_with_the_spec_text_on_stderr(args: list[str], stderr: Any) -> None:
    result = jiyi(*args, code=1)
    assert result.stdout == ""
    if isinstance(stderr, str):
        assert result.stderr == stderr
    else:
        assert stderr.fullmatch(result.stderr), result.stderr


def test_corrupt_store_is_unavailable_on_the_command_line(jiyi_home: Path) -> None:
    jiyi_home.mkdir(parents=True, exist_ok=True)
    (jiyi_home / "jiyi.db").write_bytes(b"this is not a database " * 400)
    for args in (["search", QUERY], ["list"], ["stats"], ["export"], ["note", *ZLIB_FLAGS]):
        result = jiyi(*args, code=1)
        assert result.stderr.endswith("记忆暂不可用\n错误码：E_UNAVAILABLE\n"), (args, result.stderr)
    doctor = jiyi("doctor", code=1)
    assert doctor.stdout.splitlines()[-1] == "记忆暂不可用"
    assert (jiyi_home / "jiyi.db").read_bytes() == b"this is not a database " * 400  # nothing overwritten


@pytest.mark.parametrize("args", [["search", "x"], ["list"], ["doctor"], ["doctor", "--json"], ["export"]])
def test_a_bad_setting_is_one_clear_error_from_every_command_not_a_traceback(
    args: list[str], tmp_path: Path, jiyi_home: Path
) -> None:
    env = {**os.environ, "JIYI_LOCALE": "fr"}
    done = subprocess.run([sys.executable, "-m", "jiyi", *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert "设置无效：locale = 'fr'（来自 JIYI_LOCALE），可用的值：zh, en" in done.stderr + done.stdout


def test_list_says_how_many_it_showed_of_how_many(jiyi_home: Path) -> None:
    common = ["--type", "bugfix", "--scope", "global", "--why", "w", "--where", "x", "--learned", "l"]
    for n in range(3):
        jiyi("note", "--title", f"note {n}", "--what", f"error number {n}", *common)
    first = jiyi("list", "--limit", "2")
    assert len(first.stdout.splitlines()) == 2
    assert first.stderr == "1–2 of 3 records; --offset 2 for the next\n"
    assert jiyi("list", "--limit", "2", "--offset", "2").stderr == "3–3 of 3 records\n"
    assert jiyi("list").stderr == ""  # all of them: nothing to add


def test_small_things_a_new_user_reaches_for() -> None:
    from jiyi import __version__

    assert jiyi("-V").stdout == f"jiyi, version {__version__}\n"
    helped = jiyi("note", "--help").stdout
    assert "[decision|bugfix|pattern|config|discovery|learning|pitfall]" in helped and "[project|global]" in helped
    assert "Short and searchable" in helped
    wrong = jiyi("note", "--type", "bug", "--title", "x", code=2)
    assert "'bug' is not one of 'decision', 'bugfix'" in wrong.stderr
    assert "_JIYI_COMPLETE=bash_source jiyi" in jiyi("--help").stdout


def test_doctor_shows_every_setting_with_its_source_and_whether_agents_can_start_jiyi(
    tmp_path: Path, jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi import config

    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("notes = false\n")
    monkeypatch.setenv("JIYI_READ_BUDGET", "9000")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # no jiyi on PATH
    report = json.loads(jiyi("doctor", "--json").stdout)
    rows = {row["key"]: row for row in report["settings"]}
    assert rows["notes"] == {"key": "notes", "value": False, "source": str(config.user_config_path())}
    assert rows["read_budget"]["source"] == "JIYI_READ_BUDGET" and rows["locale"]["source"] == "default"
    assert report["integrations"]["jiyi_on_path"] is None and report["team"] is None
    assert "jiyi on PATH: no" in jiyi("doctor").stdout
    fake = bin_dir / "jiyi"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert json.loads(jiyi("doctor", "--json").stdout)["integrations"]["jiyi_on_path"] == str(fake)


def test_long_work_says_it_is_alive_on_stderr_that_is_no_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from jiyi.cli import common

    now = [0.0]
    lines = common.Lines()
    lines._clock = lambda: now[0]  # type: ignore[method-assign]
    lines._started = lines._last = 0.0
    with lines as bar:
        task = bar.add_task("import", total=30000)
        bar.advance(task, 1000)  # quick: nothing yet
        now[0] = 6.0
        bar.advance(task, 11000)
        now[0] = 8.0
        bar.advance(task, 18000)
    assert capsys.readouterr().err == "import: 12000/30000 (40 %), 6 s\nimport: 30000/30000 (100 %), 8 s\n"
    with common.Lines() as bar:
        bar.advance(bar.add_task("export", total=3), 3)
    assert capsys.readouterr().err == ""  # short work stays silent


def test_the_cli_speaks_english_with_locale_en(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIYI_LOCALE", "en")
    missing = "lr_" + "0" * 32
    assert jiyi("read", missing, code=1).stderr == f"no such record: {missing}\nerror code: E_NOT_FOUND\n"
    monkeypatch.setenv("JIYI_LOCALE", "zh")
    assert jiyi("read", missing, code=1).stderr == f"没有这条记录：{missing}\n错误码：E_NOT_FOUND\n"
