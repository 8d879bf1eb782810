-- +goose Up
-- Conversations, shared answers and search (issue 14).
--
-- thread_id: every question belongs to a conversation, named by its first
-- question's id (a first question's thread_id is its own id). A follow-up or
-- a question asked back is a message like any other, with the same approval
-- and exactly-once rules, in the same thread.
ALTER TABLE messages ADD COLUMN thread_id BIGINT;
UPDATE messages SET thread_id = id;
ALTER TABLE messages ALTER COLUMN thread_id SET NOT NULL;
-- shared_at: when the person answering let the whole organization find the
-- question and its answer (search_answers, find_owner); NULL keeps it to
-- the two people.
ALTER TABLE messages ADD COLUMN shared_at TIMESTAMPTZ;
-- draft_share: the saved draft would be shared when sent. A client without
-- approval dialogs sends only the draft the person was shown, so the
-- sharing choice is saved and shown with it.
ALTER TABLE messages ADD COLUMN draft_share BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX messages_thread ON messages (org_id, thread_id, id);

-- Full-text search over answered questions: English stemming ("retries"
-- finds "retry"). An expression index, so no column holds a copy of the
-- text; SearchMessages repeats the expression exactly.
CREATE INDEX messages_search ON messages
    USING gin (to_tsvector('english'::regconfig, question || ' ' || answer_text))
    WHERE answered_seq IS NOT NULL;

-- +goose Down
DROP INDEX messages_search;
DROP INDEX messages_thread;
ALTER TABLE messages DROP COLUMN draft_share;
ALTER TABLE messages DROP COLUMN shared_at;
ALTER TABLE messages DROP COLUMN thread_id;
