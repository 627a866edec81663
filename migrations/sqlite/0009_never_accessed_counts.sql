-- 0009: the kept counters (0006) also count the rows never handed out (access_count = 0), per
-- (project, layer, stored tier), so get_memory_stats says how much of a project nobody has read
-- without counting its rows. Access tracking increments access_count on every read; only the
-- first read of a row (0 -> 1) changes this count, so the update trigger's WHEN clause keeps its
-- body off the access path otherwise (bench/access_cost.py measures it). A total of accesses
-- would need a counter write on every read, so it is not kept (see docs/benchmarks.md).

ALTER TABLE memory_counts ADD COLUMN never_accessed INTEGER NOT NULL DEFAULT 0;

UPDATE memory_counts SET never_accessed = g.n
FROM (
    SELECT project, layer, memory_tier, count(*) AS n FROM context_snapshots
    WHERE access_count = 0 GROUP BY project, layer, memory_tier
) AS g
WHERE g.project = memory_counts.project AND g.layer = memory_counts.layer
  AND g.memory_tier = memory_counts.memory_tier;

DROP TRIGGER memory_counts_ai;
DROP TRIGGER memory_counts_ad;
DROP TRIGGER memory_counts_au;

CREATE TRIGGER memory_counts_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO memory_counts (project, layer, memory_tier, n, bytes, never_accessed)
    VALUES (new.project, new.layer, new.memory_tier, 1, length(CAST(new.content AS BLOB)),
            new.access_count = 0)
    ON CONFLICT (project, layer, memory_tier)
    DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes,
                  never_accessed = never_accessed + excluded.never_accessed;
END;

CREATE TRIGGER memory_counts_ad AFTER DELETE ON context_snapshots BEGIN
    UPDATE memory_counts SET n = n - 1, bytes = bytes - length(CAST(old.content AS BLOB)),
                             never_accessed = never_accessed - (old.access_count = 0)
    WHERE project = old.project AND layer = old.layer AND memory_tier = old.memory_tier;
END;

-- Access tracking sets memory_tier = 'ACTIVE' and access_count + 1 on every read; the WHEN
-- clause keeps the trigger's body for the updates that move a row between counters, change its
-- size, or read it for the first time.
CREATE TRIGGER memory_counts_au AFTER UPDATE OF project, layer, memory_tier, content, access_count
ON context_snapshots
WHEN old.project IS NOT new.project OR old.layer IS NOT new.layer
     OR old.memory_tier IS NOT new.memory_tier
     OR length(CAST(old.content AS BLOB)) != length(CAST(new.content AS BLOB))
     OR (old.access_count = 0) IS NOT (new.access_count = 0)
BEGIN
    UPDATE memory_counts SET n = n - 1, bytes = bytes - length(CAST(old.content AS BLOB)),
                             never_accessed = never_accessed - (old.access_count = 0)
    WHERE project = old.project AND layer = old.layer AND memory_tier = old.memory_tier;
    INSERT INTO memory_counts (project, layer, memory_tier, n, bytes, never_accessed)
    VALUES (new.project, new.layer, new.memory_tier, 1, length(CAST(new.content AS BLOB)),
            new.access_count = 0)
    ON CONFLICT (project, layer, memory_tier)
    DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes,
                  never_accessed = never_accessed + excluded.never_accessed;
END;
