-- 0012 (PostgreSQL twin of migrations/sqlite/0012_hook_stop_mark.sql): where the Stop hook
-- last asked the model to store what it learned, or saw it store something: the transcript's
-- byte offset at that moment. And the procedural rules the PreToolUse hook showed.

ALTER TABLE hook_sessions ADD COLUMN stop_offset BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hook_sessions ADD COLUMN tool_rules TEXT NOT NULL DEFAULT '[]';
