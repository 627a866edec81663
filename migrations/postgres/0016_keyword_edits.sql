-- 0016: nothing to change on PostgreSQL. SQLite's 0016 counts the changes to a project's FTS5
-- table other than new rows, for the keyword postings a server keeps in memory; PostgreSQL
-- ranks keywords with its GIN index and keeps no postings. The number exists so that both
-- backends share one schema version: an export or a copy-store from either is accepted by the
-- other.
SELECT 1;
