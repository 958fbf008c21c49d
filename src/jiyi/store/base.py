"""The storage interface. SQLite (``store.sqlite``) is the embedded default; PostgreSQL follows it
for team memory. Everything above this line (ranking, sessions, tools) speaks only this interface.

Each method is one transaction: a failure leaves nothing half-written (docs/spec.md §2). Implementations
raise ``errors.Unavailable`` when the store cannot be used at all.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..records import RECORD_COLUMNS, Record, Revision

if TYPE_CHECKING:
    # Only named in signatures: the store opens without the signature rules (the hook's path).
    from ..analysis.indexing import Derived

# -- the policy both backends share (each writes it in its own SQL) --------------------------------
# Signatures and symbols on more records than this are left out of a look-up with rarer ones: a key
# on thousands of records (`ImportError`, `TS2339`) names no particular one, and grouping its
# records costs ~20 ms at 100 000 (SQLite) or a long index scan (PostgreSQL).
COMMON_KEY_RECORDS = 2000
# A look-up of common keys alone yields the most recent of this many times the places asked for.
COMMON_SAMPLE = 4
# Matches of a full-text look-up ranked at most (SQLite the newest, PostgreSQL the first in index
# order): the rarest term of a query can still be common (`symbol` in ~half of 1 000 000 records
# took 55 ms to rank in full on SQLite, a term on 61 000 of them 370 ms on PostgreSQL; bench/scale.py,
# bench/team_scale.py).
TERM_SCAN = 2000
# What a session's searches keep (``Store.record_search``): the latest this many, each query cut to
# this many characters.
SEARCHES_KEPT = 50
SEARCH_CHARS = 300
# What a purge deletes by the record's hex besides the record row and the marks it made or got
# (``relations``); a backend adds the tables only it has.
PURGED_TABLES = (
    "signatures", "symbols", "revisions", "session_reads", "session_notes", "session_recalls", "record_confirmations",
    "human_marks",
)  # fmt: skip
# The columns a record is written with: those it is read with (``records.RECORD_COLUMNS``), then
# what the store derives for search and re-signing.
WRITE_COLUMNS = (
    *(c.strip() for c in RECORD_COLUMNS.split(",")),
    "topic_scope",
    "key_lines",
    "normalized",
    "sig_algorithm",
)


def write_values(record: Record, derived: Derived | None, encode: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The values of ``WRITE_COLUMNS`` for ``record``, mirroring ``records.record_from_columns``:
    ``encode`` turns a JSON value into the column's (text on SQLite, jsonb on PostgreSQL)."""
    from ..analysis.signature import ALGORITHM

    topic_scope = (record.project_key if record.scope == "project" else "") if record.topic_key else None
    return (
        record.hex, record.remote, record.title, record.type, record.scope, record.what, record.why,
        record.where, record.learned, record.topic_key, record.revision,
        encode(record.fix.to_dict()) if record.fix else None,
        record.origin, record.project, record.project_key, encode(dict(sorted(record.environment.items()))),
        record.tool_name, record.outcome, record.sources, record.used_success, encode(list(record.evidence_refs)),
        record.session_id, record.created, record.updated,
        encode(record.reproduction.to_dict()) if record.reproduction else None,
        encode(record.verification.to_dict()) if record.verification else None,
        record.forgotten, topic_scope,
        encode(list(derived.key_lines) if derived else []), encode(list(derived.normalized) if derived else []),
        ALGORITHM,
    )  # fmt: skip


def latest_keys(seen: Iterable[tuple[str, str]]) -> list[str]:
    """The keys of (project key, last seen) pairs, each once, the most recently seen first, the
    empty key left out (``Store.project_keys``)."""
    latest: dict[str, str] = {}
    for key, at in seen:
        if key and (key not in latest or at > latest[key]):
            latest[key] = at
    return sorted(latest, key=lambda k: latest[k], reverse=True)


