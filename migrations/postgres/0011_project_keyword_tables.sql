-- 0011: nothing to change on PostgreSQL. SQLite's 0011 gives each project its own FTS5 table
-- so that BM25 uses that project's statistics alone; PostgreSQL's ts_rank reads only the row
-- it ranks (no collection statistics), so a project's keyword order never depended on another
-- project. The number exists so that both backends share one schema version: an export or a
-- copy-store from either is accepted by the other.
SELECT 1;
