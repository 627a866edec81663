-- 0003: conversation memory. Sessions hold entries; older entries fold into summaries; Q&A
-- exchanges fold into a running session summary; a tool-result cache counts down per exchange.
-- Entry, summary and exchange numbers are per session (1, 2, 3...), not global row ids, so an
-- exported session imports into any database with every id and summary link unchanged.

CREATE TABLE conversation_sessions (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    config         TEXT NOT NULL DEFAULT '{}',  -- JSON: this session's policy overrides
    qa_summary     TEXT NOT NULL DEFAULT '',    -- folded Q&A exchanges, oldest first
    qa_summary_from  TEXT,                      -- time range the folded exchanges cover
    qa_summary_until TEXT,
    next_entry     INTEGER NOT NULL DEFAULT 1,
    next_summary   INTEGER NOT NULL DEFAULT 1,
    next_exchange  INTEGER NOT NULL DEFAULT 1,
    pending_summary TEXT,                       -- JSON: a summary the client was asked to write
    PRIMARY KEY (project, session_id)
) WITHOUT ROWID;

CREATE TABLE conversation_summaries (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    summary_no     INTEGER NOT NULL,
    text           TEXT NOT NULL,
    entry_ids      TEXT NOT NULL,               -- JSON array of the entry numbers it replaced
    token_count    INTEGER NOT NULL,
    original_tokens INTEGER NOT NULL,
    ratio          REAL NOT NULL,               -- token_count / original_tokens
    covers_from    TEXT NOT NULL,
    covers_until   TEXT NOT NULL,
    source         TEXT NOT NULL CHECK (source IN ('summarizer', 'client', 'fallback')),
    created_at     TEXT NOT NULL,
    PRIMARY KEY (project, session_id, summary_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE conversation_entries (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    entry_no       INTEGER NOT NULL,
    type           TEXT NOT NULL
                   CHECK (type IN ('message', 'tool_call', 'tool_result', 'context')),
    role           TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content        TEXT NOT NULL,
    tool_name      TEXT,
    arguments      TEXT,                        -- JSON, tool calls only
    source         TEXT,                        -- where added context came from (a path)
    is_error       INTEGER NOT NULL DEFAULT 0,  -- a tool result that reported failure
    created_at     TEXT NOT NULL,
    token_count    INTEGER NOT NULL,
    compressed     INTEGER NOT NULL DEFAULT 0,
    summary_no     INTEGER,                     -- set once compressed
    PRIMARY KEY (project, session_id, entry_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
) WITHOUT ROWID;

-- Compression and the context view read a session's active entries in order.
CREATE INDEX idx_conversation_entries_active
    ON conversation_entries (project, session_id, compressed, entry_no);

CREATE TABLE conversation_exchanges (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    exchange_no    INTEGER NOT NULL,
    question       TEXT NOT NULL,
    answer         TEXT NOT NULL,
    answer_shortened INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    folded         INTEGER NOT NULL DEFAULT 0,  -- 1 once folded into qa_summary
    PRIMARY KEY (project, session_id, exchange_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE tool_result_cache (
    project        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    cache_key      TEXT NOT NULL,               -- sha256 of tool name + canonical JSON params
    tool_name      TEXT NOT NULL,
    parameters     TEXT NOT NULL,               -- canonical JSON (sorted keys)
    result         TEXT NOT NULL,               -- JSON
    duration       INTEGER NOT NULL CHECK (duration >= 1),  -- in exchanges
    remaining      INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (project, session_id, cache_key),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
) WITHOUT ROWID;
