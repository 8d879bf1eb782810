-- +goose Up
-- Search lists partitioned by who may read the answer (issue 14: a search
-- at 1M messages read every answer holding its words, two thirds of them
-- answers the caller may not see, and read them to filter them out).
--
-- search_groups names the readers of answers: an organization's shared
-- answers (user_id '', no slug is empty) and each person's private ones.
-- messages_fts holds a shared answer once, under its organization's group,
-- and a private answer twice, under the asker's and the answerer's groups:
-- its rowid is group * 2^40 + 2^40 - 1 - its messages_search key. FTS5
-- keeps each word's list in rowid order, so a group's entries of a word lie
-- together and a search reads a group by a rowid range (FTS5 seeks to the
-- range through its doclist index): a search by u0 reads the
-- organization's shared range and u0's own, which hold only answers u0 may
-- see, of u0's organization only. Within a group the newest answer has the
-- lowest rowid, so a search reads newest first in ascending order, which
-- costs FTS5 half of what a descending read does (measured at 1M: a
-- descending read decodes each page again backwards). Keys stay below
-- 2^40 - 1 and groups below 2^23.
-- Who asked, who answered and whether it is shared are fixed when a
-- question is answered (AnswerMessage is the only writer of shared_at), so
-- a row's groups never change; the delete trigger removes the rows a
-- message had.
CREATE TABLE search_groups (
    id      INTEGER PRIMARY KEY,
    org_id  TEXT    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id TEXT    NOT NULL,
    UNIQUE (org_id, user_id)
);

DROP TRIGGER messages_fts_deleted;
DROP TRIGGER messages_fts_answered;
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);

INSERT INTO search_groups (org_id, user_id)
SELECT org_id, '' FROM messages WHERE answered_seq IS NOT NULL AND shared_at IS NOT NULL
UNION SELECT org_id, from_user_id FROM messages WHERE answered_seq IS NOT NULL AND shared_at IS NULL
UNION SELECT org_id, to_user_id FROM messages WHERE answered_seq IS NOT NULL AND shared_at IS NULL;
INSERT INTO messages_fts (rowid, body)
SELECT g.id * 1099511627776 + 1099511627775 - s.id, m.question || ' ' || m.answer_text
FROM messages_search s
JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id
JOIN search_groups g ON g.org_id = s.org_id
 AND g.user_id IN (CASE WHEN m.shared_at IS NULL THEN m.from_user_id ELSE '' END,
                   CASE WHEN m.shared_at IS NULL THEN m.to_user_id ELSE '' END)
ORDER BY 1; -- in rowid order: FTS5 flushes a segment at each row out of order

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

-- +goose StatementBegin
CREATE TRIGGER messages_fts_deleted AFTER DELETE ON messages
WHEN old.answered_seq IS NOT NULL
BEGIN
    DELETE FROM messages_fts
    WHERE rowid = (SELECT g.id * 1099511627776 + 1099511627775 - s.id FROM messages_search s JOIN search_groups g ON g.org_id = s.org_id
                   WHERE s.org_id = old.org_id AND s.message_id = old.id
                     AND g.user_id = CASE WHEN old.shared_at IS NULL THEN old.from_user_id ELSE '' END);
    DELETE FROM messages_fts
    WHERE rowid = (SELECT g.id * 1099511627776 + 1099511627775 - s.id FROM messages_search s JOIN search_groups g ON g.org_id = s.org_id
                   WHERE s.org_id = old.org_id AND s.message_id = old.id
                     AND old.shared_at IS NULL AND old.to_user_id <> old.from_user_id AND g.user_id = old.to_user_id);
    DELETE FROM messages_search WHERE org_id = old.org_id AND message_id = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_fts_deleted;
DROP TRIGGER messages_fts_answered;
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
INSERT INTO messages_fts (rowid, body)
SELECT s.id, m.question || ' ' || m.answer_text
FROM messages_search s JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id
ORDER BY s.id;
DROP TABLE search_groups;

-- +goose StatementBegin
CREATE TRIGGER messages_fts_answered AFTER UPDATE OF answered_seq ON messages
WHEN old.answered_seq IS NULL AND new.answered_seq IS NOT NULL
BEGIN
    INSERT INTO messages_search (org_id, message_id) VALUES (new.org_id, new.id);
    INSERT INTO messages_fts (rowid, body)
    VALUES ((SELECT s.id FROM messages_search s WHERE s.org_id = new.org_id AND s.message_id = new.id),
            new.question || ' ' || new.answer_text);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_fts_deleted AFTER DELETE ON messages
WHEN old.answered_seq IS NOT NULL
BEGIN
    DELETE FROM messages_fts
    WHERE rowid = (SELECT s.id FROM messages_search s WHERE s.org_id = old.org_id AND s.message_id = old.id);
    DELETE FROM messages_search WHERE org_id = old.org_id AND message_id = old.id;
END;
-- +goose StatementEnd
