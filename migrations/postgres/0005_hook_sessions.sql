-- 0005 (PostgreSQL twin of migrations/sqlite/0005_hook_sessions.sql): what the Claude Code
-- hooks remember per session: the session-start context they injected (re-injected as is on
-- resume and after a compaction), the memories the prompt hook already injected (never twice
-- in a session), how far the transcript has been recorded into conversation memory, and the
-- episodic memory that holds the session's summary.

CREATE TABLE hook_sessions (
    project          text        NOT NULL,
    session_id       text        NOT NULL,
    start_context    text,                       -- NULL until SessionStart injected something
    start_tokens     integer     NOT NULL DEFAULT 0,
    injected         text        NOT NULL DEFAULT '[]', -- JSON array of memory ids, in order
    transcript_lines integer     NOT NULL DEFAULT 0,    -- transcript lines already read
    transcript_uuid  text,                              -- uuid of the last line read
    summary_id       bigint,                            -- episodic memory of the summary
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (project, session_id)
);
