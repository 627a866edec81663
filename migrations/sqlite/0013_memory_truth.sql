-- 0013: one truth per fact (issue 32). Near-identical writes find their memory, corrections
-- supersede, edits keep history, memories can be pinned and tagged.
--
-- norm_hash: sha256 of the unkeyed text after domain.duplicates.normalise (NFKC, case,
-- whitespace, trailing punctuation); unique per identity like content_hash, so "Use pnpm." and
-- "use pnpm" are one memory for every writer, imports included. Rows written before this
-- migration keep NULL (SQL cannot normalise Unicode): they are still found by content_hash.
ALTER TABLE context_snapshots ADD COLUMN norm_hash TEXT;
-- Pinned rows never expire or get pruned.
ALTER TABLE context_snapshots ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
-- The newer memory that replaces this one; superseded rows are history, hidden unless asked.
-- Not a foreign key: an import writes rows before the newer ones they point at. A trigger
-- below clears it when the newer row is deleted, so the older fact is live again.
ALTER TABLE context_snapshots ADD COLUMN superseded_by INTEGER;
-- Tags as a JSON array of strings; memory_tags indexes them.
ALTER TABLE context_snapshots ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';

CREATE UNIQUE INDEX ux_snapshots_norm
    ON context_snapshots (
        project, layer,
        CASE WHEN layer = 'working' THEN coalesce(session_id, '') ELSE '' END,
        norm_hash
    ) WHERE key IS NULL AND norm_hash IS NOT NULL;
CREATE INDEX idx_snapshots_superseded_by ON context_snapshots (superseded_by)
    WHERE superseded_by IS NOT NULL;
CREATE INDEX idx_snapshots_pinned ON context_snapshots (project, id) WHERE pinned = 1;

CREATE TRIGGER context_snapshots_unsupersede AFTER DELETE ON context_snapshots BEGIN
    UPDATE context_snapshots SET superseded_by = NULL WHERE superseded_by = old.id;
END;

CREATE TABLE memory_tags (
    project   TEXT    NOT NULL,
    tag       TEXT    NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES context_snapshots (id) ON DELETE CASCADE,
    PRIMARY KEY (project, tag, memory_id)
) WITHOUT ROWID;
CREATE INDEX idx_memory_tags_memory ON memory_tags (memory_id);

CREATE TRIGGER memory_tags_ai AFTER INSERT ON context_snapshots WHEN new.tags <> '[]' BEGIN
    INSERT OR IGNORE INTO memory_tags (project, tag, memory_id)
        SELECT new.project, value, new.id FROM json_each(new.tags);
END;
CREATE TRIGGER memory_tags_au AFTER UPDATE OF tags, project ON context_snapshots BEGIN
    DELETE FROM memory_tags WHERE memory_id = old.id;
    INSERT OR IGNORE INTO memory_tags (project, tag, memory_id)
        SELECT new.project, value, new.id FROM json_each(new.tags);
END;

-- Earlier versions of a memory (an update, or `learn` on a key that held another value).
CREATE TABLE memory_versions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id    INTEGER NOT NULL REFERENCES context_snapshots (id) ON DELETE CASCADE,
    project      TEXT    NOT NULL,
    key          TEXT,
    content      TEXT    NOT NULL,
    metadata     TEXT    NOT NULL DEFAULT '{}',
    tags         TEXT    NOT NULL DEFAULT '[]',
    content_hash TEXT    NOT NULL,
    valid_from   TEXT    NOT NULL,
    valid_until  TEXT    NOT NULL,
    change       TEXT    NOT NULL
);
CREATE INDEX idx_memory_versions_memory ON memory_versions (memory_id, id);
