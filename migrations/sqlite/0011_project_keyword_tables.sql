-- 0011: one keyword index per project (issue 19, "no channel between projects").
-- FTS5 computes BM25 from the statistics of the table it reads: how many rows it holds, how
-- long they are on average, how many hold each word. One table for every project let a
-- project's keyword order (and which rows made the candidate cap, and the large-store switch)
-- move when another project gained rows. Each project now has its own contentless FTS5 table,
-- context_snapshots_fts_<id>, where <id> is the project's row in
-- context_snapshots_fts_projects: table names never hold a project name.
--
-- SQL cannot name a table from a value, so the triggers no longer write the index: they queue
-- each change (the indexed text, as 0010 defined it) in context_snapshots_fts_queue, in the
-- writing statement's transaction, whoever writes (this code, an import, the sqlite3 shell).
-- Code applies the queue to each project's table (memory_core.storage.sqlite.keyword_tables):
-- every write path of this code in its own transaction, search before it reads if anything is
-- still queued, and the migration runner at open. A project's table is made, and filled from
-- its rows, the first time the queue names it (or, here, at the first open after 0011).
-- Why not one trigger per project (`WHEN new.project = ...`): SQLite runs every trigger of an
-- event for every row, so each write paid per project in the store (measured: +12 ms a row
-- at 1,000 projects), and each connection parsed four triggers per project when it opened.

CREATE TABLE context_snapshots_fts_projects (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: neither is a table name
    project  TEXT NOT NULL UNIQUE,
    ready    INTEGER NOT NULL DEFAULT 0           -- 1 once its table exists and holds its rows
);

-- Every stored project, to be built (from its rows) at the first open after this migration.
INSERT INTO context_snapshots_fts_projects (project)
SELECT DISTINCT project FROM context_snapshots ORDER BY project;

CREATE TABLE context_snapshots_fts_queue (
    seq      INTEGER PRIMARY KEY,                 -- applied in this order
    project  TEXT NOT NULL,
    row_id   INTEGER NOT NULL,
    remove   INTEGER NOT NULL,                    -- 1: the row leaves the index, 0: it enters
    content  TEXT,
    key      TEXT,
    metadata TEXT
);

DROP TRIGGER context_snapshots_ai;
DROP TRIGGER context_snapshots_bd;
DROP TRIGGER context_snapshots_bu;
DROP TRIGGER context_snapshots_au;
DROP TABLE context_snapshots_fts;

-- The view gains the project. The indexed text itself is 0010's, word for word (a contentless
-- index must be deleted from with the text it was given).
DROP VIEW context_snapshots_search;
CREATE VIEW context_snapshots_search AS
SELECT id, project, content, coalesce(key, '') AS key,
       (SELECT coalesce(group_concat(value, ' '), '') FROM json_tree(context_snapshots.metadata)
        WHERE type IN ('text', 'integer', 'real'))
       || coalesce(' ' || replace(replace(replace(replace(replace(replace(replace(replace(
              replace(replace(replace(replace(dates,
              '-01-', ' january '), '-02-', ' february '), '-03-', ' march '),
              '-04-', ' april '), '-05-', ' may '), '-06-', ' june '), '-07-', ' july '),
              '-08-', ' august '), '-09-', ' september '), '-10-', ' october '),
              '-11-', ' november '), '-12-', ' december '), '') AS metadata
FROM context_snapshots;

-- A row leaves the index BEFORE it changes, while the view still shows its indexed text.
CREATE TRIGGER context_snapshots_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts_queue (project, row_id, remove, content, key, metadata)
    SELECT project, id, 0, content, key, metadata FROM context_snapshots_search
    WHERE id = new.id;
END;

CREATE TRIGGER context_snapshots_bd BEFORE DELETE ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts_queue (project, row_id, remove, content, key, metadata)
    SELECT project, id, 1, content, key, metadata FROM context_snapshots_search
    WHERE id = old.id;
END;

-- Only text changes (and a move to another project) touch the index: access tracking updates
-- rows constantly and must stay cheap.
CREATE TRIGGER context_snapshots_bu BEFORE UPDATE OF content, key, metadata, dates, project
    ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts_queue (project, row_id, remove, content, key, metadata)
    SELECT project, id, 1, content, key, metadata FROM context_snapshots_search
    WHERE id = old.id;
END;

CREATE TRIGGER context_snapshots_au AFTER UPDATE OF content, key, metadata, dates, project
    ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts_queue (project, row_id, remove, content, key, metadata)
    SELECT project, id, 0, content, key, metadata FROM context_snapshots_search
    WHERE id = new.id;
END;
