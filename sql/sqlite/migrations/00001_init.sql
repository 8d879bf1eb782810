-- +goose Up
-- Organizations own everything else. last_message_id numbers questions per
-- organization ("message 12" reveals nothing about other organizations);
-- last_event_seq orders questions and answers: it is bumped under this row's
-- lock in the same transaction that writes the event, so sequence order is
-- commit order and a cursor over it never skips a late commit.
CREATE TABLE organizations (
    id                  TEXT        NOT NULL PRIMARY KEY,
    name                TEXT        NOT NULL,
    admin_password_hash TEXT        NOT NULL,
    created_at          TIMESTAMP   NOT NULL,
    last_message_id     BIGINT      NOT NULL DEFAULT 0,
    last_event_seq      BIGINT      NOT NULL DEFAULT 0
);

CREATE TABLE users (
    org_id         TEXT        NOT NULL REFERENCES organizations (id),
    id             TEXT        NOT NULL,
    name           TEXT        NOT NULL,
    password_hash  TEXT        NOT NULL,
    ownership      TEXT        NOT NULL,
    notes          TEXT        NOT NULL,
    profile_notes  TEXT        NOT NULL,
    created_at     TIMESTAMP   NOT NULL,
    deactivated_at TIMESTAMP,
    PRIMARY KEY (org_id, id)
);

-- Tokens are stored only as SHA-256 hashes of 256-bit random secrets.
CREATE TABLE auth_tokens (
    token_hash BLOB        NOT NULL PRIMARY KEY,
    org_id     TEXT        NOT NULL,
    user_id    TEXT        NOT NULL,
    created_at TIMESTAMP   NOT NULL,
    expires_at TIMESTAMP   NOT NULL,
    revoked_at TIMESTAMP,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id)
);
CREATE INDEX auth_tokens_user ON auth_tokens (org_id, user_id);

-- Both people of a question belong to the message's organization: the
-- composite foreign keys make a cross-organization message impossible.
CREATE TABLE messages (
    org_id           TEXT        NOT NULL REFERENCES organizations (id),
    id               BIGINT      NOT NULL,
    from_user_id     TEXT        NOT NULL,
    to_user_id       TEXT        NOT NULL,
    question         TEXT        NOT NULL,
    asked_at         TIMESTAMP   NOT NULL,
    asked_seq        BIGINT      NOT NULL,
    draft_text       TEXT,
    draft_updated_at TIMESTAMP,
    answer_text      TEXT,
    answered_at      TIMESTAMP,
    answered_seq     BIGINT,
    PRIMARY KEY (org_id, id),
    FOREIGN KEY (org_id, from_user_id) REFERENCES users (org_id, id),
    FOREIGN KEY (org_id, to_user_id) REFERENCES users (org_id, id),
    CHECK ((answer_text IS NULL) = (answered_at IS NULL) AND (answered_at IS NULL) = (answered_seq IS NULL))
);
-- check_inbox: a recipient's unanswered questions, oldest first.
CREATE INDEX messages_inbox ON messages (org_id, to_user_id, id) WHERE answered_seq IS NULL;
-- check_replies: answers to an asker's questions in commit order.
CREATE INDEX messages_replies ON messages (org_id, from_user_id, answered_seq) WHERE answered_seq IS NOT NULL;
-- get_user_profile: interaction metadata between two people.
CREATE INDEX messages_pair ON messages (org_id, from_user_id, to_user_id, id);

-- +goose Down
DROP TABLE messages;
DROP TABLE auth_tokens;
DROP TABLE users;
DROP TABLE organizations;
