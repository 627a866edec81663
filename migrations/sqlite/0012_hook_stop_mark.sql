-- 0012: where the Stop hook last asked the model to store what it learned, or saw it store
-- something: the transcript's byte offset at that moment. The hook counts the prompts and tool
-- calls after it, so it asks at most once per flow of substance (issue 30). And the procedural
-- rules the PreToolUse hook showed (JSON array of "id:version" marks): once per rule per session.

ALTER TABLE hook_sessions ADD COLUMN stop_offset INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hook_sessions ADD COLUMN tool_rules TEXT NOT NULL DEFAULT '[]';
