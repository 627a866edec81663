-- 0016: how many times a project's keyword table changed other than by new rows (issue 37).
-- A server keeps the postings of a large project's keyword table in memory
-- (memory_core.storage.sqlite.keyword_postings). New rows it picks up by id; a removed or
-- rewritten row it cannot find by id, so every such change counts here, in the transaction
-- that applies it to the table (keyword_tables.apply_keyword_queue), and a count that moved
-- since the postings were read tells the server to read them again.
ALTER TABLE context_snapshots_fts_projects ADD COLUMN edits INTEGER NOT NULL DEFAULT 0;
