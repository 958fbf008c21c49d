"""SQLite schema as named, recorded migrations (after sqlite-utils' ``migrations`` and llm's
``logs.py``), declared in the shared shape (``store/migrations.py``): the store applies what is
missing when it is opened, one transaction per step, and records each in ``_migrations`` so
``jiyi doctor`` can list them. What is SQLite's own is here: a step is a function of the sqlite3
connection (autocommit: ``isolation_level=None``), the ``_migrations`` table, and how a step runs.

Never edit a migration that has shipped; add a new one: ``@migration`` for a step that runs in a
transaction, ``MIGRATIONS.add(name, fn, transactional=False)`` for one that cannot (``VACUUM``,
``PRAGMA journal_mode``), which must then be safe to run again.
"""

from __future__ import annotations

from ..migrations import Migrations

TYPE_CHECKING = False  # the steps import neither typing nor sqlite3 (and datetime with it) at run time
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

    Step = Callable[[sqlite3.Connection], None]

MIGRATIONS: Migrations[Step] = Migrations()


def _run(db: sqlite3.Connection, script: str) -> None:
    # Not executescript(): it commits first, and each migration must be one transaction.
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute(statement)


def migration(fn: Step) -> Step:
    """Declare ``fn`` as the next step, named after it, run in a transaction."""
    MIGRATIONS.add(fn.__name__, fn)
    return fn


@migration
def m001_records(db: sqlite3.Connection) -> None:
    _run(
        db,
        """
        CREATE TABLE records (
            rid INTEGER PRIMARY KEY,
            hex TEXT NOT NULL UNIQUE,
            remote INTEGER NOT NULL DEFAULT 0,
            title TEXT NOT NULL,
            type TEXT NOT NULL,
            scope TEXT NOT NULL,
            what TEXT NOT NULL,
            why TEXT NOT NULL,
            loc TEXT NOT NULL,
            learned TEXT NOT NULL,
            topic_key TEXT,
            topic_scope TEXT,
            revision INTEGER NOT NULL DEFAULT 1,
            fix TEXT,
            origin TEXT NOT NULL,
            project TEXT NOT NULL,
            project_key TEXT NOT NULL,
            environment TEXT NOT NULL DEFAULT '{}',
            tool_name TEXT,
            outcome TEXT NOT NULL DEFAULT '未知',
            sources INTEGER NOT NULL DEFAULT 1,
            used_success INTEGER NOT NULL DEFAULT 0,
            evidence_refs TEXT NOT NULL DEFAULT '[]',
            session_id TEXT NOT NULL DEFAULT '',
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            forgotten INTEGER NOT NULL DEFAULT 0,
            key_lines TEXT NOT NULL DEFAULT '[]',
            normalized TEXT NOT NULL DEFAULT '[]',
            sig_algorithm TEXT NOT NULL DEFAULT ''
        );
        -- One live record per topic: in its project for project scope, everywhere for global.
        CREATE UNIQUE INDEX records_topic ON records(topic_key, scope, topic_scope)
            WHERE topic_key IS NOT NULL AND forgotten = 0;
        CREATE INDEX records_project ON records(project_key);
        CREATE INDEX records_updated ON records(updated);

        CREATE TABLE revisions (
            hex TEXT NOT NULL,
            revision INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            created TEXT NOT NULL,
            change TEXT NOT NULL,
            snapshot TEXT NOT NULL,
            PRIMARY KEY (hex, revision)
        );

        CREATE TABLE relations (
            source_hex TEXT NOT NULL,
            target_hex TEXT NOT NULL,
            relation TEXT NOT NULL,
            created TEXT NOT NULL,
            PRIMARY KEY (source_hex, target_hex, relation)
        );
        CREATE INDEX relations_target ON relations(target_hex);

        CREATE TABLE signatures (
            sig TEXT NOT NULL,
            hex TEXT NOT NULL,
            PRIMARY KEY (sig, hex)
        ) WITHOUT ROWID;
        CREATE INDEX signatures_hex ON signatures(hex);

        CREATE TABLE symbols (
            symbol TEXT NOT NULL,
            hex TEXT NOT NULL,
            PRIMARY KEY (symbol, hex)
        ) WITHOUT ROWID;
        CREATE INDEX symbols_hex ON symbols(hex);

        CREATE VIRTUAL TABLE records_fts USING fts5(title, body, tokenize = "unicode61 tokenchars '_'");
        CREATE VIRTUAL TABLE records_vocab USING fts5vocab(records_fts, row);
        """,
    )