@dataclass
class SessionState:
    id: str
    project_key: str = ""
    project: str = ""
    started: str = ""
    last_seen: str = ""
    read_used: int = 0
    last_tool: str | None = None
    last_error: str | None = None
    last_failure_at: str | None = None
    outcome: str = "未知"
    reads: list[str] = field(default_factory=list)  # record hexes read, in order
    notes: list[str] = field(default_factory=list)  # record hexes written or revised
    last_command: str | None = None  # the command of the last failure, when its tool had one
    last_checkout: str | None = None  # where it failed in git terms (``git_head.failure_point``)
    # What it searched, the latest first: filled by ``recent_sessions`` only (the review page), not
    # by ``session``, which every tool call reads.
    searches: list[SearchMade] = field(default_factory=list)


@dataclass(frozen=True)
class SearchMade:
    """One ``memory_search`` of a session (``Store.record_search``): the query as kept (redacted,
    cut to ``SEARCH_CHARS``), when, and how many hits it had."""

    at: str
    query: str
    hits: int


@dataclass(frozen=True)
class Resolved:
    """What a success did to the failure it ended (``Store.resolve_failure``)."""

    used: list[str]  # hexes of the records read since the failure: used_success + 1
    confirmed: list[str]  # hexes of the notes written since the failure now ``local_auto``
    # The failure that ended, for an automatic record: its tool, error text, signatures, the command
    # that failed and where (``git_head.failure_point``), the notes written and the files edited in
    # the session since it.
    tool: str = ""
    error: str = ""
    signatures: tuple[str, ...] = ()
    command: str | None = None
    noted: tuple[str, ...] = ()
    edited: tuple[str, ...] = ()
    checkout: str | None = None
    # The state-changing commands run since the failure (``analysis/commands.py``); and whether the
    # same command passed again with nothing edited or run in between (a flaky failure: no fix).
    steps: tuple[str, ...] = ()
    flaky: bool = False


@dataclass(frozen=True)
class RecordFilter:
    """Which records a listing shows (``Store.find_records``, the review page): each field set
    narrows it; ``text`` keeps the records holding all of its words, words as search derives them
    (``analysis.lexical.terms``: case and accents folded, CJK as bigrams), looked up in the
    full-text index, not a substring scan (143 ms at 100 000 records, bench/ui_pages.py)."""

    type: str | None = None
    scope: str | None = None
    origin: str | None = None
    project: str | None = None
    text: str | None = None
    forgotten: bool = False  # the forgotten records alone, instead of the live ones
    # Only automatic records waiting for a confirmation (``curation.unconfirmed``) that no person
    # has marked wrong either: what still waits for a decision.
    unconfirmed: bool = False

    def words(self) -> list[str]:
        """The terms ``text`` asks for, each once; empty without a text, or when it holds no word
        the index keeps (only stopwords or punctuation): such a filter lets nothing through."""
        if not self.text:
            return []
        from ..analysis.lexical import unique_terms

        return unique_terms(self.text)


def holds_words(words: list[str], title: str, what: str, why: str, where: str, learned: str) -> bool:
    """Whether a record's text holds every one of ``words``, as its index would: for the forgotten
    records, which the full-text index no longer holds."""
    from ..analysis.indexing import lexical_index

    indexed = set(" ".join(lexical_index(title, what, why, where, learned)).split())
    return all(w in indexed for w in words)


# What "waiting for confirmation" is in SQL (``capture/curation.unconfirmed``; the outbox says the
# same): written by capture, confirmed by no second session, no read followed by success, no person.
UNCONFIRMED_SQL = (
    "(origin = 'local_auto' AND coalesce(topic_key, '') LIKE 'auto/%' AND sources < 2 AND used_success < 1)"
)


@dataclass(frozen=True)
class HumanMark:
    """A person's mark on a record (the review page): ``wrong`` takes it out of search, ``outdated``
    lowers its trust, as a record's mark does; with the reason given."""

    relation: str  # wrong | outdated
    reason: str
    created: str


@dataclass(frozen=True)
class TermStats:
    total: int  # indexed records
    doc_counts: dict[str, int]


