"""The three tools over a real store: visibility, upsert, relations, budget, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import jiyi
from jiyi.config import Settings

from .helpers import SIGNALS, YAML, ZLIB, note

ENV = {"os": "darwin", "arch": "arm64"}


@pytest.fixture
def memory(jiyi_home: Path) -> jiyi.Memory:
    m = jiyi.Memory()
    yield m
    m.close()


def test_note_is_found_by_the_next_session_not_its_own(memory: jiyi.Memory) -> None:
    writer = memory.session(project="zlib-port", env=ENV, session_id="s1")
    saved = writer.note(**ZLIB)
    assert saved.text == f"saved {saved.record.id} revision 1; no similar memories found"
    assert writer.search_text("ld: undefined symbol deflate") == "no matching memory"
    reader = memory.session(project="zlib-port", env=ENV, session_id="s2")
    text = reader.search_text("ld: undefined symbol deflate")
    lines = text.splitlines()
    assert lines[0] == f"1. [{saved.record.id}] Link zlib with -lz"
    assert lines[1].startswith("   source: 本机笔记 · zlib-port · ")
    assert lines[1].endswith(" · 记录时会话结局：未知")
    assert lines[2].startswith("   matched: error_signature sha256:")
    names = [part.split(" ")[0] for part in lines[2][len("   matched: ") :].split(", ") if " (" in part]
    assert [n for n in names if n.isidentifier()] == SIGNALS
    assert "same_project zlib-port (0.10)" in lines[2]
    assert "environment os=darwin,arch=arm64 (0.05)" in lines[2]
    assert "trust note (0.02)" in lines[2]
    assert lines[3] == "   ld: undefined symbol deflate"


def test_a_fix_noted_in_other_words_is_found_by_the_failure_it_followed(memory: jiyi.Memory) -> None:
    # The agent met the failure, fixed it and noted the fix in words of its own, none of the error's:
    # the session linked the note to the failure, and that link counts whole for the next session that
    # meets it, however many of the error's words another record holds.
    failure = "ld: undefined symbol deflate"
    writer = memory.session(project="zlib-port", env=ENV, session_id="s1")
    writer.observe_tool_result("Bash", ok=False, error=failure, command="make")
    linked = writer.note(
        **note(
            title="Put the compression library on the link line",
            what="the build could not link: the compression library was missing",
            why="Makefile left it out",
            where="Makefile",
            learned="append -lz to LDLIBS",
        )
    ).record
    memory.session(project="other", env=ENV, session_id="s3").note(
        **note(title="Export main_loop from the engine", what="ld: undefined symbol main_loop", scope="global")
    )
    hits = memory.session(project="zlib-port", env=ENV, session_id="s2").search(failure)
    assert hits[0].record.hex == linked.hex
    strengths = {s.name: s.strength for s in hits[0].signals}
    assert strengths["lexical"] == 0.0 and strengths["error_signature"] > 0.5 and strengths["code_symbol"] > 0.5


def test_read_full_text_and_unknown_id(memory: jiyi.Memory) -> None:
    rid = memory.session(project="zlib-port", session_id="s1").note(**ZLIB).record.id
    reader = memory.session(project="zlib-port", session_id="s2")
    text = reader.read_text(rid)
    assert text.splitlines()[3] == f"Link zlib with -lz（{rid}）"
    assert "现象（What）：ld: undefined symbol deflate" in text
    assert reader.read_text("rr_" + rid[3:]) == text  # same hex, same record
    missing = "lr_" + "0" * 32
    assert reader.read_text(missing) == f"没有这条记录：{missing}\n错误码：E_NOT_FOUND"
    assert reader.call("memory_read", {"ref": "lr_xyz"}).is_error


def test_topic_key_revises_the_same_record(memory: jiyi.Memory) -> None:
    first = memory.session(project="zlib-port", session_id="s1").note(**note(topic_key="build/zlib-link"))
    assert first.text.endswith("revision 1 under build/zlib-link; no similar memories found")
    second = memory.session(project="zlib-port", session_id="s2").note(
        **note(topic_key="build/zlib-link", learned="link ZLIB::ZLIB in CMake")
    )
    assert second.record.id == first.record.id
    assert second.text.startswith(f"saved {first.record.id} revision 2 under build/zlib-link")
    revisions = memory.store.revisions(first.record.hex)
    assert [r.revision for r in revisions] == [1, 2]
    assert revisions[0].snapshot["learned"] == "add -lz after the object files"
    assert revisions[1].change == "learned"
    assert memory.store.count() == 1
    assert second.record.sources == 2  # another session confirmed it


def test_project_topics_are_per_project_and_global_topics_are_shared(memory: jiyi.Memory) -> None:
    a = memory.session(project="a", session_id="s1").note(**note(topic_key="build/zlib"))
    b = memory.session(project="b", session_id="s2").note(**note(topic_key="build/zlib"))
    assert a.record.id != b.record.id
    g1 = memory.session(project="a", session_id="s3").note(**note(topic_key="py/yaml", scope="global"))
    g2 = memory.session(project="b", session_id="s4").note(**note(topic_key="py/yaml", scope="global"))
    assert g1.record.id == g2.record.id


def test_project_scope_stays_in_its_project(memory: jiyi.Memory) -> None:
    memory.session(project="zlib-port", session_id="s1").note(**ZLIB)
    memory.session(project="zlib-port", session_id="s1").note(**YAML)
    other = memory.session(project="elsewhere", session_id="s2")
    assert other.search_text("ld: undefined symbol deflate") == "no matching memory"
    assert "Install PyYAML" in other.search_text("No module named 'yaml'")


def test_similar_memories_on_save(memory: jiyi.Memory) -> None:
    first = memory.session(project="zlib-port", session_id="s1").note(**ZLIB)
    again = memory.session(project="zlib-port", session_id="s2").note(**note(title="zlib again"))
    assert again.text.splitlines() == [
        f"saved {again.record.id} revision 1; 1 similar memories:",
        f"1. [{first.record.id}] Link zlib with -lz",
    ]


def test_wrong_records_leave_search_and_outdated_lose_trust(memory: jiyi.Memory) -> None:
    old = memory.session(project="zlib-port", session_id="s1").note(**ZLIB).record
    fixer = memory.session(project="zlib-port", session_id="s2")
    marker = fixer.note(
        **note(title="Use pkg-config for zlib", relates_to=[{"record_ref": old.id, "relation": "outdated"}])
    ).record
    reader = memory.session(project="zlib-port", session_id="s3")
    assert f"状态：已被 {marker.id} 标记为过时" in reader.read_text(old.id)
    hits = reader.search("ld: undefined symbol deflate")
    trust = {h.record.id: next(s for s in h.signals if s.name == "trust") for h in hits}
    assert trust[old.id].strength == pytest.approx(0.4 * 0.2)
    memory.session(project="zlib-port", session_id="s4").note(
        **note(title="Really wrong", relates_to=[{"record_ref": old.id, "relation": "wrong"}])
    )
    ids = [h.record.id for h in memory.session(project="zlib-port", session_id="s5").search("undefined symbol deflate")]
    assert old.id not in ids and marker.id in ids


def test_read_budget_cuts_then_refuses(memory: jiyi.Memory, jiyi_home: Path) -> None:
    rid = memory.session(project="zlib-port", session_id="s1").note(**ZLIB).record.id
    full = memory.session(project="zlib-port", session_id="s0").read(rid).text
    budget = len(full) + 100
    small = jiyi.Memory(settings=Settings(home=jiyi_home, read_budget=budget))
    reader = small.session(project="zlib-port", session_id="s2")
    assert reader.read_text(rid) == full
    assert reader.read_text(rid) == full[:100] + f"\n……（本会话读取额度已用完：{budget} 字符）"
    assert reader.read_text(rid) == f"本会话读取额度已用完：{budget} 字符\n错误码：E_READ_BUDGET"
    # Search output does not count against the budget.
    assert reader.search_text("ld: undefined symbol deflate") != "no matching memory"
    # Another session has its own budget.
    assert small.session(project="zlib-port", session_id="s3").read_text(rid) == full
    small.close()


def test_notes_disabled(jiyi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIYI_NOTES", "false")
    with jiyi.Memory() as m:
        assert m.session(project="p").note_text(**ZLIB) == "记笔记已关闭\n错误码：E_NOTES_DISABLED"
        assert m.store.count() == 0


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "x" * 161}, "title"),
        ({"title": 7}, "title"),
        ({"title": "a\x00b"}, "title"),
        ({"type": "bug"}, "type"),
        ({"scope": "team"}, "scope"),
        ({"content": {"what": "x", "why": "y", "where": "z"}}, "content.learned"),
        ({"what": "   "}, "content.what"),
        ({"topic_key": "Build/Zlib"}, "topic_key"),
        ({"topic_key": "one-level"}, "topic_key"),
        ({"fix": {"kind": "shell", "command": "x"}}, "fix.kind"),
        ({"fix": {"kind": "command", "command": "x", "diff": "y"}}, "fix"),
        ({"fix": {"kind": "diff", "diff": "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-x\n+y\n"}}, "fix.diff"),
        ({"fix": {"kind": "config", "path": "a.toml"}}, "fix.content"),
        ({"evidence_refs": ["lr_" + "1" * 32]}, "evidence_refs"),
        ({"evidence_refs": "lr_x"}, "evidence_refs"),
        ({"relates_to": [{"record_ref": "lr_" + "1" * 32, "relation": "wrong"}]}, "relates_to.record_ref"),
        ({"relates_to": [{"record_ref": "lr_" + "1" * 32, "relation": "bad"}]}, "relates_to.relation"),
    ],
)
def test_bad_notes_are_refused_and_store_nothing(memory: jiyi.Memory, args: dict[str, object], field: str) -> None:
    result = memory.session(project="p").call("memory_note", note(**args))
    assert result.is_error
    first, second = result.text.splitlines()
    assert first.startswith(f"参数无效：{field}：")
    assert second == "错误码：E_INVALID_ARGUMENT"
    assert memory.store.count() == 0


@pytest.mark.parametrize(
    ("query", "limit"),
    [
        ("", None),
        ("   ", None),
        ("x" * 2001, None),
        (None, None),
        (42, None),
        ("a\x07b", None),
        ("ok", 0),
        ("ok", 6),
        ("ok", "x"),
        ("ok", True),
        ("ok", 2.5),
    ],
)
def test_bad_searches(memory: jiyi.Memory, query: object, limit: object) -> None:
    result = memory.session(project="p").call("memory_search", {"query": query, "limit": limit})
    assert result.is_error and result.text.endswith("\n错误码：E_INVALID_ARGUMENT")


@pytest.mark.parametrize("query", ['"', "*", "NEAR(a b)", "a OR b", "((", "deflate)", '" OR "" *', "AND NOT"])
def test_full_text_syntax_is_searched_literally(memory: jiyi.Memory, query: str) -> None:
    memory.session(project="zlib-port", session_id="s1").note(**ZLIB)
    result = memory.session(project="zlib-port", session_id="s2").call("memory_search", {"query": query})
    assert not result.is_error
    hit = memory.session(project="zlib-port", session_id="s3").call("memory_search", {"query": query + " deflate"})
    assert "Link zlib with -lz" in hit.text


def test_query_2000_characters_is_accepted(memory: jiyi.Memory) -> None:
    assert not memory.session(project="p").call("memory_search", {"query": "y" * 2000, "limit": 5}).is_error


def test_chinese_query_finds_chinese_note(memory: jiyi.Memory) -> None:
    memory.session(project="zlib-port", session_id="s1").note(
        **note(title="链接时找不到 zlib：加 -lz", what="链接失败：找不到 zlib 的符号 deflate")
    )
    text = memory.session(project="zlib-port", session_id="s2").search_text("链接时找不到 zlib")
    assert "链接时找不到 zlib：加 -lz" in text


def test_a_chinese_question_sharing_only_the_word_for_error_finds_nothing(memory: jiyi.Memory) -> None:
    # 报错 ("reports an error") is in every other Chinese question; the store knows none of this one's
    # other words, so it alone made the whole lexical signal of the note that says it.
    memory.session(project="p", session_id="s1").note(
        **note(title="报错：undefined reference to `pthread_create`", what="undefined reference to `pthread_create`")
    )
    reader = memory.session(project="p", session_id="s2")
    assert reader.search_text("启动后选择应用报错") == "no matching memory"
    assert "pthread_create" in reader.search_text("编译报错 undefined reference to pthread_create")


def test_topical_evidence_is_required(memory: jiyi.Memory) -> None:
    memory.session(project="zlib-port", session_id="s1").note(**ZLIB)
    # Same project, same environment, fresh, trusted: none of that makes a hit on its own.
    assert memory.session(project="zlib-port", session_id="s2").search_text("kubectl rollout") == "no matching memory"


def test_last_failure_is_added_to_the_search(memory: jiyi.Memory) -> None:
    memory.session(project="zlib-port", session_id="s1").note(**ZLIB)
    agent = memory.session(project="zlib-port", session_id="s2")
    agent.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate\nclang: error: linker failed")
    text = agent.search_text("the build is broken")
    assert "Link zlib with -lz" in text
    assert "error_signature sha256:" in text


def test_secrets_are_redacted_before_storing(memory: jiyi.Memory, jiyi_home: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    saved = memory.session(project="p", session_id="s1").note(
        **note(what=f"fatal: could not read from https://x:{token}@github.com/a/b.git")
    )
    assert token not in saved.record.what
    memory.close()
    blob = b"".join(p.read_bytes() for p in jiyi_home.glob("jiyi.db*"))
    assert token.encode() not in blob


def test_unknown_note_fields_and_missing_values_are_named(memory: jiyi.Memory) -> None:
    session = memory.session(project="p")
    assert session.call("memory_note", {**ZLIB, "tags": ["x"]}).text.startswith("参数无效：tags：")
    extra = note()
    extra["content"]["notes"] = "x"
    assert session.call("memory_note", extra).text.startswith("参数无效：content.notes：")
    assert session.call("memory_search", {}).text.startswith("参数无效：query：必填")
    assert session.call("memory_read", {}).text.startswith("参数无效：ref：必填")
    assert memory.store.count() == 0
