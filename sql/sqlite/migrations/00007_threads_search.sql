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
CREATE INDEX messages_thread ON messages (org_id, thread_id, id);

-- Full-text search over answered questions: FTS5 with the Porter stemmer
-- ("retries" finds "retry"). Rows are added by the trigger below when a
-- question is answered, in the same transaction (body: the question and
-- its answer, as PostgreSQL's index expression); FTS5's own rowids follow
-- answer order, which SearchMessages pages by.
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body, org_id UNINDEXED, message_id UNINDEXED,
    tokenize = 'porter unicode61'
);
INSERT INTO messages_fts (body, org_id, message_id)
SELECT question || ' ' || answer_text, org_id, id FROM messages
WHERE answered_seq IS NOT NULL
ORDER BY org_id, answered_seq;

-- +goose StatementBegin
CREATE TRIGGER messages_fts_answered AFTER UPDATE OF answered_seq ON messages
WHEN old.answered_seq IS NULL AND new.answered_seq IS NOT NULL
BEGIN
    INSERT INTO messages_fts (body, org_id, message_id)
    VALUES (new.question || ' ' || new.answer_text, new.org_id, new.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_fts_deleted AFTER DELETE ON messages
WHEN old.answered_seq IS NOT NULL
BEGIN
    DELETE FROM messages_fts WHERE org_id = old.org_id AND message_id = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_fts_deleted;
DROP TRIGGER messages_fts_answered;
DROP TABLE messages_fts;
DROP INDEX messages_thread;
ALTER TABLE messages DROP COLUMN shared_at;
ALTER TABLE messages DROP COLUMN thread_id;
