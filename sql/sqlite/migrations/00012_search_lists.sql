-- +goose Up
-- Word lists a search of two or more words intersects in Go (issue 14: FTS5
-- steps through every entry of each word's list in WebAssembly, about 25 ns
-- an entry, so three common words that seldom meet cost 1.8 ms in the
-- organization's shared group at 1M answers; see db/search_lists.go).
--
-- search_lists holds, for each search group (migration 00011) and each word
-- as FTS5 indexed it (search_tokenizer tokenizes with the same tokenizer),
-- the keys of the group's answers holding the word, in blocks: a block's
-- first (lowest) key, then the ascending differences of the others as
-- varints. The lists are filled by the store in the background (listSearch),
-- for each organization up to search_listed.through: a search reads the
-- lists for keys up to it and FTS5 for the keys after it. An answer deleted
-- later stays in the lists and is dropped when its key is not found; keys
-- are never used again (messages_fts_answered below), so a key in the lists
-- never names another answer.
CREATE TABLE search_lists (
    group_id INTEGER NOT NULL REFERENCES search_groups (id) ON DELETE CASCADE,
    term     TEXT    NOT NULL,
    first    INTEGER NOT NULL,
    keys     BLOB    NOT NULL,
    PRIMARY KEY (group_id, term, first)
) WITHOUT ROWID;

-- How far each organization's answers are in search_lists: every answer
-- with a key up to through is. The index gives the answered trigger the
-- highest through without reading every organization's.
CREATE TABLE search_listed (
    org_id  TEXT    PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    through INTEGER NOT NULL
);
CREATE INDEX search_listed_through ON search_listed (through);

-- One document, so that an auxiliary function (ctalk_terms, registered by
-- the store) can call FTS5's tokenizer on any text: its terms are exactly
-- those messages_fts indexes.
CREATE VIRTUAL TABLE search_tokenizer USING fts5 (body, tokenize = 'porter unicode61');
INSERT INTO search_tokenizer (rowid, body) VALUES (1, 'x');

-- An organization's unlisted answers, by key.
CREATE INDEX messages_search_org ON messages_search (org_id);

-- Keys grow past every listed one: INTEGER PRIMARY KEY takes the highest
-- key plus one, which after the newest answer is deleted is that answer's
-- key again.
DROP TRIGGER messages_fts_answered;
-- +goose StatementBegin
CREATE TRIGGER messages_fts_answered AFTER UPDATE OF answered_seq ON messages
WHEN old.answered_seq IS NULL AND new.answered_seq IS NOT NULL
BEGIN
    INSERT INTO messages_search (id, org_id, message_id)
    VALUES (max(coalesce((SELECT max(id) FROM messages_search), 0),
                coalesce((SELECT max(through) FROM search_listed), 0)) + 1,
            new.org_id, new.id);
    INSERT OR IGNORE INTO search_groups (org_id, user_id)
    VALUES (new.org_id, CASE WHEN new.shared_at IS NULL THEN new.from_user_id ELSE '' END),
           (new.org_id, CASE WHEN new.shared_at IS NULL THEN new.to_user_id ELSE '' END);
    INSERT INTO messages_fts (rowid, body)
    SELECT g.id * 1099511627776 + 1099511627775 - s.id, new.question || ' ' || new.answer_text
    FROM messages_search s JOIN search_groups g ON g.org_id = s.org_id
    WHERE s.org_id = new.org_id AND s.message_id = new.id
      AND g.user_id IN (CASE WHEN new.shared_at IS NULL THEN new.from_user_id ELSE '' END,
                        CASE WHEN new.shared_at IS NULL THEN new.to_user_id ELSE '' END)
    ORDER BY 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_fts_answered;
-- +goose StatementBegin
CREATE TRIGGER messages_fts_answered AFTER UPDATE OF answered_seq ON messages
WHEN old.answered_seq IS NULL AND new.answered_seq IS NOT NULL
BEGIN
    INSERT INTO messages_search (org_id, message_id) VALUES (new.org_id, new.id);
    INSERT OR IGNORE INTO search_groups (org_id, user_id)
    VALUES (new.org_id, CASE WHEN new.shared_at IS NULL THEN new.from_user_id ELSE '' END),
           (new.org_id, CASE WHEN new.shared_at IS NULL THEN new.to_user_id ELSE '' END);
    INSERT INTO messages_fts (rowid, body)
    SELECT g.id * 1099511627776 + 1099511627775 - s.id, new.question || ' ' || new.answer_text
    FROM messages_search s JOIN search_groups g ON g.org_id = s.org_id
    WHERE s.org_id = new.org_id AND s.message_id = new.id
      AND g.user_id IN (CASE WHEN new.shared_at IS NULL THEN new.from_user_id ELSE '' END,
                        CASE WHEN new.shared_at IS NULL THEN new.to_user_id ELSE '' END)
    ORDER BY 1;
END;
-- +goose StatementEnd
DROP INDEX messages_search_org;
DROP TABLE search_tokenizer;
DROP INDEX search_listed_through;
DROP TABLE search_listed;
DROP TABLE search_lists;
