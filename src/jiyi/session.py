"""A session: one agent conversation, with the three tools (docs/spec.md §1) as structured calls and texts.

Session state (read budget used, records read, notes written, last failure) lives in the store, so
a hook process and the MCP server of the same conversation share it (docs/spec.md §5).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .analysis.redact import redact
from .analysis.signature import analyze, record_symbols
from .capture.cleaning import clean_command
from .errors import InvalidArgument, JiyiError, NotesDisabled, NotFound, ReadBudgetSpent
from .project import Project, checkout_point, reproduction_at
from .query import Query
from .ranking import Hit, rank
from .records import NoteInput, Record, Reproduction, checked_by, new_hex, now
from .session_link import OWN_PREFIX, live_session, own_id
from .store.base import SEARCH_CHARS
from .tools import formats, validation
from .writing import as_revision, save

if TYPE_CHECKING:
    from .config import Settings
    from .memory import Memory
    from .store.base import SessionState, Store

TOOLS = ("memory_search", "memory_read", "memory_note")


@dataclass(frozen=True)
class ReadResult:
    """What :meth:`Session.read` returns: the record, its text as ``memory_read`` gives it, and
    whether the session's read budget cut that text::

        result = session.read("lr_01a163fbe95e791e8c5c45763b9e6937")
        print(result.text)  # cut short by the budget when result.truncated
    """

    record: Record
    text: str
    truncated: bool


@dataclass(frozen=True)
class NoteResult:
    """What :meth:`Session.note` returns: the record saved (a new revision when the topic was
    noted before), the similar records found, and the tool text::

        result = session.note(title="Link zlib with -lz", type="bugfix", scope="project", content=content)
        print(result.record.id, [hit.record.id for hit in result.similar])
    """

    record: Record
    similar: list[Hit]
    text: str


@dataclass(frozen=True)
class ToolResult:
    """One tool's answer as the agent gets it: the text, and whether it is an error's text
    (a failure comes back here, it is not raised)::

        result = session.call("memory_search", {"query": "ld: undefined symbol deflate"})
        print(result.text, result.is_error)
    """

    text: str
    is_error: bool = False


class Session:
    """One agent conversation in a project, with the three tools as calls (which raise
    :class:`~jiyi.errors.JiyiError`) and as texts (which carry its text instead)::

        hits = session.search("ld: undefined symbol deflate")
        print(session.search_text("ld: undefined symbol deflate"))  # memory_search's text
    """

    def __init__(self, memory: Memory, project: Project, env: dict[str, str], session_id: str | None) -> None:
        self.memory = memory
        self.project = project
        self.env = dict(env)
        self.id = session_id or memory.settings.session_id or own_id()
        self._touched = False
        self._link = False  # see link_to_hooks

    def link_to_hooks(self) -> None:
        """With no session id given, go to the session a hook of this project saw last (the rule
        of ``session_link``), from the first tool call that finds one; what an MCP server does."""
        self._link = self.id.startswith(OWN_PREFIX)

    @property
    def settings(self) -> Settings:
        return self.memory.settings

    def _store(self) -> Store:
        store = self.memory.store
        if self._link:
            found = live_session(store, self.project.key)
            if found is not None:
                self.id, self._link, self._touched = found, False, False
        if not self._touched:
            store.touch_session(self.id, self.project.key, self.project.name)
            self._touched = True
        return store

    # -- structured calls --------------------------------------------------------------------
    def search(self, query: Any, limit: Any = None) -> list[Hit]:
        text = validation.query(query)
        count = validation.limit(limit)
        store = self._store()
        state = store.session(self.id)
        q = Query(
            text=text,
            failure_tool=state.last_tool if state else None,
            failure_error=state.last_error if state else None,
            project_key=self.project.key,
            environment=self.env,
        )
        hits = rank(store, q, limit=count, exclude_session=self.id, exclude_hexes=state.notes if state else ())
        # Kept for the review page's sessions, redacted as a note is (a query is often a pasted
        # error, secrets and all), then cut: cut first, a secret's head could stay unrecognised.
        store.record_search(self.id, redact(text)[:SEARCH_CHARS], len(hits))
        return hits

    def read(self, ref: Any) -> ReadResult:
        prefix, hexid = validation.ref(ref)
        store = self._store()
        record = store.get(hexid)
        if record is None:
            raise NotFound(prefix + hexid)
        locale = self.settings.locale
        full = formats.read_text(record, formats.verification_lines(record, locale), locale)
        budget = self.settings.read_budget
        granted = store.take_read(self.id, hexid, len(full), budget)
        if granted <= 0:
            raise ReadBudgetSpent(budget)
        return ReadResult(record, formats.budget_cut(full, granted, budget, locale), granted < len(full))

    def note(self, **args: Any) -> NoteResult:
        if not self.settings.notes:
            raise NotesDisabled()
        given = validation.note(args)
        store = self._store()
        for ref in given.evidence_refs:
            if store.get(ref[3:]) is None:
                raise InvalidArgument("evidence_refs", f"没有这条记录：{ref}")
        for ref, _ in given.relates_to:
            if store.get(ref[3:]) is None:
                raise InvalidArgument("relates_to.record_ref", f"没有这条记录：{ref}")
        given = _redacted(given)
        state = store.session(self.id)
        stamp = now()
        # A topic's look-up and its write under one lock: notes of one topic written at once by
        # other processes each become the next revision (issue 15).
        with store.topic_lock(given.topic_key, given.scope, self.project.key) if given.topic_key else nullcontext():
            existing = store.find_topic(given.topic_key, given.scope, self.project.key) if given.topic_key else None
            what_analysis = analyze(given.what)
            signatures, symbols = list(what_analysis.signatures), list(record_symbols(given.title, what_analysis))
            tool = None
            related = False  # the note is about the pending failure: it gets its reproduction
            if state and state.last_error:
                failure = analyze(state.last_error)
                # The failure the session met is part of what the note is about when they share a
                # symbol or the note is a bug fix; otherwise a decision noted after an unrelated failure
                # would be found by that failure.
                if given.type == "bugfix" or set(failure.symbols) & set(symbols):
                    signatures += failure.signatures
                    symbols += failure.symbols
                    tool = (state.last_tool or "").lower() or None
                    related = True
            record = Record(
                hex=new_hex(),
                title=given.title,
                type=given.type,
                scope=given.scope,
                what=given.what,
                why=given.why,
                where=given.where,
                learned=given.learned,
                topic_key=given.topic_key,
                fix=given.fix,
                evidence_refs=list(given.evidence_refs),
                project=self.project.name,
                project_key=self.project.key,
                session_id=self.id,
                created=stamp,
                updated=stamp,
                outcome=state.outcome if state else "未知",
                signatures=tuple(dict.fromkeys(signatures)),
                symbols=tuple(dict.fromkeys(symbols))[:64],  # record_symbols' order, the failure's after
                environment=self.env,
                tool_name=tool,
                reproduction=checked_by(self._reproduction(state), given.fix) if related else None,
            )
            if existing is not None:
                record = _kept_replay(record, existing)
            record = as_revision(store, record, existing, self.id)
            query = Query(text=f"{record.title}\n{record.what}", project_key=self.project.key, environment=self.env)
            similar = rank(store, query, limit=5, exclude_hexes=[record.hex])
            save(store, record, existing, self.id, marks=[(ref[3:], relation) for ref, relation in given.relates_to])
        return NoteResult(record, similar, formats.note_text(record, similar, self.settings.locale))

    def observe_tool_result(
        self,
        tool: str,
        *,
        ok: bool,
        error: str | None = None,
        command: str | None = None,
        edited: tuple[str, ...] = (),
        watch_checkout: bool = False,
    ) -> None:
        """Report an agent's tool call (what ``jiyi hook`` and ``jiyi run`` do): a failure becomes
        the session's last failure (error redacted and capped); a success that runs the failing
        operation again closes the loop (docs/spec.md §5: records read since get
        ``used_success += 1``, a matching note written since becomes ``local_auto``, the failure is
        cleared, the outcome becomes 成功, and with no note and an evident fix — the command
        changed, state-changing commands ran, or files were ``edited`` in between — an automatic
        record is written; the same command passing with nothing changed counts as flaky); a
        state-changing command is kept as a step of the fix; any other success is recorded as the
        session's activity and leaves the last failure in place. ``watch_checkout`` (``jiyi run``)
        also counts the files changed in the checkout since the failure as edited."""
        from .capture.results import record_tool_result

        record_tool_result(
            self._store(),
            self.id,
            tool,
            ok=ok,
            error=error,
            command=command,
            edited=edited,
            project=self.project,
            auto_records=self.settings.auto_records,
            folder=str(self.memory.cwd.resolve()),
            watch_checkout=watch_checkout,
        )

    def _reproduction(self, state: SessionState | None) -> Reproduction | None:
        """How to meet the pending failure again (docs/spec.md §5): its command, the repository and the
        commit it failed at, the folder relative to the top; None without a failing command or
        outside git. A failure kept without where it failed (before the store kept it) takes the
        project's HEAD now and the session's folder."""
        root = self.project.root
        command = clean_command(state.last_command) if state and state.last_error else None
        if state is not None and state.last_checkout is not None:
            return reproduction_at(command, state.last_checkout)
        point = checkout_point(root) if root is not None and command else None
        if root is None or command is None or point is None:
            return None
        repo, commit = point
        try:
            cwd = self.memory.cwd.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:  # the session works outside the repository it names
            cwd = ""
        return Reproduction(command, redact(repo), commit, "" if cwd == "." else cwd)

    # -- tool texts --------------------------------------------------------------------------
    def search_text(self, query: Any, limit: Any = None) -> str:
        return self.call("memory_search", {"query": query, "limit": limit}).text

    def read_text(self, ref: Any) -> str:
        return self.call("memory_read", {"ref": ref}).text

    def note_text(self, **args: Any) -> str:
        return self.call("memory_note", args).text

    def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool by name; every failure comes back as its docs/spec.md §2 text, never raised."""
        try:
            if tool == "memory_search":
                hits = self.search(args.get("query"), args.get("limit"))
                return ToolResult(formats.search_text(hits, self.settings.locale))
            if tool == "memory_read":
                return ToolResult(self.read(args.get("ref")).text)
            if tool == "memory_note":
                return ToolResult(self.note(**args).text)
            raise InvalidArgument("tool", f"没有这个工具：{tool}", f"no such tool: {tool}")
        except JiyiError as exc:
            return ToolResult(exc.text(self.settings.locale), is_error=True)


def _kept_replay(record: Record, existing: Record) -> Record:
    """A revision written with no failure pending keeps the earlier reproduction (what must pass
    after a new fix follows the new fix); the replay runs still hold while the fix and the
    reproduction are the same."""
    reproduction = record.reproduction or existing.reproduction
    if record.reproduction is None and record.fix != existing.fix:
        reproduction = checked_by(reproduction, record.fix)
    same = record.fix == existing.fix and reproduction == existing.reproduction
    return replace(record, reproduction=reproduction, verification=existing.verification if same else None)


def _redacted(given: NoteInput) -> NoteInput:
    fix = given.fix
    if fix is not None:
        fix = replace(
            fix,
            command=redact(fix.command) if fix.command is not None else None,
            diff=redact(fix.diff) if fix.diff is not None else None,
            content=redact(fix.content) if fix.content is not None else None,
        )
    return replace(
        given,
        title=redact(given.title),
        what=redact(given.what),
        why=redact(given.why),
        where=redact(given.where),
        learned=redact(given.learned),
        fix=fix,
    )
