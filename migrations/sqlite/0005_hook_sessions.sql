-- 0005: what the Claude Code hooks (`memstrata hook <event>`) remember per session: the
-- session-start context they injected (re-injected as is on resume and after a compaction),
-- the memories the prompt hook already injected (never twice in a session), how far the
-- transcript has been recorded into conversation memory, and the episodic memory that holds
-- the session's summary (replaced, never duplicated, when the session is recorded again).

CREATE TABLE hook_sessions (
    project          TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    start_context    TEXT,                       -- NULL until SessionStart injected something
    start_tokens     INTEGER NOT NULL DEFAULT 0,
    injected         TEXT NOT NULL DEFAULT '[]', -- JSON array of memory ids, in injection order
    transcript_lines INTEGER NOT NULL DEFAULT 0, -- transcript lines already read
    transcript_uuid  TEXT,                       -- uuid of the last line read, if it had one
    summary_id       INTEGER,                    -- the episodic memory of the session's summary
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    PRIMARY KEY (project, session_id)
);
