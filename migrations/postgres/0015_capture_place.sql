-- 0016 (PostgreSQL twin of migrations/sqlite/0016_capture_place.sql): where a transcript
-- capture stands, beside its line cursor. transcript_offset: the byte offset just after the
-- cursor's line (0: unknown). transcript_entry: the last conversation entry the capture wrote
-- as of the cursor (NULL: unknown), so a capture cut short never writes an entry twice.
ALTER TABLE hook_sessions ADD COLUMN transcript_offset BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hook_sessions ADD COLUMN transcript_entry BIGINT;
-- The branch title last seen in the transcript (a "summary" line), for the digest.
ALTER TABLE hook_sessions ADD COLUMN transcript_title TEXT;
