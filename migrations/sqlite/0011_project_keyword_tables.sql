-- 0011: one keyword index per project (issue 19, "no channel between projects").
-- FTS5 computes BM25 from the statistics of the table it reads: how many rows it holds, how
-- long they are on average, how many hold each word. One table for every project let a
-- project's keyword order (and which rows made the candidate cap) move when another project
-- gained rows. Each project now has its own contentless FTS5 table, context_snapshots_fts_<id>,
-- where <id> is the project's row in context_snapshots_fts_projects: table names never hold a
-- project name.
-- The tables and their triggers are made by code (memory_core.storage.sqlite.keyword_tables),
-- since SQL cannot name a table from a value: this migration registers every stored project
-- with `ready = 0`, and the migration runner builds and fills each registered table in the
-- same open, before the store is used (a crash in between leaves `ready = 0`, built at the
-- next open). Search builds a table that is still not ready before it reads it.

CREATE TABLE context_snapshots_fts_projects (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: a table name is never reused
    project  TEXT NOT NULL UNIQUE,
    ready    INTEGER NOT NULL DEFAULT 0           -- 1 once its table, triggers and rows are in
);

INSERT INTO context_snapshots_fts_projects (project)
SELECT DISTINCT project FROM context_snapshots ORDER BY project;

DROP TRIGGER context_snapshots_ai;
DROP TRIGGER context_snapshots_bd;
DROP TRIGGER context_snapshots_bu;
DROP TRIGGER context_snapshots_au;
DROP TABLE context_snapshots_fts;

-- The view gains the project, so a project's table is filled by one indexed read. The indexed
-- text itself is 0010's, word for word (a contentless index must be deleted from with the text
-- it was given).
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

-- A row of a project that has no keyword table yet (any writer: code that did not build the
-- table first, the sqlite3 shell) registers its project, so the table is built and filled
-- before the project is searched. The write paths of this code build the table first
-- (keyword_tables.ensure_keyword_tables); this only makes a missed one heal instead of hide.
CREATE TRIGGER context_snapshots_fts_register AFTER INSERT ON context_snapshots
WHEN NOT EXISTS (SELECT 1 FROM context_snapshots_fts_projects WHERE project = new.project)
BEGIN
    INSERT INTO context_snapshots_fts_projects (project) VALUES (new.project);
END;

CREATE TRIGGER context_snapshots_fts_register_move AFTER UPDATE OF project ON context_snapshots
WHEN NOT EXISTS (SELECT 1 FROM context_snapshots_fts_projects WHERE project = new.project)
BEGIN
    INSERT INTO context_snapshots_fts_projects (project) VALUES (new.project);
END;
