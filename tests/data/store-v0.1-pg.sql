--
-- PostgreSQL database dump
--

\restrict u36IU9O4cJ4IUJo48aQupquMu8EhE9aYv9wv1UQqgGnNRAHnixaG4uVPisBO6qe

-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: jiyi_store_v0_1; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA jiyi_store_v0_1;


--
-- Name: records_terms(); Type: FUNCTION; Schema: jiyi_store_v0_1; Owner: -
--

CREATE FUNCTION jiyi_store_v0_1.records_terms() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'jiyi_store_v0_1'
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: _migrations; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1._migrations (
    name text NOT NULL,
    applied_at text NOT NULL
);


--
-- Name: evidence; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.evidence (
    team_id bigint NOT NULL,
    hex text NOT NULL,
    member text NOT NULL,
    sources integer NOT NULL,
    used_success integer NOT NULL
);


--
-- Name: lexical_versions; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.lexical_versions (
    team_id bigint NOT NULL,
    version integer NOT NULL,
    upgrade_to integer,
    after_rid bigint DEFAULT 0 NOT NULL
);


--
-- Name: record_confirmations; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.record_confirmations (
    team_id bigint NOT NULL,
    hex text NOT NULL,
    session_id text NOT NULL,
    at text NOT NULL
);


--
-- Name: record_seq; Type: SEQUENCE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE SEQUENCE jiyi_store_v0_1.record_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: records; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.records (
    team_id bigint NOT NULL,
    hex text NOT NULL,
    rid bigint NOT NULL,
    remote boolean DEFAULT false NOT NULL,
    title text NOT NULL,
    type text NOT NULL,
    scope text NOT NULL,
    what text NOT NULL,
    why text NOT NULL,
    loc text NOT NULL,
    learned text NOT NULL,
    topic_key text,
    topic_scope text,
    revision integer DEFAULT 1 NOT NULL,
    fix jsonb,
    origin text NOT NULL,
    project text NOT NULL,
    project_key text NOT NULL,
    environment jsonb DEFAULT '{}'::jsonb NOT NULL,
    tool_name text,
    outcome text DEFAULT '未知'::text NOT NULL,
    sources integer DEFAULT 1 NOT NULL,
    used_success integer DEFAULT 0 NOT NULL,
    evidence_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    session_id text DEFAULT ''::text NOT NULL,
    created text NOT NULL,
    updated text NOT NULL,
    reproduction jsonb,
    verification jsonb,
    forgotten boolean DEFAULT false NOT NULL,
    key_lines jsonb DEFAULT '[]'::jsonb NOT NULL,
    normalized jsonb DEFAULT '[]'::jsonb NOT NULL,
    sig_algorithm text DEFAULT ''::text NOT NULL,
    tsv tsvector,
    seq bigint DEFAULT nextval('jiyi_store_v0_1.record_seq'::regclass) NOT NULL,
    author text
);


--
-- Name: records_rid_seq; Type: SEQUENCE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE SEQUENCE jiyi_store_v0_1.records_rid_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: records_rid_seq; Type: SEQUENCE OWNED BY; Schema: jiyi_store_v0_1; Owner: -
--

ALTER SEQUENCE jiyi_store_v0_1.records_rid_seq OWNED BY jiyi_store_v0_1.records.rid;


--
-- Name: relations; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.relations (
    team_id bigint NOT NULL,
    source_hex text NOT NULL,
    target_hex text NOT NULL,
    relation text NOT NULL,
    created text NOT NULL
);


--
-- Name: revisions; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.revisions (
    team_id bigint NOT NULL,
    hex text NOT NULL,
    revision integer NOT NULL,
    session_id text NOT NULL,
    created text NOT NULL,
    change text NOT NULL,
    snapshot jsonb NOT NULL
);


--
-- Name: session_edits; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.session_edits (
    team_id bigint NOT NULL,
    session_id text NOT NULL,
    path text NOT NULL,
    at text NOT NULL
);


--
-- Name: session_notes; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.session_notes (
    team_id bigint NOT NULL,
    session_id text NOT NULL,
    hex text NOT NULL,
    at text NOT NULL,
    last_at text
);


--
-- Name: session_reads; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.session_reads (
    team_id bigint NOT NULL,
    session_id text NOT NULL,
    hex text NOT NULL,
    at text NOT NULL,
    last_at text
);


--
-- Name: session_recalls; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.session_recalls (
    team_id bigint NOT NULL,
    session_id text NOT NULL,
    hex text NOT NULL,
    at text NOT NULL
);


