-- Placeholder so that numbers run 1..n on the perf2 branch (issue 21), which owns 0010.
-- 0008 is reserved for another branch of this round; delete this file when that branch's
-- 0008 lands (two files with one number fail load_migrations loudly).
SELECT 1;
