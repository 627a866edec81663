-- 0008 (PostgreSQL twin of migrations/sqlite/0008_memory_author.sql): who wrote a memory.
-- A nullable column without a default is a catalogue change only (no table rewrite).

ALTER TABLE context_snapshots ADD COLUMN author text;

CREATE INDEX idx_snapshots_project_author ON context_snapshots (project, author)
    WHERE author IS NOT NULL;
