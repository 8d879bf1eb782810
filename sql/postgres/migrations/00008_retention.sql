-- +goose Up
-- Retention (CTALK_RETENTION): conversations whose newest answer is older
-- than the cutoff are found through their answers' times.
CREATE INDEX messages_answered ON messages (answered_at) WHERE answered_seq IS NOT NULL;

-- +goose Down
DROP INDEX messages_answered;
