-- 0003 (PostgreSQL twin of migrations/sqlite/0003_conversations.sql): conversation memory.
-- Sessions hold entries; older entries fold into summaries; Q&A exchanges fold into a running
-- session summary; a tool-result cache counts down per exchange. Entry, summary and exchange
-- numbers are per session (1, 2, 3...), not global row ids, so an exported session imports
-- into any database (either backend) with every id and summary link unchanged.
--
-- JSON payloads are `text` holding exactly what the SQLite backend stores (canonical JSON for
-- config and cache parameters): jsonb would reorder object keys, and a session exported from
-- one backend must read back byte for byte the same from the other. Nothing queries inside them.
-- Writers serialise per session on the session row (SELECT ... FOR UPDATE), as SQLite's
-- BEGIN IMMEDIATE does for the whole file, so the per-session counters never repeat a number.

CREATE TABLE conversation_sessions (
    project          text        NOT NULL,
    session_id       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    config           text        NOT NULL DEFAULT '{}',  -- JSON: this session's overrides
    qa_summary       text        NOT NULL DEFAULT '',    -- folded Q&A exchanges, oldest first
    qa_summary_from  timestamptz,                        -- time range the folded ones cover
    qa_summary_until timestamptz,
    next_entry       integer     NOT NULL DEFAULT 1,
    next_summary     integer     NOT NULL DEFAULT 1,
    next_exchange    integer     NOT NULL DEFAULT 1,
    pending_summary  text,                  -- JSON: a summary the client was asked to write
    PRIMARY KEY (project, session_id)
);

-- list_sessions: the most recently updated sessions of a project.
CREATE INDEX idx_conversation_sessions_updated
    ON conversation_sessions (project, updated_at DESC);

CREATE TABLE conversation_summaries (
    project         text             NOT NULL,
    session_id      text             NOT NULL,
    summary_no      integer          NOT NULL,
    text            text             NOT NULL,
    entry_ids       text             NOT NULL,  -- JSON array of the entry numbers it replaced
    token_count     integer          NOT NULL,
    original_tokens integer          NOT NULL,
    ratio           double precision NOT NULL,  -- token_count / original_tokens
    covers_from     timestamptz      NOT NULL,
    covers_until    timestamptz      NOT NULL,
    source          text             NOT NULL
                    CHECK (source IN ('summarizer', 'client', 'fallback')),
    created_at      timestamptz      NOT NULL,
    PRIMARY KEY (project, session_id, summary_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
);

CREATE TABLE conversation_entries (
    project     text        NOT NULL,
    session_id  text        NOT NULL,
    entry_no    integer     NOT NULL,
    type        text        NOT NULL
                CHECK (type IN ('message', 'tool_call', 'tool_result', 'context')),
    role        text        NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content     text        NOT NULL,
    tool_name   text,
    arguments   text,                       -- JSON, tool calls only
    source      text,                       -- where added context came from (a path)
    is_error    boolean     NOT NULL DEFAULT false,  -- a tool result that reported failure
    created_at  timestamptz NOT NULL,
    token_count integer     NOT NULL,
    compressed  boolean     NOT NULL DEFAULT false,
    summary_no  integer,                    -- set once compressed
    PRIMARY KEY (project, session_id, entry_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
);

-- Compression and the context view read a session's active entries in order.
CREATE INDEX idx_conversation_entries_active
    ON conversation_entries (project, session_id, compressed, entry_no);

CREATE TABLE conversation_exchanges (
    project          text        NOT NULL,
    session_id       text        NOT NULL,
    exchange_no      integer     NOT NULL,
    question         text        NOT NULL,
    answer           text        NOT NULL,
    answer_shortened boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL,
    folded           boolean     NOT NULL DEFAULT false,  -- true once folded into qa_summary
    PRIMARY KEY (project, session_id, exchange_no),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
);

CREATE TABLE tool_result_cache (
    project    text        NOT NULL,
    session_id text        NOT NULL,
    cache_key  text        NOT NULL,        -- sha256 of tool name + canonical JSON params
    tool_name  text        NOT NULL,
    parameters text        NOT NULL,        -- canonical JSON (sorted keys)
    result     text        NOT NULL,        -- JSON
    duration   integer     NOT NULL CHECK (duration >= 1),  -- in exchanges
    remaining  integer     NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (project, session_id, cache_key),
    FOREIGN KEY (project, session_id)
        REFERENCES conversation_sessions (project, session_id) ON DELETE CASCADE
);
