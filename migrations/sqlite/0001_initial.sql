-- 0001: context_snapshots with tier/LRU columns, identity rules, FTS5 kept in sync by triggers.
-- Timestamps are ISO-8601 UTC, fixed width (YYYY-MM-DDTHH:MM:SS.ffffffZ), so text order is time order.

CREATE TABLE context_snapshots (
    -- AUTOINCREMENT: an id is never reused, so a forgotten id can never point at a newer memory.
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    project       TEXT    NOT NULL,
    layer         TEXT    NOT NULL,
    key           TEXT,
    content       TEXT    NOT NULL,
    metadata      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    session_id    TEXT,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    last_accessed TEXT,
    access_count  INTEGER NOT NULL DEFAULT 0,
    memory_tier   TEXT    NOT NULL DEFAULT 'ACTIVE'
                  CHECK (memory_tier IN ('ACTIVE', 'RECENT', 'ARCHIVED', 'EXPIRED')),
    content_hash  TEXT    NOT NULL,
    token_count   INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX idx_memory_tier ON context_snapshots (memory_tier);
CREATE INDEX idx_last_accessed ON context_snapshots (last_accessed);
CREATE INDEX idx_snapshots_project_layer_accessed
    ON context_snapshots (project, layer, last_accessed);
-- load_context and pruning order by the reference time (last access, else creation).
CREATE INDEX idx_snapshots_project_reference
    ON context_snapshots (project, coalesce(last_accessed, created_at));
CREATE INDEX idx_snapshots_session
    ON context_snapshots (project, layer, session_id, created_at);

-- Identity rules, enforced here so that concurrent writers (several stdio processes) cannot
-- race past them: a key is unique per (project, layer); unkeyed content is unique per
-- (project, layer) by hash, which is how an identical append returns the existing id. The
-- working layer is per session (capped per session), so there the session is part of it.
CREATE UNIQUE INDEX ux_snapshots_key
    ON context_snapshots (project, layer, key) WHERE key IS NOT NULL;
CREATE UNIQUE INDEX ux_snapshots_content
    ON context_snapshots (
        project, layer,
        CASE WHEN layer = 'working' THEN coalesce(session_id, '') ELSE '' END,
        content_hash
    ) WHERE key IS NULL;

CREATE VIRTUAL TABLE context_snapshots_fts USING fts5(
    content,
    key,
    content = 'context_snapshots',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER context_snapshots_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (rowid, content, key)
    VALUES (new.id, new.content, coalesce(new.key, ''));
END;

CREATE TRIGGER context_snapshots_ad AFTER DELETE ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key)
    VALUES ('delete', old.id, old.content, coalesce(old.key, ''));
END;

-- Only text changes touch the index: access tracking updates rows constantly and must stay cheap.
CREATE TRIGGER context_snapshots_au AFTER UPDATE OF content, key ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key)
    VALUES ('delete', old.id, old.content, coalesce(old.key, ''));
    INSERT INTO context_snapshots_fts (rowid, content, key)
    VALUES (new.id, new.content, coalesce(new.key, ''));
END;

-- Facts about the store itself (schema owner, embedding model id and dimensions, ...).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
