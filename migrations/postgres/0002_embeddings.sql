-- 0002 (PostgreSQL twin of migrations/sqlite/0002_embeddings.sql): the embedding of each memory.
-- The column has no fixed size here: memory_core.storage.postgres.vectors sets vector(dims) and
-- builds the HNSW (cosine) index when the configured model is first recorded in `meta`.
-- CREATE EXTENSION needs a privileged role once per database; an operator may run it ahead.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE context_embeddings (
    id           bigint PRIMARY KEY REFERENCES context_snapshots (id) ON DELETE CASCADE,
    text_hash    text   NOT NULL,  -- sha256 of the exact text embedded (key + content)
    embedding    vector NOT NULL
);

-- Identical text is embedded once: a row whose text hash is known copies the stored vector.
CREATE INDEX idx_embeddings_text_hash ON context_embeddings (text_hash);

-- Changed text makes the old vector wrong; drop it so the indexer embeds the new text.
CREATE FUNCTION context_embeddings_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM context_embeddings WHERE id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER context_embeddings_stale AFTER UPDATE OF content ON context_snapshots
    FOR EACH ROW WHEN (OLD.content_hash IS DISTINCT FROM NEW.content_hash)
    EXECUTE FUNCTION context_embeddings_stale();
