-- 0008: who wrote a memory. `author` is the name of whoever said or wrote it (the user's name,
-- "assistant", a tool's name); NULL when the client did not say. Search filters on it and lifts
-- memories whose author the query names (services.memories, domain.ranking).
-- Adding a nullable column without a default rewrites nothing, so this is instant on any size.
-- The keyword index is not touched: the author is a filter and a ranking signal, not text.

ALTER TABLE context_snapshots ADD COLUMN author TEXT;

-- The author filter within a project (a project's rows by one speaker).
CREATE INDEX idx_snapshots_project_author ON context_snapshots (project, author)
    WHERE author IS NOT NULL;
