-- 0009 (PostgreSQL twin of migrations/sqlite/0009_never_accessed_counts.sql): the kept counters
-- also count the rows never handed out (access_count = 0) per (project, layer, stored tier).
-- The statement-level update trigger already compares old and new rows of every update (access
-- tracking included); a row read for the first time now also moves its counter row.

LOCK TABLE context_snapshots IN SHARE MODE;

ALTER TABLE memory_counts ADD COLUMN never_accessed bigint NOT NULL DEFAULT 0;

UPDATE memory_counts AS c SET never_accessed = g.n
FROM (
    SELECT project, layer, memory_tier, count(*) AS n FROM context_snapshots
    WHERE access_count = 0 GROUP BY project, layer, memory_tier
) AS g
WHERE g.project = c.project AND g.layer = c.layer AND g.memory_tier = c.memory_tier;

CREATE OR REPLACE FUNCTION memory_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes, never_accessed)
        SELECT project, layer, memory_tier, count(*), sum(octet_length(content)),
               count(*) FILTER (WHERE access_count = 0)
        FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes,
                      never_accessed = c.never_accessed + excluded.never_accessed;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes, never_accessed)
        SELECT project, layer, memory_tier, -count(*), -sum(octet_length(content)),
               -count(*) FILTER (WHERE access_count = 0)
        FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes,
                      never_accessed = c.never_accessed + excluded.never_accessed;
    ELSE
        -- Only rows that changed counter, size or first access; access tracking of a row
        -- already read and already ACTIVE leaves nothing to write.
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes, never_accessed)
        SELECT project, layer, memory_tier, sum(n), sum(bytes), sum(unread)
        FROM (
            SELECT o.project, o.layer, o.memory_tier, -1 AS n, -octet_length(o.content) AS bytes,
                   -(o.access_count = 0)::int AS unread
            FROM old_rows AS o JOIN new_rows AS w USING (id)
            WHERE (o.project, o.layer, o.memory_tier, octet_length(o.content), o.access_count = 0)
                  IS DISTINCT FROM
                  (w.project, w.layer, w.memory_tier, octet_length(w.content), w.access_count = 0)
            UNION ALL
            SELECT w.project, w.layer, w.memory_tier, 1, octet_length(w.content),
                   (w.access_count = 0)::int
            FROM old_rows AS o JOIN new_rows AS w USING (id)
            WHERE (o.project, o.layer, o.memory_tier, octet_length(o.content), o.access_count = 0)
                  IS DISTINCT FROM
                  (w.project, w.layer, w.memory_tier, octet_length(w.content), w.access_count = 0)
        ) AS moved
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 OR sum(bytes) <> 0 OR sum(unread) <> 0
        ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes,
                      never_accessed = c.never_accessed + excluded.never_accessed;
    END IF;
    RETURN NULL;
END
$$;
