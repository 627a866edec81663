-- 0007 (PostgreSQL twin of migrations/sqlite/0007_search_prefix_metadata.sql): keyword search also
-- finds a memory by its metadata values. The generated tsvector gains them at weight C (strings
-- and numbers of the JSON at any depth; not the keys, which every row of a kind shares); the
-- ranking gives C half the weight of the content (D) and the key (A), as FTS5's bm25 weights do.
-- Adding a stored generated column rewrites the table, which indexes every existing row.
-- Prefix matching (`'vuln':*`) needs no schema change: the GIN index serves it as it is.

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
                                 )::text,
                                 '[^[:alnum:]]+', ' ', 'g')), 'C')
) STORED;
CREATE INDEX idx_snapshots_fts ON context_snapshots USING gin (search_vector);
