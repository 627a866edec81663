-- 0006 (PostgreSQL twin of migrations/sqlite/0006_memory_counts.sql): rows per (project, layer,
-- stored tier) and their content bytes, kept by triggers, so get_memory_stats reads a few
-- counters instead of counting the project's rows. The tier as of now is the stored tier
-- corrected by the rows whose reference time crossed a boundary since it was stored (see
-- memory_core.storage.postgres.repository.PostgresMemoryRepository.stats).
--
-- Statement-level triggers with transition tables: a recalculation that moves 100k rows makes
-- one grouped upsert, not 100k, and each statement takes the counter rows' locks in one sorted
-- order. Upserts add to the row under its lock, so concurrent writers never lose a count.

CREATE TABLE memory_counts (
    project     text   NOT NULL,
    layer       text   NOT NULL,
    memory_tier text   NOT NULL,
    n           bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project, layer, memory_tier)
);

-- Writers of an older process wait while the counts are seeded, so none is missed.
LOCK TABLE context_snapshots IN SHARE MODE;

INSERT INTO memory_counts (project, layer, memory_tier, n, bytes)
SELECT project, layer, memory_tier, count(*), coalesce(sum(octet_length(content)), 0)
FROM context_snapshots GROUP BY project, layer, memory_tier;

CREATE FUNCTION memory_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes)
        SELECT project, layer, memory_tier, count(*), sum(octet_length(content))
        FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes)
        SELECT project, layer, memory_tier, -count(*), -sum(octet_length(content))
        FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes;
    ELSE
        -- Only rows that changed counter or size; access tracking (tier already ACTIVE)
        -- leaves nothing to write.
        INSERT INTO memory_counts AS c (project, layer, memory_tier, n, bytes)
        SELECT project, layer, memory_tier, sum(n), sum(bytes)
        FROM (
            SELECT o.project, o.layer, o.memory_tier, -1 AS n, -octet_length(o.content) AS bytes
            FROM old_rows AS o JOIN new_rows AS w USING (id)
            WHERE (o.project, o.layer, o.memory_tier, octet_length(o.content))
                  IS DISTINCT FROM (w.project, w.layer, w.memory_tier, octet_length(w.content))
            UNION ALL
            SELECT w.project, w.layer, w.memory_tier, 1, octet_length(w.content)
            FROM old_rows AS o JOIN new_rows AS w USING (id)
            WHERE (o.project, o.layer, o.memory_tier, octet_length(o.content))
                  IS DISTINCT FROM (w.project, w.layer, w.memory_tier, octet_length(w.content))
        ) AS moved
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 OR sum(bytes) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (project, layer, memory_tier)
        DO UPDATE SET n = c.n + excluded.n, bytes = c.bytes + excluded.bytes;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_counts_ai AFTER INSERT ON context_snapshots
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_counts_add();
CREATE TRIGGER memory_counts_ad AFTER DELETE ON context_snapshots
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_counts_add();
CREATE TRIGGER memory_counts_au AFTER UPDATE ON context_snapshots
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION memory_counts_add();

-- The rows whose stored tier is no longer their tier as of now (see the SQLite twin).
CREATE INDEX idx_snapshots_project_tier_reference
    ON context_snapshots (project, memory_tier, (coalesce(last_accessed, created_at)));
-- Oldest and newest memory of a project: two index probes.
CREATE INDEX idx_snapshots_project_created ON context_snapshots (project, created_at);
