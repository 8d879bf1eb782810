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
-- finds "retry"). messages_search holds, for each answered question, its
-- words as a tsvector without positions (the question and its answer, as
-- SQLite's messages_fts body; no search ranks by position, and stripped
-- rows are half as wide) and who may find it, so a search neither computes
-- to_tsvector per row nor reads messages before it has its page: the GIN
-- index finds the rows of a rare word, messages_search_newest walks newest
-- answers first and stops at the page for a common one (the planner picks
-- by the words' statistics). Rows are added by the trigger below when a
-- question is answered, in the same transaction; who asked, who answered
-- and whether it is shared do not change after that.
CREATE TABLE messages_search (
    org_id       TEXT     NOT NULL,
    message_id   BIGINT   NOT NULL,
    answered_seq BIGINT   NOT NULL,
    from_user_id TEXT     NOT NULL,
    to_user_id   TEXT     NOT NULL,
    shared       BOOLEAN  NOT NULL,
    body         TSVECTOR NOT NULL,
    PRIMARY KEY (org_id, message_id),
    FOREIGN KEY (org_id, message_id) REFERENCES messages (org_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_search_body ON messages_search USING gin (body);
CREATE INDEX messages_search_newest ON messages_search (org_id, answered_seq);
INSERT INTO messages_search (org_id, message_id, answered_seq, from_user_id, to_user_id, shared, body)
SELECT org_id, id, answered_seq, from_user_id, to_user_id, shared_at IS NOT NULL,
       strip(to_tsvector('english'::regconfig, question || ' ' || answer_text))
FROM messages WHERE answered_seq IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION messages_search_answered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO messages_search (org_id, message_id, answered_seq, from_user_id, to_user_id, shared, body)
    VALUES (new.org_id, new.id, new.answered_seq, new.from_user_id, new.to_user_id, new.shared_at IS NOT NULL,
            strip(to_tsvector('english'::regconfig, new.question || ' ' || new.answer_text)));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER messages_search_answered AFTER UPDATE OF answered_seq ON messages
FOR EACH ROW WHEN (old.answered_seq IS NULL AND new.answered_seq IS NOT NULL)
EXECUTE FUNCTION messages_search_answered();

-- +goose Down
DROP TRIGGER messages_search_answered ON messages;
DROP FUNCTION messages_search_answered();
DROP TABLE messages_search;
DROP INDEX messages_thread;
ALTER TABLE messages DROP COLUMN draft_share;
ALTER TABLE messages DROP COLUMN shared_at;
ALTER TABLE messages DROP COLUMN thread_id;