--
-- Name: sessions; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.sessions (
    team_id bigint NOT NULL,
    id text NOT NULL,
    project_key text DEFAULT ''::text NOT NULL,
    project text DEFAULT ''::text NOT NULL,
    started text NOT NULL,
    last_seen text NOT NULL,
    read_used integer DEFAULT 0 NOT NULL,
    last_tool text,
    last_error text,
    last_failure_at text,
    last_signatures jsonb,
    last_command text,
    outcome text DEFAULT '未知'::text NOT NULL,
    last_checkout text
);


--
-- Name: signatures; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.signatures (
    team_id bigint NOT NULL,
    sig text NOT NULL,
    hex text NOT NULL
);


--
-- Name: symbols; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.symbols (
    team_id bigint NOT NULL,
    symbol text NOT NULL,
    hex text NOT NULL
);


--
-- Name: teams; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.teams (
    id bigint NOT NULL,
    name text NOT NULL,
    created text NOT NULL
);


--
-- Name: teams_id_seq; Type: SEQUENCE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE SEQUENCE jiyi_store_v0_1.teams_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: teams_id_seq; Type: SEQUENCE OWNED BY; Schema: jiyi_store_v0_1; Owner: -
--

ALTER SEQUENCE jiyi_store_v0_1.teams_id_seq OWNED BY jiyi_store_v0_1.teams.id;


--
-- Name: term_changes; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.term_changes (
    team_id bigint NOT NULL,
    term text NOT NULL,
    n integer NOT NULL
)
WITH (autovacuum_vacuum_threshold='1000', autovacuum_vacuum_scale_factor='0', vacuum_truncate='false');


--
-- Name: terms; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.terms (
    team_id bigint NOT NULL,
    term text NOT NULL,
    docs bigint NOT NULL
);


--
-- Name: tokens; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.tokens (
    hash text NOT NULL,
    team_id bigint NOT NULL,
    member text NOT NULL,
    created text NOT NULL,
    revoked text
);


--
-- Name: tombstones; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.tombstones (
    team_id bigint NOT NULL,
    hex text NOT NULL,
    purged boolean NOT NULL,
    at text NOT NULL,
    seq bigint NOT NULL
);


--
-- Name: verifications; Type: TABLE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TABLE jiyi_store_v0_1.verifications (
    id bigint NOT NULL,
    team_id bigint NOT NULL,
    hex text NOT NULL,
    at text NOT NULL,
    passed boolean NOT NULL,
    how text NOT NULL,
    environment text NOT NULL,
    detail text NOT NULL
);


--
-- Name: verifications_id_seq; Type: SEQUENCE; Schema: jiyi_store_v0_1; Owner: -
--

CREATE SEQUENCE jiyi_store_v0_1.verifications_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: verifications_id_seq; Type: SEQUENCE OWNED BY; Schema: jiyi_store_v0_1; Owner: -
--

ALTER SEQUENCE jiyi_store_v0_1.verifications_id_seq OWNED BY jiyi_store_v0_1.verifications.id;


--
-- Name: records rid; Type: DEFAULT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.records ALTER COLUMN rid SET DEFAULT nextval('jiyi_store_v0_1.records_rid_seq'::regclass);


--
-- Name: teams id; Type: DEFAULT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.teams ALTER COLUMN id SET DEFAULT nextval('jiyi_store_v0_1.teams_id_seq'::regclass);


--
-- Name: verifications id; Type: DEFAULT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.verifications ALTER COLUMN id SET DEFAULT nextval('jiyi_store_v0_1.verifications_id_seq'::regclass);


--
-- Data for Name: _migrations; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1._migrations VALUES ('m001_records', '2026-12-03T21:13:19.990596+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m002_sessions', '2026-12-03T21:13:20.054478+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m003_tombstones', '2026-12-03T21:13:20.073321+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m004_term_changes', '2026-12-03T21:13:20.095926+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m005_term_changes_vacuum', '2026-12-03T21:13:20.106970+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m006_full_text_without_pending_list', '2026-12-03T21:13:20.111026+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m007_lexical_versions', '2026-12-03T21:13:20.118442+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m008_failure_checkout', '2026-12-03T21:13:20.123329+00:00');
INSERT INTO jiyi_store_v0_1._migrations VALUES ('m009_record_authors', '2026-12-03T21:13:20.131804+00:00');


--
-- Data for Name: evidence; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.evidence VALUES (1, '4e4c298719ab48ee800ba219a6adeb53', 'alice', 1, 0);


--
-- Data for Name: lexical_versions; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.lexical_versions VALUES (1, 2, NULL, 0);


