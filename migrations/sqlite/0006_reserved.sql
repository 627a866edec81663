-- 0006: reserved. Another branch (issue 21 was told to take 0007) adds its own 0006; the
-- loader wants numbers 1..n without gaps, so this empty file holds the place until the merge,
-- which deletes it (a store that applied it keeps a harmless schema_migrations row).
SELECT 1;
