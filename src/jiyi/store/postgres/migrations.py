"""PostgreSQL schema as named, recorded migrations, declared in the shared shape
(``store/migrations.py``) like SQLite's: applied when a ``PgDatabase`` opens, one transaction per
step, each recorded in ``_migrations``. What is PostgreSQL's own is here: a step is SQL text, and
``apply`` creates the schema and holds an advisory lock (per schema) while it looks and applies,
since several server processes may start at once against one database: each step runs exactly once.

Never edit a migration that has shipped; add a new one. A step that cannot run in a transaction
(``CREATE INDEX CONCURRENTLY``) is declared ``transactional=False``: one statement, safe to run
again. A read replica is never migrated (a hot standby refuses writes): its database only checks
``missing`` is empty, the steps having come from the primary through replication.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from ..migrations import Migrations

MIGRATIONS: Migrations[str] = Migrations()


def migration(name: str, sql: str, *, transactional: bool = True) -> None:
    MIGRATIONS.add(name, sql, transactional=transactional)


# Everything is keyed by team first: every query names the team (docs/team-protocol.md).
migration(
    "m001_records",
    """
    CREATE TABLE teams (
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created text NOT NULL
    );
    CREATE TABLE tokens (
        hash text PRIMARY KEY,  -- sha256 of the token; the token itself is never stored
        team_id bigint NOT NULL REFERENCES teams(id),
        member text NOT NULL,
        created text NOT NULL,
        revoked text
    );
    CREATE INDEX tokens_member ON tokens(team_id, member);

    -- One sequence for every change a pull must see (record_seq), assigned last in a transaction
    -- under the team's advisory lock, so seq order is commit order.
    CREATE SEQUENCE record_seq;
    CREATE TABLE records (
        team_id bigint NOT NULL REFERENCES teams(id),
        hex text NOT NULL,
        rid bigserial,
        remote boolean NOT NULL DEFAULT false,
        title text NOT NULL,
        type text NOT NULL,
        scope text NOT NULL,
        what text NOT NULL,
        why text NOT NULL,
        loc text NOT NULL,
        learned text NOT NULL,
        topic_key text,
        topic_scope text,
        revision integer NOT NULL DEFAULT 1,
        fix jsonb,
        origin text NOT NULL,
        project text NOT NULL,
        project_key text NOT NULL,
        environment jsonb NOT NULL DEFAULT '{}',
        tool_name text,
        outcome text NOT NULL DEFAULT '未知',
        sources integer NOT NULL DEFAULT 1,
        used_success integer NOT NULL DEFAULT 0,
        evidence_refs jsonb NOT NULL DEFAULT '[]',
        session_id text NOT NULL DEFAULT '',
        created text NOT NULL,
        updated text NOT NULL,
        reproduction jsonb,
        verification jsonb,
        forgotten boolean NOT NULL DEFAULT false,
        key_lines jsonb NOT NULL DEFAULT '[]',
        normalized jsonb NOT NULL DEFAULT '[]',
        sig_algorithm text NOT NULL DEFAULT '',
        -- jiyi's own lexical terms (title weight A, body D); NULL once forgotten.
        tsv tsvector,
        seq bigint NOT NULL DEFAULT nextval('record_seq'),
        PRIMARY KEY (team_id, hex)
    );
    -- Not unique, unlike SQLite's: two members may each write a record of the same topic.
    CREATE INDEX records_topic ON records(team_id, topic_key, scope, topic_scope)
        WHERE topic_key IS NOT NULL AND NOT forgotten;
    CREATE INDEX records_hex ON records(hex);
    CREATE INDEX records_rid ON records(team_id, rid);
    CREATE INDEX records_seq ON records(team_id, seq);
    CREATE INDEX records_updated ON records(team_id, updated);
    CREATE INDEX records_tsv ON records USING gin (tsv);

    CREATE TABLE revisions (
        team_id bigint NOT NULL,
        hex text NOT NULL,
        revision integer NOT NULL,
        session_id text NOT NULL,
        created text NOT NULL,
        change text NOT NULL,
        snapshot jsonb NOT NULL,
        PRIMARY KEY (team_id, hex, revision)
    );
    CREATE TABLE relations (
        team_id bigint NOT NULL,
        source_hex text NOT NULL,
        target_hex text NOT NULL,
        relation text NOT NULL,
        created text NOT NULL,
        PRIMARY KEY (team_id, source_hex, target_hex, relation)
    );
    CREATE INDEX relations_target ON relations(team_id, target_hex);
    CREATE TABLE signatures (
        team_id bigint NOT NULL,
        sig text NOT NULL,
        hex text NOT NULL,
        PRIMARY KEY (team_id, sig, hex)
    );
    CREATE INDEX signatures_hex ON signatures(team_id, hex);
    CREATE TABLE symbols (
        team_id bigint NOT NULL,
        symbol text NOT NULL,
        hex text NOT NULL,
        PRIMARY KEY (team_id, symbol, hex)
    );
    CREATE INDEX symbols_hex ON symbols(team_id, hex);

    -- Documents per term for term_stats (ts_stat reads every vector: seconds at 1M records); the
    -- term '' (never a real one) counts the indexed records. Kept by a trigger on every write.
    CREATE TABLE terms (
        team_id bigint NOT NULL,
        term text NOT NULL,
        docs bigint NOT NULL,
        PRIMARY KEY (team_id, term)
    );
    CREATE FUNCTION records_terms() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        gone text[] := '{}';
        came text[] := '{}';
        tid bigint;
    BEGIN
        IF TG_OP <> 'INSERT' AND OLD.tsv IS NOT NULL THEN
            gone := tsvector_to_array(OLD.tsv) || ''::text;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.tsv IS NOT NULL THEN
            came := tsvector_to_array(NEW.tsv) || ''::text;
        END IF;
        tid := CASE WHEN TG_OP = 'DELETE' THEN OLD.team_id ELSE NEW.team_id END;
        -- In term order, so concurrent writers lock the shared rows in one order (no deadlock).
        INSERT INTO terms AS t (team_id, term, docs)
            SELECT tid, d.term, sum(d.n) FROM (
                SELECT unnest(came) AS term, 1 AS n UNION ALL SELECT unnest(gone), -1
            ) d GROUP BY d.term HAVING sum(d.n) <> 0 ORDER BY d.term
        ON CONFLICT (team_id, term) DO UPDATE SET docs = t.docs + excluded.docs;
        RETURN NULL;
    END $$;
    CREATE TRIGGER records_terms AFTER INSERT OR DELETE OR UPDATE OF tsv ON records
        FOR EACH ROW EXECUTE FUNCTION records_terms();

    -- Evidence per member as absolute values: a retried push sends the same numbers again.
    CREATE TABLE evidence (
        team_id bigint NOT NULL,
        hex text NOT NULL,
        member text NOT NULL,
        sources integer NOT NULL,
        used_success integer NOT NULL,
        PRIMARY KEY (team_id, hex, member)
    );
    CREATE TABLE verifications (
        id bigserial PRIMARY KEY,
        team_id bigint NOT NULL,
        hex text NOT NULL,
        at text NOT NULL,
        passed boolean NOT NULL,
        how text NOT NULL,
        environment text NOT NULL,
        detail text NOT NULL
    );
    CREATE INDEX verifications_hex ON verifications(team_id, hex);
    """,
)

migration(
    "m002_sessions",
    """
    CREATE TABLE sessions (
        team_id bigint NOT NULL,
        id text NOT NULL,
        project_key text NOT NULL DEFAULT '',
        project text NOT NULL DEFAULT '',
        started text NOT NULL,
        last_seen text NOT NULL,
        read_used integer NOT NULL DEFAULT 0,
        last_tool text,
        last_error text,
        last_failure_at text,
        last_signatures jsonb,
        last_command text,
        outcome text NOT NULL DEFAULT '未知',
        PRIMARY KEY (team_id, id)
    );
    CREATE TABLE session_reads (
        team_id bigint NOT NULL, session_id text NOT NULL, hex text NOT NULL, at text NOT NULL, last_at text,
        PRIMARY KEY (team_id, session_id, hex)
    );
    CREATE TABLE session_notes (
        team_id bigint NOT NULL, session_id text NOT NULL, hex text NOT NULL, at text NOT NULL, last_at text,
        PRIMARY KEY (team_id, session_id, hex)
    );
    CREATE TABLE session_recalls (
        team_id bigint NOT NULL, session_id text NOT NULL, hex text NOT NULL, at text NOT NULL,
        PRIMARY KEY (team_id, session_id, hex)
    );
    CREATE TABLE session_edits (
        team_id bigint NOT NULL, session_id text NOT NULL, path text NOT NULL, at text NOT NULL,
        PRIMARY KEY (team_id, session_id, path)
    );
    CREATE TABLE record_confirmations (
        team_id bigint NOT NULL, hex text NOT NULL, session_id text NOT NULL, at text NOT NULL,
        PRIMARY KEY (team_id, hex, session_id)
    );
    """,
)

# Forget on the server (docs/team-protocol.md): one row a record taken out of the team, so pulls
# learn of it by cursor (``seq`` from record_seq, like the records' own) and a push of a purged
# record's old copy from a machine that has not pulled yet cannot bring its text back.
migration(
    "m003_tombstones",
    """
    CREATE TABLE tombstones (
        team_id bigint NOT NULL,
        hex text NOT NULL,
        purged boolean NOT NULL,
        at text NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (team_id, hex)
    );
    CREATE INDEX tombstones_seq ON tombstones(team_id, seq);
    """,
)


# Every write used to add to the shared ``terms`` rows (the '' count above all) under a row lock
# held to its commit, so concurrent pushes of one team queued on them (bench/team_scale.py). Now
# the trigger only appends a record's term changes to ``term_changes`` (no shared row), and
# each write folds what is pending into ``terms`` just before its commit, one folder at a time (the
# others skip); a count is ``terms`` plus what is still pending, so it stays exact.
migration(
    "m004_term_changes",
    """
    CREATE TABLE term_changes (
        team_id bigint NOT NULL,
        term text NOT NULL,
        n integer NOT NULL
    );
    CREATE INDEX term_changes_term ON term_changes(team_id, term);
    CREATE OR REPLACE FUNCTION records_terms() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    DECLARE
        gone text[] := '{}';
        came text[] := '{}';
        tid bigint;
    BEGIN
        IF TG_OP <> 'INSERT' AND OLD.tsv IS NOT NULL THEN
            gone := tsvector_to_array(OLD.tsv) || ''::text;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.tsv IS NOT NULL THEN
            came := tsvector_to_array(NEW.tsv) || ''::text;
        END IF;
        tid := CASE WHEN TG_OP = 'DELETE' THEN OLD.team_id ELSE NEW.team_id END;
        INSERT INTO term_changes (team_id, term, n)
            SELECT tid, d.term, sum(d.n) FROM (
                SELECT unnest(came) AS term, 1 AS n UNION ALL SELECT unnest(gone), -1
            ) d GROUP BY d.term HAVING sum(d.n) <> 0;
        RETURN NULL;
    END $$;
    """,
)

# The queue churns (every write adds rows, every fold deletes them): vacuumed after 1 000 dead rows
# whatever its size, not after the default 20 % of a table that is nearly always empty; and never
# truncated, as truncating waits up to 5 s for an exclusive lock that then holds every write up
# (pushes of ~5.5 s, one per VACUUM, in bench/team_scale.py).
migration(
    "m005_term_changes_vacuum",
    """
    ALTER TABLE term_changes SET (
        autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0, vacuum_truncate = false
    );
    """,
)

# GIN's fast update parks new entries in a pending list that every full-text look-up then reads in
# full until a VACUUM (or 4 MB of them) merges it: under a stream of pushes by_terms grew from ~3 ms
# to ~110 ms at 100 000 records (8 976 pending entries, autovacuum off; bench/team_scale.py). Entries
# now go straight into the index: a push costs a little more, a search never reads a pending list.
migration(
    "m006_full_text_without_pending_list",
    """
    ALTER INDEX records_tsv SET (fastupdate = off);
    SELECT gin_clean_pending_list('records_tsv'::regclass);
    """,
)

# The lexical.VERSION each team's full-text vectors were built with (store/postgres/lexical.py), per team since a
# team's records are its own index (every look-up and term count names the team) and a team is
# upgraded, resumed and reported on its own. A team with no row reads as version 1, so every team of
# a database written before this step (or by an older server still running) counts as old.
# ``upgrade_to`` / ``after_rid`` while an upgrade is under way: every live record of the team with a
# rid up to ``after_rid`` has been re-derived for ``upgrade_to``. No foreign key to ``teams``: a
# record insert's key-share lock on the team's row should not meet this row's updates at all.
migration(
    "m007_lexical_versions",
    """
    CREATE TABLE lexical_versions (
        team_id bigint PRIMARY KEY,
        version integer NOT NULL,
        upgrade_to integer,
        after_rid bigint NOT NULL DEFAULT 0
    );
    """,
)


# sqlite migrations.m010: where the last failure happened in git terms (git_head.failure_point).
migration("m008_failure_checkout", "ALTER TABLE sessions ADD COLUMN last_checkout text;")


# Who may take a record out of the team (docs/team-protocol.md, "Forget"): the member whose push
# first stored it, by the token's member name. Set once, by that first push, never by a later
# revision. Records stored before this step have no author (NULL): any member of their team may
# forget or purge them, as every member could before. A nullable column without a default: adding
# it rewrites no row.
migration(
    "m009_record_authors",
    """
    ALTER TABLE records ADD COLUMN author text;
    """,
)


# sqlite migrations.m012: the state-changing commands a session ran while a failure was pending,
# the failures of other operations a newer one took the place of (parked), and the failures that
# passed on a re-run with nothing changed (flaky), by signature and team.
migration(
    "m010_capture_steps",
    """
    CREATE TABLE session_steps (
        team_id bigint NOT NULL,
        session_id text NOT NULL,
        at text NOT NULL,
        command text NOT NULL
    );
    CREATE INDEX session_steps_session ON session_steps (team_id, session_id, at);
    CREATE TABLE session_parked (
        id bigserial PRIMARY KEY,
        team_id bigint NOT NULL,
        session_id text NOT NULL,
        tool text,
        error text NOT NULL,
        failed_at text NOT NULL,
        signatures jsonb,
        command text,
        checkout text
    );
    CREATE INDEX session_parked_session ON session_parked (team_id, session_id, id);
    CREATE TABLE flaky_failures (
        team_id bigint NOT NULL,
        sig text NOT NULL,
        count integer NOT NULL,
        last_at text NOT NULL,
        PRIMARY KEY (team_id, sig)
    );
    """,
)


# What a token may do (docs/team-protocol.md, "Roles"): ``member`` pushes, pulls, searches and takes
# out what it authored; ``runner`` also reports replay results; ``operator`` may do everything,
# take out and revise any record included. Tokens made before this step were all alike and read as
# members. A constant default: adding the column rewrites no row.
migration(
    "m011_token_roles",
    """
    ALTER TABLE tokens ADD COLUMN role text NOT NULL DEFAULT 'member'
        CHECK (role IN ('member', 'runner', 'operator'));
    """,
)


# Which runner (the token's member name) reported a replay run; NULL for runs reported before.
migration(
    "m012_verification_runners",
    """
    ALTER TABLE verifications ADD COLUMN runner text;
    """,
)


# sqlite migrations.m013: a person's marks (``Store.mark``), by team.
migration(
    "m013_human_marks",
    """
    CREATE TABLE human_marks (
        team_id bigint NOT NULL,
        hex text NOT NULL,
        relation text NOT NULL,
        reason text NOT NULL,
        created text NOT NULL,
        PRIMARY KEY (team_id, hex, relation)
    );
    """,
)


# sqlite migrations.m014: a project's distinct keys from an index (``Store.project_keys``).
migration(
    "m014_project_keys",
    """
    CREATE INDEX records_project_keys ON records (team_id, project, project_key, updated) WHERE NOT forgotten;
    """,
)


# sqlite migrations.m015: what a session searched (``Store.record_search``), the last few a session.
migration(
    "m015_session_searches",
    """
    CREATE TABLE session_searches (
        id bigserial PRIMARY KEY,
        team_id bigint NOT NULL,
        session_id text NOT NULL,
        at text NOT NULL,
        query text NOT NULL,
        hits integer NOT NULL
    );
    CREATE INDEX session_searches_by_session ON session_searches (team_id, session_id, id);
    """,
)


# The team server's refused requests (``team/server/refusals.py``), counted in memory and written
# a row per (team, kind, who) at most every few seconds: a flood is one row's count, not a write
# a request. team_id 0: refused before any team was known (a bad token, by address).
migration(
    "m016_refusals",
    """
    CREATE TABLE refusals (
        team_id bigint NOT NULL,
        kind text NOT NULL,
        who text NOT NULL,
        detail text NOT NULL,
        count bigint NOT NULL,
        first_at text NOT NULL,
        last_at text NOT NULL,
        PRIMARY KEY (team_id, kind, who)
    );
    CREATE INDEX refusals_latest ON refusals (last_at);
    """,
)


# Per team, the version of the key-line rules its records were signed with (analysis.indexing.
# SIGNATURE_VERSION; store/postgres/signing.py) and the cursor of a re-signing under way, as
# m007_lexical_versions does for the terms. A team without a row was signed before versions were kept.
migration(
    "m017_signature_versions",
    """
    CREATE TABLE signature_versions (
        team_id bigint PRIMARY KEY,
        version integer NOT NULL,
        upgrade_to integer,
        after_rid bigint NOT NULL DEFAULT 0
    );
    """,
)


# A record's signatures and symbols as arrays on its row (``rows.SELECT``) besides their look-up
# tables: loading a search's ~35 candidates read them with two subqueries a row, 0.5 of 1.2 ms of
# the load at 100 000 records (bench/team_scale.py --direct). Written by every put from now on; NULL
# on the rows before, which are read through the tables as before until filled in batches
# (store/postgres/keys.py), found by the partial index (every row of a database upgraded now, none of
# one made since): filling them here rewrote every row, 7.3 minutes of a server's start at 1 000 000
# records. Not built CONCURRENTLY: that waits for every transaction, the other starting servers'
# waits for the migration lock among them. The tables keep the look-ups (``search.by_keys``).
migration(
    "m018_record_keys",
    """
    ALTER TABLE records ADD COLUMN sigs text[], ADD COLUMN syms text[];
    CREATE INDEX records_keys_unfilled ON records (team_id, rid) WHERE sigs IS NULL;
    """,
)


def recorded(conn: psycopg.Connection[Any]) -> list[str]:
    """The names ``conn``'s schema (its search_path) recorded, in the order applied; none without
    a ``_migrations``. Reads only."""
    row = conn.execute("SELECT to_regclass('_migrations') IS NOT NULL").fetchone()
    if not (row and row[0]):
        return []
    return [str(r[0]) for r in conn.execute("SELECT name FROM _migrations ORDER BY applied_at, name")]


def unknown(conn: psycopg.Connection[Any]) -> list[str]:
    """The migrations ``conn``'s schema recorded that this code does not know (a newer jiyi applied
    them), in the order applied. Reads only."""
    return MIGRATIONS.unknown(recorded(conn))


def missing(conn: psycopg.Connection[Any]) -> list[str]:
    """The names of the migrations this code knows that ``conn``'s schema (its search_path) has not
    recorded, in order: every one when it has no ``_migrations``. Reads only."""
    return [m.name for m in MIGRATIONS.pending(recorded(conn))]


def apply(conn: psycopg.Connection[Any], schema: str, now: Callable[[], str]) -> list[str]:
    """Create ``schema`` if missing and apply what is missing on ``conn`` (autocommit, its
    search_path set to the schema); returns the names applied now."""
    # Session-level, not per step: the schema and _migrations must not be created twice either.
    conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"jiyi-migrate:{schema}",))
    try:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name text PRIMARY KEY, applied_at text NOT NULL)")
        applied: list[str] = []
        for step in MIGRATIONS.pending(row[0] for row in conn.execute("SELECT name FROM _migrations")):
            if not step.transactional:
                conn.execute(step.step.encode())  # autocommit: outside any transaction
            with conn.transaction():
                if step.transactional:
                    conn.execute(step.step.encode())
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)", (step.name, now()))
            applied.append(step.name)
        return applied
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"jiyi-migrate:{schema}",))