--
-- Data for Name: record_confirmations; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: records; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.records VALUES (1, '4e4c298719ab48ee800ba219a6adeb53', 1, false, 'Link zlib with -lz', 'bugfix', 'project', 'ld: undefined symbol deflate', 'zlib was not on the link line', 'Makefile LDLIBS', 'add -lz after the object files', NULL, NULL, 1, NULL, 'local_auto', 'demo', 'demo', '{"os": "linux"}', 'bash', '失败', 1, 0, '[]', 'writer', '2026-12-03T21:13:19.045443+00:00', '2026-12-03T21:13:19.045443+00:00', NULL, NULL, false, '["ld: undefined symbol deflate"]', '["undefined symbol: deflate"]', 'jiyi-sig-1', '''add'':13 ''after'':15 ''deflate'':7 ''files'':17 ''ld'':4 ''ldlibs'':12 ''line'':10 ''link'':1A,9 ''lz'':3A,14 ''makefile'':11 ''object'':16 ''symbol'':6 ''undefined'':5 ''zlib'':2A,8', 2, 'alice');


--
-- Data for Name: relations; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: revisions; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.revisions VALUES (1, '4e4c298719ab48ee800ba219a6adeb53', 1, 'writer', '2026-12-03T21:13:19.045443+00:00', 'created', '{"fix": null, "why": "zlib was not on the link line", "type": "bugfix", "what": "ld: undefined symbol deflate", "scope": "project", "title": "Link zlib with -lz", "where": "Makefile LDLIBS", "origin": "note", "learned": "add -lz after the object files", "outcome": "失败", "topic_key": null, "evidence_refs": []}');


--
-- Data for Name: session_edits; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: session_notes; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: session_reads; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: session_recalls; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: sessions; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: signatures; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.signatures VALUES (1, 'sha256:d5ca58e722009fb23e64885dba79ce99c730077adb189d35f33d4720dfe68222', '4e4c298719ab48ee800ba219a6adeb53');


--
-- Data for Name: symbols; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.symbols VALUES (1, 'deflate', '4e4c298719ab48ee800ba219a6adeb53');


--
-- Data for Name: teams; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.teams VALUES (1, 'old-team', '2026-12-03T21:13:20.147771+00:00');


--
-- Data for Name: term_changes; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: terms; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.terms VALUES (1, '', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'add', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'after', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'deflate', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'files', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'ld', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'ldlibs', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'line', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'link', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'lz', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'makefile', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'object', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'symbol', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'undefined', 1);
INSERT INTO jiyi_store_v0_1.terms VALUES (1, 'zlib', 1);


--
-- Data for Name: tokens; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--

INSERT INTO jiyi_store_v0_1.tokens VALUES ('6a527693d7ca7b6c601c19697ee4a47a453aa94c62f43256c5b05ac7e45fb8b6', 1, 'alice', '2026-12-03T21:13:20.162155+00:00', NULL);


--
-- Data for Name: tombstones; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Data for Name: verifications; Type: TABLE DATA; Schema: jiyi_store_v0_1; Owner: -
--



--
-- Name: record_seq; Type: SEQUENCE SET; Schema: jiyi_store_v0_1; Owner: -
--

SELECT pg_catalog.setval('jiyi_store_v0_1.record_seq', 2, true);


--
-- Name: records_rid_seq; Type: SEQUENCE SET; Schema: jiyi_store_v0_1; Owner: -
--

SELECT pg_catalog.setval('jiyi_store_v0_1.records_rid_seq', 1, true);


--
-- Name: teams_id_seq; Type: SEQUENCE SET; Schema: jiyi_store_v0_1; Owner: -
--

SELECT pg_catalog.setval('jiyi_store_v0_1.teams_id_seq', 1, true);


--
-- Name: verifications_id_seq; Type: SEQUENCE SET; Schema: jiyi_store_v0_1; Owner: -
--

SELECT pg_catalog.setval('jiyi_store_v0_1.verifications_id_seq', 1, false);


--
-- Name: _migrations _migrations_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1._migrations
    ADD CONSTRAINT _migrations_pkey PRIMARY KEY (name);


--
-- Name: evidence evidence_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.evidence
    ADD CONSTRAINT evidence_pkey PRIMARY KEY (team_id, hex, member);


--
-- Name: lexical_versions lexical_versions_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.lexical_versions
    ADD CONSTRAINT lexical_versions_pkey PRIMARY KEY (team_id);


--
-- Name: record_confirmations record_confirmations_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.record_confirmations
    ADD CONSTRAINT record_confirmations_pkey PRIMARY KEY (team_id, hex, session_id);


--
-- Name: records records_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.records
    ADD CONSTRAINT records_pkey PRIMARY KEY (team_id, hex);


--
-- Name: relations relations_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.relations
    ADD CONSTRAINT relations_pkey PRIMARY KEY (team_id, source_hex, target_hex, relation);


--
-- Name: revisions revisions_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.revisions
    ADD CONSTRAINT revisions_pkey PRIMARY KEY (team_id, hex, revision);


--
-- Name: session_edits session_edits_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.session_edits
    ADD CONSTRAINT session_edits_pkey PRIMARY KEY (team_id, session_id, path);


--
-- Name: session_notes session_notes_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.session_notes
    ADD CONSTRAINT session_notes_pkey PRIMARY KEY (team_id, session_id, hex);


--
-- Name: session_reads session_reads_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.session_reads
    ADD CONSTRAINT session_reads_pkey PRIMARY KEY (team_id, session_id, hex);


--
-- Name: session_recalls session_recalls_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.session_recalls
    ADD CONSTRAINT session_recalls_pkey PRIMARY KEY (team_id, session_id, hex);


--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (team_id, id);


--
-- Name: signatures signatures_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.signatures
    ADD CONSTRAINT signatures_pkey PRIMARY KEY (team_id, sig, hex);


--
-- Name: symbols symbols_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.symbols
    ADD CONSTRAINT symbols_pkey PRIMARY KEY (team_id, symbol, hex);


--
-- Name: teams teams_name_key; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.teams
    ADD CONSTRAINT teams_name_key UNIQUE (name);


--
-- Name: teams teams_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.teams
    ADD CONSTRAINT teams_pkey PRIMARY KEY (id);


--
-- Name: terms terms_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.terms
    ADD CONSTRAINT terms_pkey PRIMARY KEY (team_id, term);


--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (hash);


--
-- Name: tombstones tombstones_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.tombstones
    ADD CONSTRAINT tombstones_pkey PRIMARY KEY (team_id, hex);


--
-- Name: verifications verifications_pkey; Type: CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.verifications
    ADD CONSTRAINT verifications_pkey PRIMARY KEY (id);


--
-- Name: records_hex; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_hex ON jiyi_store_v0_1.records USING btree (hex);


--
-- Name: records_rid; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_rid ON jiyi_store_v0_1.records USING btree (team_id, rid);


--
-- Name: records_seq; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_seq ON jiyi_store_v0_1.records USING btree (team_id, seq);


--
-- Name: records_topic; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_topic ON jiyi_store_v0_1.records USING btree (team_id, topic_key, scope, topic_scope) WHERE ((topic_key IS NOT NULL) AND (NOT forgotten));


--
-- Name: records_tsv; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_tsv ON jiyi_store_v0_1.records USING gin (tsv) WITH (fastupdate=off);


--
-- Name: records_updated; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX records_updated ON jiyi_store_v0_1.records USING btree (team_id, updated);


--
-- Name: relations_target; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX relations_target ON jiyi_store_v0_1.relations USING btree (team_id, target_hex);


--
-- Name: signatures_hex; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX signatures_hex ON jiyi_store_v0_1.signatures USING btree (team_id, hex);


--
-- Name: symbols_hex; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX symbols_hex ON jiyi_store_v0_1.symbols USING btree (team_id, hex);


--
-- Name: term_changes_term; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX term_changes_term ON jiyi_store_v0_1.term_changes USING btree (team_id, term);


--
-- Name: tokens_member; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX tokens_member ON jiyi_store_v0_1.tokens USING btree (team_id, member);


--
-- Name: tombstones_seq; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX tombstones_seq ON jiyi_store_v0_1.tombstones USING btree (team_id, seq);


--
-- Name: verifications_hex; Type: INDEX; Schema: jiyi_store_v0_1; Owner: -
--

CREATE INDEX verifications_hex ON jiyi_store_v0_1.verifications USING btree (team_id, hex);


--
-- Name: records records_terms; Type: TRIGGER; Schema: jiyi_store_v0_1; Owner: -
--

CREATE TRIGGER records_terms AFTER INSERT OR DELETE OR UPDATE OF tsv ON jiyi_store_v0_1.records FOR EACH ROW EXECUTE FUNCTION jiyi_store_v0_1.records_terms();


--
-- Name: records records_team_id_fkey; Type: FK CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.records
    ADD CONSTRAINT records_team_id_fkey FOREIGN KEY (team_id) REFERENCES jiyi_store_v0_1.teams(id);


--
-- Name: tokens tokens_team_id_fkey; Type: FK CONSTRAINT; Schema: jiyi_store_v0_1; Owner: -
--

ALTER TABLE ONLY jiyi_store_v0_1.tokens
    ADD CONSTRAINT tokens_team_id_fkey FOREIGN KEY (team_id) REFERENCES jiyi_store_v0_1.teams(id);


--
-- PostgreSQL database dump complete
--

\unrestrict u36IU9O4cJ4IUJo48aQupquMu8EhE9aYv9wv1UQqgGnNRAHnixaG4uVPisBO6qe

