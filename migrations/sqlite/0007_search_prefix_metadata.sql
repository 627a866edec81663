-- 0007: keyword search also finds a memory by its metadata values, and by the start of a word.
-- The FTS5 table is rebuilt with a third column, the memory's metadata values (strings and
-- numbers of the JSON, at any depth, space separated; not the keys, which every row of a kind
-- shares and which would only add noise), and with prefix indexes so that `vuln*` reads one
-- index entry instead of scanning every term that starts with "vuln".
-- Metadata is redacted before it is stored (services.memories), so only redacted text is indexed.

DROP TRIGGER context_snapshots_ai;
DROP TRIGGER context_snapshots_ad;
DROP TRIGGER context_snapshots_au;
DROP TABLE context_snapshots_fts;

-- What the index holds for a row; the triggers and the backfill index through it, so the
-- flattening is written once. (A trigger cannot call json_tree itself, but it can read a view
-- that does; a row leaves the index BEFORE it changes, while the view still shows it.)
-- The FTS5 table is contentless: an external-content table would read the view by its
-- qualified name, where json_tree is not found ('rebuild' fails), and search reads only rowids
-- and ranks, never the indexed text.
CREATE VIEW context_snapshots_search AS
SELECT id, content, coalesce(key, '') AS key,
       (SELECT coalesce(group_concat(value, ' '), '') FROM json_tree(context_snapshots.metadata)
        WHERE type IN ('text', 'integer', 'real')) AS metadata
FROM context_snapshots;

CREATE VIRTUAL TABLE context_snapshots_fts USING fts5(
    content,
    key,
    metadata,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2',
    prefix = '2 3 4'
);

-- A metadata match counts half as much as one in the content or the key (the default `rank`).
INSERT INTO context_snapshots_fts (context_snapshots_fts, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.5)');

CREATE TRIGGER context_snapshots_ai AFTER INSERT ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
    SELECT id, content, key, metadata FROM context_snapshots_search WHERE id = new.id;
END;

CREATE TRIGGER context_snapshots_bd BEFORE DELETE ON context_snapshots BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key, metadata)
    SELECT 'delete', id, content, key, metadata FROM context_snapshots_search WHERE id = old.id;
END;

-- Only text changes touch the index: access tracking updates rows constantly and must stay cheap.
CREATE TRIGGER context_snapshots_bu BEFORE UPDATE OF content, key, metadata ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts (context_snapshots_fts, rowid, content, key, metadata)
    SELECT 'delete', id, content, key, metadata FROM context_snapshots_search WHERE id = old.id;
END;

CREATE TRIGGER context_snapshots_au AFTER UPDATE OF content, key, metadata ON context_snapshots
BEGIN
    INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
    SELECT id, content, key, metadata FROM context_snapshots_search WHERE id = new.id;
END;

-- Backfill: index every stored row.
INSERT INTO context_snapshots_fts (rowid, content, key, metadata)
SELECT id, content, key, metadata FROM context_snapshots_search;
