-- 0014: shared anonymised patterns (issue 33.6, docs/business_context.md "Shared patterns").
-- Tenants opt in to contribute; their documents are read into anonymised sentences
-- ("passages"); a maintenance job publishes a passage as a pattern when at least k opted-in
-- tenants hold it. Everything here is derived from knowledge_documents and cascades from it,
-- so deleting or replacing a document takes its passages, and the patterns they hold up,
-- with it.

-- The contributors. A tenant absent from this table has nothing in the tables below.
CREATE TABLE shared_tenants (
    tenant       TEXT PRIMARY KEY,
    opted_in_at  TEXT NOT NULL
) WITHOUT ROWID;

-- Which documents were read into the pool, with which model (another model reads them again).
CREATE TABLE shared_documents (
    document_id   INTEGER PRIMARY KEY REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    tenant        TEXT NOT NULL,
    embed_model   TEXT NOT NULL,
    passages      INTEGER NOT NULL,
    extracted_at  TEXT NOT NULL
);

CREATE INDEX idx_shared_documents_tenant ON shared_documents (tenant);

-- Anonymised sentences of opted-in tenants (domain/anonymise.py), never shown as such.
CREATE TABLE shared_passages (
    id           INTEGER PRIMARY KEY,
    document_id  INTEGER NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    tenant       TEXT NOT NULL,
    text         TEXT NOT NULL,
    embedding    BLOB NOT NULL,
    embed_model  TEXT NOT NULL
);

CREATE INDEX idx_shared_passages_tenant ON shared_passages (tenant);
CREATE INDEX idx_shared_passages_document ON shared_passages (document_id);
CREATE INDEX idx_shared_passages_model ON shared_passages (embed_model);

-- Published patterns: the text is the source passage's. `holders` is how many tenants held
-- it when published: a pattern is shown only while all of them still do (and >= k).
CREATE TABLE shared_patterns (
    id           INTEGER PRIMARY KEY,
    passage_id   INTEGER NOT NULL REFERENCES shared_passages (id) ON DELETE CASCADE,
    holders      INTEGER NOT NULL,
    computed_at  TEXT NOT NULL
);

CREATE INDEX idx_shared_patterns_passage ON shared_patterns (passage_id);

-- Who holds each pattern, through which passage. Private: no tool or command reads it out.
CREATE TABLE shared_pattern_holders (
    pattern_id  INTEGER NOT NULL REFERENCES shared_patterns (id) ON DELETE CASCADE,
    passage_id  INTEGER NOT NULL REFERENCES shared_passages (id) ON DELETE CASCADE,
    tenant      TEXT NOT NULL,
    PRIMARY KEY (pattern_id, tenant)
) WITHOUT ROWID;

CREATE INDEX idx_shared_holders_passage ON shared_pattern_holders (passage_id);
CREATE INDEX idx_shared_holders_tenant ON shared_pattern_holders (tenant);
