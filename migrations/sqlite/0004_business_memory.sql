-- 0004: the cache hierarchy of one spec: a session scratchpad (capped, LRU), user preferences and
-- playbooks (per user), and business-context documents split into chunks (per tenant).
-- Vectors are plain float32 blobs with the model that made them, searched by brute force per
-- user or tenant (docs/business_context.md has the measurements); rows embedded by another
-- model (or by none) are simply not vector candidates until they are written again.

CREATE TABLE scratchpad_snippets (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    user_id         TEXT,                   -- who the snippet is about (promotion target)
    tenant          TEXT,                   -- whose business it is about (promotion target)
    snippet         TEXT NOT NULL,
    norm_hash       TEXT NOT NULL,          -- sha256 of the normalised text (case, spacing)
    embedding       BLOB,
    embed_model     TEXT,
    salient         INTEGER NOT NULL DEFAULT 0,
    promote_to      TEXT,                   -- where an automatic promotion goes
    created_at      TEXT NOT NULL,
    last_used_at    TEXT NOT NULL,
    use_seq         INTEGER NOT NULL,       -- store-wide counter: a strict LRU order even
                                            -- when the clock does not move between uses
    use_count       INTEGER NOT NULL DEFAULT 0,
    promoted_to     TEXT,                   -- 'preferences' or 'business_context'
    promoted_ref    TEXT,                   -- the preference key or document source
    promoted_reason TEXT,                   -- 'explicit', 'recurrence' or 'salient'
    promoted_at     TEXT
);

CREATE UNIQUE INDEX idx_scratchpad_session_text ON scratchpad_snippets (session_id, norm_hash);
CREATE INDEX idx_scratchpad_session_lru ON scratchpad_snippets (session_id, use_seq);
CREATE INDEX idx_scratchpad_user ON scratchpad_snippets (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX idx_scratchpad_tenant ON scratchpad_snippets (tenant) WHERE tenant IS NOT NULL;

CREATE TABLE user_preferences (
    id           INTEGER PRIMARY KEY,
    user_id      TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    flow_id      TEXT,                      -- the flow the rule belongs to, if any
    origin       TEXT NOT NULL,             -- 'client' or 'scratchpad'
    embedding    BLOB,                      -- of "key: value"
    embed_model  TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (user_id, key)
);

CREATE INDEX idx_preferences_flow ON user_preferences (user_id, flow_id) WHERE flow_id IS NOT NULL;

CREATE TABLE playbooks (
    id           INTEGER PRIMARY KEY,
    user_id      TEXT NOT NULL,
    flow         TEXT NOT NULL,
    user_query   TEXT NOT NULL,
    slots        TEXT NOT NULL,             -- JSON object
    tool_calls   TEXT NOT NULL,             -- JSON array
    outcome      TEXT NOT NULL,
    record_hash  TEXT NOT NULL,             -- recording the same trajectory twice keeps one row
    embedding    BLOB,                      -- of user_query
    embed_model  TEXT,
    created_at   TEXT NOT NULL,
    UNIQUE (user_id, record_hash)
);

CREATE INDEX idx_playbooks_user_flow ON playbooks (user_id, flow);

CREATE TABLE knowledge_documents (
    id            INTEGER PRIMARY KEY,
    tenant        TEXT NOT NULL,
    source        TEXT NOT NULL,
    origin        TEXT NOT NULL,            -- 'ingest', 'agent_md' or 'promoted'
    content_hash  TEXT NOT NULL,            -- sha256 of the text: unchanged re-ingest is a no-op
    body          TEXT NOT NULL,            -- the whole text (export to agent.md reads it)
    chunk_count   INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (tenant, source)
);

CREATE TABLE knowledge_chunks (
    id           INTEGER PRIMARY KEY,
    document_id  INTEGER NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    tenant       TEXT NOT NULL,
    position     INTEGER NOT NULL,          -- 0-based order in the document
    start_char   INTEGER NOT NULL,          -- [start_char, end_char) of the document text
    end_char     INTEGER NOT NULL,
    text         TEXT NOT NULL,
    embedding    BLOB,
    embed_model  TEXT
);

CREATE INDEX idx_chunks_document ON knowledge_chunks (document_id, position);
CREATE INDEX idx_chunks_tenant ON knowledge_chunks (tenant);

CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(
    text,
    content = 'knowledge_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN
    INSERT INTO knowledge_chunks_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN
    INSERT INTO knowledge_chunks_fts (knowledge_chunks_fts, rowid, text)
    VALUES ('delete', old.id, old.text);
END;

-- Bumped by every change to a tenant's chunks, so a process can keep the tenant's vector
-- matrix in memory and know (one indexed read) when another process has changed it.
CREATE TABLE knowledge_revisions (
    tenant    TEXT PRIMARY KEY,
    revision  INTEGER NOT NULL
) WITHOUT ROWID;
