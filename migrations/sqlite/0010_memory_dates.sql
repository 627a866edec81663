-- 0010: when it happened (issue 20). `occurred_at` is the memory's own time when the client
-- gave one (a conversation turn's session date); NULL means created_at. `dates` holds the date
-- ranges the text mentions ("yesterday", "two weekends ago", "in May 2023"), resolved against
-- that time by domain.dates and written by services.memories on every write: ISO days and
-- `start..end` ranges, space separated, earliest first ("2023-05-07 2023-06-01..2023-08-31").
-- Columns, not a side table: a memory mentions few dates, ranking reads them from the row it
-- already loads for a candidate (no join per search), and export/import and copy-store carry
-- them with the row. Rows written before 0010 have no dates until rewritten or re-imported.
-- Adding nullable columns without a default rewrites nothing.

ALTER TABLE context_snapshots ADD COLUMN occurred_at TEXT;
ALTER TABLE context_snapshots ADD COLUMN dates TEXT;

-- The earliest date a memory mentions, for date-range filters: derived, so no write path
-- (append, import, copy-store) can let it disagree with `dates`.
ALTER TABLE context_snapshots ADD COLUMN date_start TEXT
    GENERATED ALWAYS AS (substr(dates, 1, 10)) VIRTUAL;
CREATE INDEX idx_snapshots_project_date ON context_snapshots (project, date_start)
    WHERE dates IS NOT NULL;

-- The keyword index also holds the dates, with month numbers written as names
-- ("2023-05-07" -> "2023 may 07"), in the metadata column: "in May 2023" finds a memory that
-- said "yesterday" on 8 May 2023. The index is contentless, so a row's indexed text must not
-- change under it: the view changes, every row is indexed again, and the triggers learn the
-- new column.
DROP TRIGGER context_snapshots_ai;
DROP TRIGGER context_snapshots_bd;
DROP TRIGGER context_snapshots_bu;
DROP TRIGGER context_snapshots_au;
INSERT INTO context_snapshots_fts (context_snapshots_fts) VALUES ('delete-all');
DROP VIEW context_snapshots_search;

CREATE VIEW context_snapshots_search AS
SELECT id, content, coalesce(key, '') AS key,
       (SELECT coalesce(group_concat(value, ' '), '') FROM json_tree(context_snapshots.metadata)
        WHERE type IN ('text', 'integer', 'real'))
       || coalesce(' ' || replace(replace(replace(replace(replace(replace(replace(replace(
              replace(replace(replace(replace(dates,
              '-01-', ' january '), '-02-', ' february '), '-03-', ' march '),
              '-04-', ' april '), '-05-', ' may '), '-06-', ' june '), '-07-', ' july '),
              '-08-', ' august '), '-09-', ' september '), '-10-', ' october '),
              '-11-', ' november '), '-12-', ' december '), '') AS metadata
FROM context_snapshots;

CREATE TRIGGER context_snapshots_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
    SELECT id, content, key, metadata FROM context_snapshots_search WHERE id = new.id;
END;

CREATE TRIGGER context_snapshots_bd BEFORE DELETE ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key, metadata)
    SELECT 'delete', id, content, key, metadata FROM context_snapshots_search WHERE id = old.id;
END;

CREATE TRIGGER context_snapshots_bu BEFORE UPDATE OF content, key, metadata, dates
    ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key, metadata)
    SELECT 'delete', id, content, key, metadata FROM context_snapshots_search WHERE id = old.id;
END;

CREATE TRIGGER context_snapshots_au AFTER UPDATE OF content, key, metadata, dates
    ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
    SELECT id, content, key, metadata FROM context_snapshots_search WHERE id = new.id;
END;

INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
SELECT id, content, key, metadata FROM context_snapshots_search;