@dataclass(frozen=True)
class Indexed:
    """What ranking reads of a candidate before loading it: its full-text terms by field, with
    their counts, and the normalised key lines it was signed from (a near-identical key line)."""

    title: dict[str, int]  # the title and the key error lines (lexical.VERSION 3 on)
    body: dict[str, int]
    normalized: tuple[str, ...]
    size: int | None = None  # every term counted, when title and body hold only some (Store.indexed)
    # Where its terms stand, for ``adjacent``: the SQLite store keeps the indexed text (``of``), the
    # PostgreSQL store the positions of the terms asked for, as its vector gives them (``1A,5``).
    text: str = ""
    places: dict[str, str] | None = None

    @property
    def length(self) -> int:
        """How many terms were indexed, every field together."""
        return self.size if self.size is not None else sum(self.title.values()) + sum(self.body.values())

    def adjacent(self, first: str, second: str) -> bool:
        """Whether the record says ``second`` right after ``first``, its title and body read as one
        text in the order indexed (title, then body: both stores number positions so)."""
        if self.places is None:
            return f" {first} {second} " in self.text
        before, after = self.places.get(first), self.places.get(second)
        if not before or not after:
            return False
        following = {int(p) + 1 for p in _POSITION.findall(before)}
        return any(int(p) in following for p in _POSITION.findall(after))

    @classmethod
    def of(cls, title: str, body: str, normalized: Iterable[str]) -> Indexed:
        return cls(Counter(title.split()), Counter(body.split()), tuple(normalized), text=f" {title} {body} ")


_POSITION = re.compile(r"[0-9]+")


# Symbol document counts are read up to this share of the store: past it a symbol is worth nothing
# (shapes.symbol_rarity), so counting on would only cost time.
SYMBOL_COUNT_SHARE = 0.3
# Counts at least this large are kept by a store process while the store grows by under 1 %, as
# the SQLite store keeps the counts of common terms: `RuntimeError` on 30 000 records costs ~2 ms
# to count and is in many queries.
SYMBOL_COUNT_CACHED = 100


def counted_symbols(
    symbols: Iterable[str],
    total: int,
    cache: dict[str, tuple[int, int]],
    count: Callable[[list[str], int], Iterable[tuple[str, int]]],
) -> dict[str, int]:
    """``Store.symbol_counts`` as both stores give it: the counts ``cache`` holds while the store is
    within 1 % of the size it had when counted, the others from ``count(keys, cap)`` (one statement
    of the backend's SQL, each count stopping at ``cap``), the common ones kept in ``cache``."""
    cap = int(total * SYMBOL_COUNT_SHARE) + 1
    counts: dict[str, int] = {}
    todo: list[str] = []
    for key in dict.fromkeys(symbols):
        cached = cache.get(key)
        if cached is not None and abs(total - cached[1]) * 100 <= total:
            counts[key] = cached[0]
        else:
            todo.append(key)
    if todo:
        for key, n in count(todo, cap):
            counts[key] = int(n)
            if n >= SYMBOL_COUNT_CACHED:
                cache[key] = (int(n), total)
    return counts


