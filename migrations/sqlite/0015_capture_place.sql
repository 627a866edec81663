-- 0016: where a transcript capture stands, beside its line cursor (issue 34, points 2 and 4).
-- transcript_offset: the byte offset in the transcript file just after the cursor's line, so
-- the next capture reads only what follows (0: unknown, read from the start and find the
-- cursor by its uuid or line count). transcript_entry: the number of the last conversation
-- entry the capture wrote as of the cursor (NULL: unknown, for sessions captured before this
-- migration); a capture cut short between an entry and the cursor finds the entries it already
-- wrote after that number and does not write them again.
ALTER TABLE hook_sessions ADD COLUMN transcript_offset INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hook_sessions ADD COLUMN transcript_entry INTEGER;
-- The branch title last seen in the transcript (a "summary" line), for the digest.
ALTER TABLE hook_sessions ADD COLUMN transcript_title TEXT;
