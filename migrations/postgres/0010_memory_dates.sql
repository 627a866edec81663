-- 0010 (PostgreSQL twin of migrations/sqlite/0010_memory_dates.sql): when it happened.
-- `occurred_at` is the memory's own time when the client gave one (NULL: created_at); `dates`
-- the date ranges its text mentions, resolved by domain.dates against that time (ISO days and
-- `start..end` ranges, space separated, earliest first). `date_start` (derived) is the earliest,
-- for date-range filters. The keyword vector also holds the dates with month numbers written as
-- names, at the metadata's weight C ("2023-05-07" -> "2023 may 07"). Replacing the generated
-- tsvector rewrites the table, which indexes every existing row again.

ALTER TABLE context_snapshots ADD COLUMN occurred_at timestamptz;
ALTER TABLE context_snapshots ADD COLUMN dates text;
ALTER TABLE context_snapshots ADD COLUMN date_start text
    GENERATED ALWAYS AS (left(dates, 10)) STORED;
CREATE INDEX idx_snapshots_project_date ON context_snapshots (project, date_start)
    WHERE dates IS NOT NULL;

ALTER TABLE context_snapshots DROP COLUMN search_vector;
ALTER TABLE context_snapshots ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('memstrata'::regconfig,
                          regexp_replace(coalesce(key, ''), '[^[:alnum:]]+', ' ', 'g')), 'A')
    || setweight(to_tsvector('memstrata'::regconfig,
                             regexp_replace(content, '[^[:alnum:]]+', ' ', 'g')), 'D')
    || setweight(to_tsvector('memstrata'::regconfig,
                             regexp_replace(
                                 jsonb_path_query_array(
                                     metadata,
                                     'strict $.** ? (@.type() == "string" || @.type() == "number")'
                                 )::text
                                 || ' ' || replace(replace(replace(replace(replace(replace(
                                     replace(replace(replace(replace(replace(replace(
                                     coalesce(dates, ''),
                                     '-01-', ' january '), '-02-', ' february '),
                                     '-03-', ' march '), '-04-', ' april '), '-05-', ' may '),
                                     '-06-', ' june '), '-07-', ' july '), '-08-', ' august '),
                                     '-09-', ' september '), '-10-', ' october '),
                                     '-11-', ' november '), '-12-', ' december '),
                                 '[^[:alnum:]]+', ' ', 'g')), 'C')
) STORED;
CREATE INDEX idx_snapshots_fts ON context_snapshots USING gin (search_vector);