class Store(ABC):
    path: str

    # -- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def applied_migrations(self) -> list[tuple[str, str]]:
        """(name, applied at) of every migration, in order."""

    @abstractmethod
    def pending_migrations(self) -> list[str]:
        """The names of the migrations this code knows that the store has not recorded, in the
        order they apply: none once a store was opened for writing (opening migrates); a replica's
        or a read-only store's may lag."""

    @abstractmethod
    def integrity_check(self) -> list[str]:
        """Problems found; empty when the store is sound."""

    # -- records -----------------------------------------------------------------------------
    @abstractmethod
    def get(self, hexid: str, *, include_forgotten: bool = False) -> Record | None: ...

    @abstractmethod
    def get_many(self, hexids: Iterable[str]) -> list[Record]: ...

    @abstractmethod
    def find_topic(self, topic_key: str, scope: str, project_key: str) -> Record | None: ...

    @abstractmethod
    def topic_lock(self, topic_key: str, scope: str, project_key: str) -> AbstractContextManager[None]:
        """Held from a topic's ``find_topic`` to its ``write_record``, so that writers of one topic
        in other processes (or connections) wait their turn: each write becomes the next revision
        instead of a second record or a clash on the revision number."""

    @abstractmethod
    def write_record(
        self,
        record: Record,
        revision: Revision,
        derived: Derived,
        *,
        marks: Iterable[tuple[str, str]] = (),
        session_id: str | None = None,
    ) -> None:
        """Insert or revise ``record`` with its new revision, indexes and the marks it makes
        (target hex, relation) on other records, all in one transaction."""

    @abstractmethod
    def write_many(self, items: Iterable[tuple[Record, Revision, Derived]]) -> int:
        """Insert or revise many records (each with its new revision and indexes, no marks) in one
        transaction: the bulk path of imports and benchmarks. Returns how many were written."""

    @abstractmethod
    def signed_with(self, hexid: str) -> tuple[str, tuple[str, ...]]:
        """(algorithm, normalised lines) a record's signatures were last computed with."""

    @abstractmethod
    def reindex_record(self, record: Record, derived: Derived) -> None:
        """Replace a record's signatures, symbols and full-text terms; no new revision."""

    # The version of the full-text terms the index was built with (lexical.VERSION; reindex.py).
    # A store that keeps none reports its index current and has nothing to upgrade.
    def lexical_state(self) -> tuple[int, int]:
        """(version the whole index was built with, records still to re-derive)."""
        from ..analysis.lexical import VERSION

        return VERSION, 0

    def upgrade_lexical(self, batch: int) -> int:
        """Re-derive the terms of up to ``batch`` more records (one transaction); returns how many."""
        return 0

    def lexical_rebuilt(self, version: int) -> None:
        """Record that every record's terms were just re-derived with ``version``."""
        return None

    # The version of the key-line rules the records were signed with (indexing.SIGNATURE_VERSION;
    # reindex.py). A store that keeps none reports its records current and has nothing to upgrade.
    def signature_state(self) -> tuple[int, int]:
        """(version every record was signed with, records still to look at)."""
        from ..analysis.indexing import SIGNATURE_VERSION

        return SIGNATURE_VERSION, 0

    def upgrade_signatures(self, batch: int) -> int:
        """Re-sign up to ``batch`` more records (one transaction) where the rules changed their
        signatures; returns how many were looked at."""
        return 0

    def signatures_rebuilt(self, version: int) -> None:
        """Record that every record was just signed with ``version``."""
        return None

    @abstractmethod
    def revisions(self, hexid: str) -> list[Revision]: ...

    @abstractmethod
    def list_records(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        project: str | None = None,
        include_forgotten: bool = False,
        only_forgotten: bool = False,
    ) -> list[Record]:
        """Records newest first; ``only_forgotten``: the forgotten ones alone (to restore one)."""

    @abstractmethod
    def find_records(self, where: RecordFilter, *, limit: int = 50, offset: int = 0) -> tuple[list[Record], int]:
        """A page of the records ``where`` lets through, newest first, and how many it lets through
        in all (the review page's listing)."""

    @abstractmethod
    def iter_records(self, *, include_forgotten: bool = False) -> Iterator[Record]: ...

    @abstractmethod
    def count(self, *, include_forgotten: bool = False) -> int: ...

    @abstractmethod
    def forget(self, hexid: str) -> bool: ...

    @abstractmethod
    def approve(self, hexid: str) -> bool:
        """A person confirmed one of this machine's live notes or automatic records: its origin
        becomes ``human``. False when there is no such record."""

    @abstractmethod
    def purge(self, hexid: str) -> bool: ...

    @abstractmethod
    def mark(self, hexid: str, relation: str, reason: str) -> bool:
        """A person marks a record ``wrong`` or ``outdated`` (``records.RELATIONS``) with a reason,
        replacing their earlier mark of that kind; it reads as a mark by ``records.HUMAN_MARK``.
        False when there is no such record."""

    @abstractmethod
    def unmark(self, hexid: str, relation: str) -> bool:
        """Take a person's mark back; False when there was none."""

    @abstractmethod
    def human_marks(self, hexid: str) -> list[HumanMark]:
        """A person's marks on a record, oldest first."""

    @abstractmethod
    def add_evidence(
        self, hexid: str, *, sources: int = 0, used_success: int = 0, session_id: str | None = None
    ) -> None:
        """Raise a record's counters; with ``session_id``, ``sources`` counts only the first time
        that session confirms the record."""

    @abstractmethod
    def stats(self) -> dict[str, Any]: ...

    # -- search ------------------------------------------------------------------------------
    def by_signature(self, signatures: Iterable[str], limit: int) -> list[str]:
        """Hexes of records with any of ``signatures``, those sharing most first."""
        # A signature on thousands of records is still the same error met again: kept when alone.
        return self._lookup("signatures", "sig", list(dict.fromkeys(signatures)), limit, only_rare=False)

    def by_symbol(self, symbols: Iterable[str], limit: int) -> list[str]:
        """Hexes of records with any of ``symbols``, those sharing most first."""
        # A symbol on thousands of records (`RuntimeError`) names no particular one: never alone.
        return self._lookup("symbols", "symbol", list(dict.fromkeys(symbols)), limit, only_rare=True)

    def by_keys(self, signatures: Iterable[str], symbols: Iterable[str], limit: int) -> list[str]:
        """``by_signature`` then ``by_symbol``, each up to ``limit``: a search's exact candidates (a
        store may ask both at once)."""
        return [*self.by_signature(signatures, limit), *self.by_symbol(symbols, limit)]

    @abstractmethod
    def _lookup(self, table: str, column: str, keys: list[str], limit: int, *, only_rare: bool) -> list[str]:
        """Records with any of ``keys`` (distinct) in ``table``'s ``column``. Keys on more than
        ``COMMON_KEY_RECORDS`` records are left out when rarer ones are asked for too: all records of
        the rare ones are read (from the key's index alone), those sharing most keys first, then by
        hex. With only common keys: none when ``only_rare``, else the most recent of a sample of
        ``COMMON_SAMPLE * limit`` of their records in index order."""

    @abstractmethod
    def term_stats(self, terms: Iterable[str]) -> TermStats: ...

    def term_stats_and_keys(
        self, terms: Iterable[str], signatures: Iterable[str], symbols: Iterable[str], limit: int
    ) -> tuple[TermStats, list[str]]:
        """``term_stats`` and ``by_keys``, a search's first look-ups: a store may ask both at once."""
        return self.term_stats(terms), self.by_keys(signatures, symbols, limit)

    @abstractmethod
    def by_terms(self, terms: list[str], limit: int) -> list[str]:
        """Hexes of records matching any of ``terms``, best full-text rank first."""

    @abstractmethod
    def indexed(self, hexids: Iterable[str], terms: Iterable[str] | None = None) -> dict[str, Indexed]:
        """The full-text terms each record was indexed with, by field, and its normalised key lines;
        with ``terms``, a store may give only those of them (ranking reads no other), the length whole."""

    def by_terms_indexed(
        self, terms: list[str], limit: int, hexids: Iterable[str], read: Iterable[str] | None = None
    ) -> tuple[list[str], dict[str, Indexed]]:
        """``by_terms``, and ``indexed`` of ``hexids`` and of the records found (a search's candidates):
        a store may do both at once."""
        found = self.by_terms(terms, limit)
        return found, self.indexed([*hexids, *found], read)

    def indexed_terms(self, hexids: Iterable[str]) -> dict[str, set[str]]:
        """The full-text terms each record was indexed with, every field together."""
        return {h: {*i.title, *i.body} for h, i in self.indexed(hexids).items()}

    @abstractmethod
    def symbol_counts(self, symbols: Iterable[str], total: int) -> dict[str, int]:
        """How many records hold each symbol, counted up to ``SYMBOL_COUNT_SHARE`` of ``total``
        records (and one more): rarer is worth more (shapes.symbol_rarity)."""

    @abstractmethod
    def project_keys(self, name: str) -> list[str]:
        """The keys of the projects named ``name`` in this store's records and sessions, the most
        recently seen first."""

    # -- sessions ----------------------------------------------------------------------------
    @abstractmethod
    def touch_session(self, session_id: str, project_key: str, project: str) -> None: ...

    def live_session(self, project_key: str, since: str, own_prefix: str) -> str | None:
        """The id of the session of ``project_key`` seen last, at ``since`` or later, whose id does
        not start with ``own_prefix`` (``session_link``); None when there is none. A store that
        does not implement it links nothing."""
        return None

    @abstractmethod
    def session(self, session_id: str) -> SessionState | None: ...

    @abstractmethod
    def recent_sessions(self, limit: int = 20) -> list[SessionState]:
        """The sessions seen last, the latest first."""

    @abstractmethod
    def session_searches(self, session_id: str, limit: int = SEARCHES_KEPT) -> list[SearchMade]:
        """What the session searched, the latest first (``recent_sessions`` fills them in too)."""

    @abstractmethod
    def record_search(self, session_id: str, query: str, hits: int) -> None:
        """Keep that the session searched ``query`` (redacted and cut by the caller) and got
        ``hits``; only its latest ``SEARCHES_KEPT`` searches are kept."""

    @abstractmethod
    def take_read(self, session_id: str, hexid: str, wanted: int, budget: int) -> int:
        """Atomically take up to ``wanted`` characters of the session's read budget; returns what
        was granted (0 when spent) and records the read."""

    @abstractmethod
    def set_failure(
        self,
        session_id: str,
        tool: str | None,
        error: str | None,
        *,
        signatures: Iterable[str] = (),
        command: str | None = None,
        checkout: str | None = None,
    ) -> None:
        """Make (tool, error) the session's last failure, with the error's signatures, the
        command that failed (None when the tool has none) and where in git it failed (the JSON of
        ``git_head.failure_point``, None outside git); the session's outcome becomes 失败. An
        error of None clears it."""

    @abstractmethod
    def record_edits(self, session_id: str, paths: Iterable[str]) -> None:
        """The session edited ``paths``: kept (with the time) only while a failure is pending, for
        ``Resolved.edited``."""

    @abstractmethod
    def resolve_failure(self, session_id: str, tool: str, command: str | None = None) -> Resolved | None:
        """``tool`` succeeded, running ``command`` (as kept: redacted; None for a tool without
        one): when the session's last failure is one of ``tool`` (names compared
        case-insensitively) and ``command`` runs its operation again (``store/closing.py``; a
        state-changing command is kept as a step of the fix instead), in one transaction the
        records read in the session since the failure
        get ``used_success + 1``, the notes written in it since the failure that share a signature
        with it become ``local_auto`` (``team_verified`` and ``human`` keep their origin), the
        failure is cleared and the session's outcome becomes 成功. None when there was no such
        failure (and nothing changed). The result also names the failure (tool, error, signatures,
        command, checkout), what the session did since it (notes written, files edited, steps run)
        and whether it was flaky (the same command passing with nothing changed: its signatures
        are counted, ``flaky_count``)."""

    @abstractmethod
    def flaky_count(self, signatures: Iterable[str]) -> int:
        """How often a failure with one of ``signatures`` passed on a re-run with nothing changed
        (the largest count of any of them)."""

    @abstractmethod
    def claim_recall(self, session_id: str, hexids: Iterable[str]) -> str | None:
        """The first of ``hexids`` not yet recalled to the session, now marked recalled; None when
        all were."""

    # -- transfer ----------------------------------------------------------------------------
    @abstractmethod
    def marks_by(self, hexid: str) -> list[tuple[str, str, str]]:
        """The marks a record made on others: (target hex, relation, created)."""

    @abstractmethod
    def import_record(
        self,
        record: Record,
        revisions: list[Revision],
        marks: list[tuple[str, str, str]],
        derived: Derived,
    ) -> bool:
        """Insert an exported record as it was (its revisions, the marks it made as (target hex,
        relation, created)); False when a record with that id already exists."""
