-- +goose Up
-- Conversations, shared answers and search (issue 14).
--
-- thread_id: every question belongs to a conversation, named by its first
-- question's id (a first question's thread_id is its own id). A follow-up or
-- a question asked back is a message like any other, with the same approval
-- and exactly-once rules, in the same thread.
ALTER TABLE messages ADD COLUMN thread_id BIGINT NOT NULL DEFAULT 0;
UPDATE messages SET thread_id = id;
-- shared_at: when the person answering let the whole organization find the
-- question and its answer (search_answers, find_owner); NULL keeps it to
-- the two people.
ALTER TABLE messages ADD COLUMN shared_at TIMESTAMP;
-- draft_share: the saved draft would be shared when sent. A client without
-- approval dialogs sends only the draft the person was shown, so the
-- sharing choice is saved and shown with it.
ALTER TABLE messages ADD COLUMN draft_share BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX messages_thread ON messages (org_id, thread_id, id);

-- Full-text search over answered questions: FTS5 with the Porter stemmer
-- ("retries" finds "retry"). The index holds no copy of the text
-- (contentless: the rows are read from messages); messages_search gives each
-- indexed question a stable integer key, the index's rowid, so one is found
-- and deleted by its key, never by scanning the index. A trigger indexes a
-- question when it is answered (its body: the question and its answer, as
-- PostgreSQL's index expression), in the same transaction, and another
-- removes it with the message. Keys follow answer order, which
-- SearchMessages pages by.
CREATE TABLE messages_search (
    id         INTEGER PRIMARY KEY,
    org_id     TEXT    NOT NULL,
    message_id BIGINT  NOT NULL,
    UNIQUE (org_id, message_id)
);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body, content = '', contentless_delete = 1, tokenize = 'porter unicode61'
);
INSERT INTO messages_search (org_id, message_id)
SELECT org_id, id FROM messages WHERE answered_seq IS NOT NULL ORDER BY org_id, answered_seq;
INSERT INTO messages_fts (rowid, body)
SELECT s.id, m.question || ' ' || m.answer_text
FROM messages_search s JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id;

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

-- +goose Down
DROP TRIGGER messages_fts_deleted;
DROP TRIGGER messages_fts_answered;
DROP TABLE messages_fts;
DROP TABLE messages_search;
DROP INDEX messages_thread;
ALTER TABLE messages DROP COLUMN draft_share;
ALTER TABLE messages DROP COLUMN shared_at;
ALTER TABLE messages DROP COLUMN thread_id;
