-- 0006: rows per (project, layer, stored tier) and their content bytes, kept by triggers, so
-- get_memory_stats reads a few counters instead of counting the project's rows (90 ms at 100k
-- rows, ~1 s at 1M). The counts follow the *stored* tier (memory_tier); the tier "as of now"
-- also depends on the clock, so stats adds the few rows whose reference time has crossed a
-- tier boundary since their tier was stored, found through idx_snapshots_project_tier_reference
-- (see memory_core.storage.sqlite.repository.SqliteMemoryRepository.stats).
-- Triggers run inside the writing statement's transaction, so SQLite's single writer keeps the
-- counts exact under concurrent processes, and every path that changes rows (appends, imports,
-- copy-store, recalculation, pruning, deletes) is covered without code of its own.

CREATE TABLE memory_counts (
    project     TEXT    NOT NULL,
    layer       TEXT    NOT NULL,
    memory_tier TEXT    NOT NULL,
    n           INTEGER NOT NULL DEFAULT 0,
    bytes       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, layer, memory_tier)
) WITHOUT ROWID;

INSERT INTO memory_counts (project, layer, memory_tier, n, bytes)
SELECT project, layer, memory_tier, count(*), coalesce(sum(length(CAST(content AS BLOB))), 0)
FROM context_snapshots GROUP BY project, layer, memory_tier;

CREATE TRIGGER memory_counts_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO memory_counts (project, layer, memory_tier, n, bytes)
    VALUES (new.project, new.layer, new.memory_tier, 1, length(CAST(new.content AS BLOB)))
    ON CONFLICT (project, layer, memory_tier)
    DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER memory_counts_ad AFTER DELETE ON context_snapshots BEGIN
    UPDATE memory_counts SET n = n - 1, bytes = bytes - length(CAST(old.content AS BLOB))
    WHERE project = old.project AND layer = old.layer AND memory_tier = old.memory_tier;
END;

-- Access tracking sets memory_tier = 'ACTIVE' on every read; the WHEN clause keeps the
-- trigger's body for the updates that move a row between counters or change its size.
CREATE TRIGGER memory_counts_au AFTER UPDATE OF project, layer, memory_tier, content
ON context_snapshots
WHEN old.project IS NOT new.project OR old.layer IS NOT new.layer
     OR old.memory_tier IS NOT new.memory_tier
     OR length(CAST(old.content AS BLOB)) != length(CAST(new.content AS BLOB))
BEGIN
    UPDATE memory_counts SET n = n - 1, bytes = bytes - length(CAST(old.content AS BLOB))
    WHERE project = old.project AND layer = old.layer AND memory_tier = old.memory_tier;
    INSERT INTO memory_counts (project, layer, memory_tier, n, bytes)
    VALUES (new.project, new.layer, new.memory_tier, 1, length(CAST(new.content AS BLOB)))
    ON CONFLICT (project, layer, memory_tier)
    DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes;
END;

-- The rows whose stored tier is no longer their tier as of now: for each stored tier, a range
-- of reference times outside that tier's window; counting them never reads the table. After the daily recalculation these ranges hold only the rows that aged
-- across a boundary since (a day's worth at most).
CREATE INDEX idx_snapshots_project_tier_reference
    ON context_snapshots (project, memory_tier, coalesce(last_accessed, created_at));
-- Oldest and newest memory of a project: two index probes.
CREATE INDEX idx_snapshots_project_created ON context_snapshots (project, created_at);
