-- +goose Up
-- The newest answer sequence number check_replies has shown the user: an
-- answer above it committed after their last check and is shown whatever
-- `since` says, so a reply that committed late (or was stamped by a replica
-- with a slow clock) is never skipped.
ALTER TABLE users ADD COLUMN replies_seen_seq BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN replies_seen_seq;
