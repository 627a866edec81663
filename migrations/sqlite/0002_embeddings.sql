-- 0002: the embedding of each memory, the source of truth for the vector indexes.
-- The sqlite-vec tables (context_vectors, context_vectors_bit) depend on the configured model's
-- dimensions, so memory_core.storage.sqlite.vectors creates them in code and records the model
-- in `meta`; this table is model-agnostic and also serves exact rescoring and reuse by hash.

CREATE TABLE context_embeddings (
    id           INTEGER PRIMARY KEY REFERENCES context_snapshots (id) ON DELETE CASCADE,
    text_hash    TEXT NOT NULL,  -- sha256 of the exact text embedded (key + content)
    embedding    BLOB NOT NULL
);

-- Identical text is embedded once: a row whose text hash is known copies the stored vector.
CREATE INDEX idx_embeddings_text_hash ON context_embeddings (text_hash);

-- Changed text makes the old vector wrong; drop it so the indexer embeds the new text.
CREATE TRIGGER context_embeddings_stale AFTER UPDATE OF content ON context_snapshots
WHEN old.content_hash IS NOT new.content_hash BEGIN
    DELETE FROM context_embeddings WHERE id = new.id;
END;