@migration
def m002_sessions(db: sqlite3.Connection) -> None:
    _run(
        db,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project_key TEXT NOT NULL DEFAULT '',
            project TEXT NOT NULL DEFAULT '',
            started TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            read_used INTEGER NOT NULL DEFAULT 0,
            last_tool TEXT,
            last_error TEXT,
            last_failure_at TEXT,
            outcome TEXT NOT NULL DEFAULT '未知'
        );
        CREATE INDEX sessions_project ON sessions(project_key, last_seen);

        CREATE TABLE session_reads (
            session_id TEXT NOT NULL,
            hex TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (session_id, hex)
        ) WITHOUT ROWID;

        CREATE TABLE session_notes (
            session_id TEXT NOT NULL,
            hex TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (session_id, hex)
        ) WITHOUT ROWID;
        """,
    )


@migration
def m003_success_loop(db: sqlite3.Connection) -> None:
    # Closing the loop (docs/spec.md §5): the failure's signatures, kept so the success needs no analysis;
    # the latest read / write of a record in a session ("since the failure"); what proactive recall
    # already handed a session.
    _run(
        db,
        """
        ALTER TABLE sessions ADD COLUMN last_signatures TEXT;
        ALTER TABLE session_reads ADD COLUMN last_at TEXT;
        ALTER TABLE session_notes ADD COLUMN last_at TEXT;
        CREATE TABLE session_recalls (
            session_id TEXT NOT NULL,
            hex TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (session_id, hex)
        ) WITHOUT ROWID;
        """,
    )


@migration
def m004_auto_records(db: sqlite3.Connection) -> None:
    # Automatic records (docs/spec.md §5): the command that failed, kept with the last failure, and the
    # files a session edited while a failure was pending (the evident fix); the sessions that
    # confirmed a record by meeting and fixing its failure again (each one source).
    _run(
        db,
        """
        ALTER TABLE sessions ADD COLUMN last_command TEXT;
        CREATE TABLE session_edits (
            session_id TEXT NOT NULL,
            path TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (session_id, path)
        ) WITHOUT ROWID;
        CREATE TABLE record_confirmations (
            hex TEXT NOT NULL,
            session_id TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (hex, session_id)
        ) WITHOUT ROWID;
        """,
    )


@migration
def m005_reproduction(db: sqlite3.Connection) -> None:
    # Replay verification (docs/spec.md §5): how to meet a note's failure again (command, repo, commit,
    # cwd) and the replay runs so far, each as JSON.
    _run(
        db,
        """
        ALTER TABLE records ADD COLUMN reproduction TEXT;
        ALTER TABLE records ADD COLUMN verification TEXT;
        """,
    )


# Queues a record for the team server (docs/team-protocol.md). Only while syncing is on: a store
# that never met a team keeps no outbox, and ``sync`` sets ``pulling`` while it writes what it
# pulled, so the team's records never queue as this machine's.
_QUEUE = (
    "INSERT INTO outbox (hex, queued, changes) VALUES (NEW.hex, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 1) "
    "ON CONFLICT(hex) DO UPDATE SET changes = outbox.changes + 1"
)
_SYNCING = "(SELECT value FROM sync_state WHERE key = 'sync') = 'on'"


@migration
def m006_team_sync(db: sqlite3.Connection) -> None:
    # Team memory: the outbox (one row a record, ``changes`` counts the writes since it was queued,
    # so a push removes a row only when nothing changed while it was on the way), the client's
    # state, and the team's share of each record's counters (the pulled totals less this
    # machine's own, which a push sends). Topics are unique among this machine's records only: a
    # pulled record with the same topic is another machine's.
    _run(
        db,
        """
        CREATE TABLE outbox (
            hex TEXT PRIMARY KEY,
            queued TEXT NOT NULL,
            changes INTEGER NOT NULL DEFAULT 1,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_try TEXT NOT NULL DEFAULT '',
            last_error TEXT
        );
        CREATE TABLE sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO sync_state (key, value) VALUES ('machine', lower(hex(randomblob(16))));
        INSERT INTO sync_state (key, value) VALUES ('cursor', '0');
        INSERT INTO sync_state (key, value) VALUES ('sync', 'off');
        CREATE TABLE team_evidence (
            hex TEXT PRIMARY KEY,
            sources INTEGER NOT NULL DEFAULT 0,
            used_success INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        DROP INDEX records_topic;
        CREATE UNIQUE INDEX records_topic ON records(topic_key, scope, topic_scope)
            WHERE topic_key IS NOT NULL AND forgotten = 0 AND remote = 0;
        """,
    )
    # Trigger bodies hold semicolons: one statement each, not through _run.
    db.execute(f"CREATE TRIGGER outbox_insert AFTER INSERT ON records WHEN {_SYNCING} BEGIN {_QUEUE}; END")
    changed = " OR ".join(
        f"OLD.{c} IS NOT NEW.{c}" for c in ("revision", "sources", "used_success", "origin", "reproduction")
    )
    db.execute(
        f"CREATE TRIGGER outbox_update AFTER UPDATE ON records WHEN {_SYNCING} AND ({changed}) BEGIN {_QUEUE}; END"
    )
    db.execute(
        "CREATE TRIGGER outbox_delete AFTER DELETE ON records BEGIN "
        "DELETE FROM outbox WHERE hex = OLD.hex; DELETE FROM team_evidence WHERE hex = OLD.hex; END"
    )


@migration
def m007_auto_record_queue(db: sqlite3.Connection) -> None:
    # The hook's quick path closes a loop and queues its automatic record here, in one transaction;
    # a detached finisher writes the record and deletes the row (capture/finisher.py). ``failure`` is
    # the resolved failure as JSON (tool, error, signatures, command, noted, edited), redacted as
    # the session kept it; ``command`` the succeeding call's, redacted; ``attempts`` counts the
    # finishers that took the row, so one that always fails is given up on.
    _run(
        db,
        """
        CREATE TABLE auto_record_queue (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            failure TEXT NOT NULL,
            command TEXT,
            cwd TEXT NOT NULL,
            queued TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0
        );
        """,
    )


@migration
def m008_team_forget(db: sqlite3.Connection) -> None:
    # Forget on the server (docs/team-protocol.md): this machine's records forgotten (purge 0) or
    # purged (purge 1, the row deleted) while syncing is on queue here, in the same transaction,
    # until the server answered for them. A pulled record (remote) forgotten here stays a local
    # choice: its author takes it out of the team.
    _run(db, "CREATE TABLE outbox_forget (hex TEXT PRIMARY KEY, purge INTEGER NOT NULL, queued TEXT NOT NULL)")
    stamp = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    db.execute(
        "CREATE TRIGGER outbox_forget_soft AFTER UPDATE OF forgotten ON records "
        f"WHEN {_SYNCING} AND NEW.remote = 0 AND NEW.forgotten = 1 AND OLD.forgotten = 0 BEGIN "
        f"INSERT INTO outbox_forget (hex, purge, queued) VALUES (NEW.hex, 0, {stamp}) ON CONFLICT(hex) DO NOTHING; END"
    )
    db.execute(
        f"CREATE TRIGGER outbox_forget_purge AFTER DELETE ON records WHEN {_SYNCING} AND OLD.remote = 0 BEGIN "
        f"INSERT INTO outbox_forget (hex, purge, queued) VALUES (OLD.hex, 1, {stamp}) "
        "ON CONFLICT(hex) DO UPDATE SET purge = 1; END"
    )


@migration
def m009_store_meta(db: sqlite3.Connection) -> None:
    # Facts about the store as a whole. ``lexical_version``: the definition of the full-text terms
    # (lexical.VERSION) the whole index was built with; stores made before this step hold version 1
    # (ASCII words and CJK bigrams). A store whose index is older re-derives it (reindex.py).
    _run(
        db,
        """
        CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO store_meta (key, value) VALUES ('lexical_version', '1');
        """,
    )


@migration
def m010_failure_checkout(db: sqlite3.Connection) -> None:
    # Where the last failure happened in git terms (``git_head.failure_point``: the checkout's top,
    # HEAD commit, folder), kept when it is met: an automatic record written when it is fixed
    # replays it at that commit, not at the one the fix may since have been committed as.
    _run(db, "ALTER TABLE sessions ADD COLUMN last_checkout TEXT")


@migration
def m011_forget_refused(db: sqlite3.Connection) -> None:
    # Forgets the team server refused (docs/team-protocol.md, "Forget"): the record is on the team
    # as another member's, who pushed it first. Kept out of ``outbox_forget`` so they are not sent
    # again at every sync, and kept here so ``jiyi team status`` can say which the operator must
    # take out. A later forget or purge of the record queues (and is sent) as usual.
    _run(db, "CREATE TABLE forget_refused (hex TEXT PRIMARY KEY, purge INTEGER NOT NULL, at TEXT NOT NULL)")


@migration
def m012_capture_steps(db: sqlite3.Connection) -> None:
    # What a session ran between a failure and its passing re-run that changed state (an install, a
    # config write: ``analysis/commands.py``), kept like ``session_edits`` while the failure is
    # pending: with the edits, the fix an automatic record names. The failures of other operations
    # a newer failure took the place of (parked, at most ``statements.PARKED``), so interleaved
    # failures are each closed by their own re-run. And the failures that passed on a re-run with
    # nothing changed (flaky), counted by error signature, never recorded as fixed.
    _run(
        db,
        """
        CREATE TABLE session_steps (
            session_id TEXT NOT NULL,
            at TEXT NOT NULL,
            command TEXT NOT NULL
        );
        CREATE INDEX session_steps_session ON session_steps(session_id, at);
        CREATE TABLE session_parked (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            tool TEXT,
            error TEXT NOT NULL,
            failed_at TEXT NOT NULL,
            signatures TEXT,
            command TEXT,
            checkout TEXT
        );
        CREATE INDEX session_parked_session ON session_parked(session_id, id);
        CREATE TABLE flaky_failures (sig TEXT PRIMARY KEY, count INTEGER NOT NULL, last_at TEXT NOT NULL)
        """,
    )


@migration
def m013_review_page(db: sqlite3.Connection) -> None:
    # A person's marks from the review page (``Store.mark``): wrong or outdated, with the reason,
    # one of each kind a record. Read with the records' own marks (``relations``), which need a
    # record that made them. And the review page's listing (``Store.find_records``), newest first,
    # whole or by origin (the inbox is automatic records) or type, with its count: at 100 000
    # records the count alone scanned the table in 49 ms, the inbox's count in 29 ms, a listing by
    # type sorted every match (bench/ui_pages.py); from these indexes 0.1-15 ms. Partial (live records
    # only), not led by ``forgotten``: led by it, SQLite took one for ``forgotten = 0 AND hex IN (…)``
    # over the id's own index, and every search's record loads scanned it.
    _run(
        db,
        """
        CREATE TABLE human_marks (
            hex TEXT NOT NULL,
            relation TEXT NOT NULL,
            reason TEXT NOT NULL,
            created TEXT NOT NULL,
            PRIMARY KEY (hex, relation)
        ) WITHOUT ROWID;
        CREATE INDEX records_live ON records(updated) WHERE forgotten = 0;
        CREATE INDEX records_origin ON records(origin, updated) WHERE forgotten = 0;
        CREATE INDEX records_type ON records(type, updated) WHERE forgotten = 0;
        """,
    )


@migration
def m014_project_keys(db: sqlite3.Connection) -> None:
    # ``Store.project_keys`` (``memory.project(name)``) grouped every live record of a project:
    # 200-500 ms at 100 000 records of one project. From this index its distinct keys are a few
    # look-ups each, and the latest update of each one more.
    _run(db, "CREATE INDEX records_project_keys ON records(project, project_key, updated) WHERE forgotten = 0;")


@migration
def m015_session_searches(db: sqlite3.Connection) -> None:
    # What a session searched (``Store.record_search``): the query as redacted and cut, when, and
    # how many hits; the review page's sessions show them. The last ``base.SEARCHES_KEPT`` a
    # session, found newest first from the index (rowid is the order written).
    _run(
        db,
        """
        CREATE TABLE session_searches (
            session_id TEXT NOT NULL,
            at TEXT NOT NULL,
            query TEXT NOT NULL,
            hits INTEGER NOT NULL
        );
        CREATE INDEX session_searches_by_session ON session_searches(session_id);
        """,
    )


@migration
def m016_index_merging(db: sqlite3.Connection) -> None:
    # The full-text index merges a level of its segments once two are there rather than four
    # (FTS5's `usermerge`, for the `merge` steps of connection.SQLiteConnection.upkeep): every
    # query term is looked up in each segment. Kept in the index's own config table.
    db.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('usermerge', 2)")


def recorded(db: sqlite3.Connection) -> list[str]:
    """The names ``db``'s ``_migrations`` holds, in the order applied; none without the table."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'").fetchone():
        return []
    return [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY applied_at, name")]


def apply(db: sqlite3.Connection, now: Callable[[], str]) -> list[str]:
    """Apply what is missing; returns the names applied now."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    applied: list[str] = []
    for step in MIGRATIONS.pending(row[0] for row in db.execute("SELECT name FROM _migrations")):
        if not step.transactional:
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (step.name,)).fetchone():
                continue
            step.step(db)  # statement by statement, each committed as it runs
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the lock.
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (step.name,)).fetchone():
                db.execute("COMMIT")
                continue
            if step.transactional:
                step.step(db)
            db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (step.name, now()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        applied.append(step.name)
    return applied
