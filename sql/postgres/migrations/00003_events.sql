-- +goose Up
-- wait_for_messages: questions asked of a person in commit order. (Answers
-- to a person's questions use messages_replies.)
CREATE INDEX messages_asked ON messages (org_id, to_user_id, asked_seq);

-- +goose Down
DROP INDEX messages_asked;
