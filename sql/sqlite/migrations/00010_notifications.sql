-- +goose Up
-- Notifications by email and chat webhooks (issue 16). The same tables as
-- PostgreSQL's migration 00010 (see there); times are the store's
-- fixed-width UTC text, so text order is time order.
CREATE TABLE notification_settings (
    org_id        TEXT        NOT NULL,
    user_id       TEXT        NOT NULL,
    channel       TEXT        NOT NULL CHECK (channel IN ('none', 'email', 'slack', 'teams', 'webhook')),
    address       TEXT        NOT NULL,
    secret        TEXT        NOT NULL,
    on_questions  BOOLEAN     NOT NULL,
    on_answers    BOOLEAN     NOT NULL,
    delay_seconds INTEGER     NOT NULL,
    quiet_start   INTEGER     NOT NULL,
    quiet_end     INTEGER     NOT NULL,
    time_zone     TEXT        NOT NULL,
    paused_at     TIMESTAMP,
    pause_reason  TEXT        NOT NULL,
    failures      INTEGER     NOT NULL,
    updated_at    TIMESTAMP   NOT NULL,
    PRIMARY KEY (org_id, user_id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

CREATE TABLE org_notification_settings (
    org_id     TEXT        NOT NULL PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    excerpts   BOOLEAN     NOT NULL,
    updated_at TIMESTAMP   NOT NULL
);

CREATE TABLE notification_outbox (
    id              INTEGER     PRIMARY KEY,
    org_id          TEXT        NOT NULL,
    user_id         TEXT        NOT NULL,
    message_id      BIGINT      NOT NULL,
    kind            TEXT        NOT NULL CHECK (kind IN ('question', 'answer')),
    created_at      TIMESTAMP   NOT NULL,
    due_at          TIMESTAMP   NOT NULL,
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP   NOT NULL,
    locked_until    TIMESTAMP,
    delivered_at    TIMESTAMP,
    outcome         TEXT        NOT NULL DEFAULT '',
    last_error      TEXT        NOT NULL DEFAULT ''
);
CREATE INDEX notification_outbox_due ON notification_outbox (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX notification_outbox_failed ON notification_outbox (org_id, id) WHERE outcome = 'failed';
CREATE INDEX notification_outbox_message ON notification_outbox (org_id, message_id);
-- Pruning finished notifications after a while (the workers, hourly).
CREATE INDEX notification_outbox_finished ON notification_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- A delayed question comes due delay_seconds after it was asked, written in
-- the store's time format (strftime's %f has milliseconds; the zeros keep
-- the width).
-- +goose StatementBegin
CREATE TRIGGER notification_outbox_asked AFTER INSERT ON messages
BEGIN
    INSERT INTO notification_outbox (org_id, user_id, message_id, kind, created_at, due_at, next_attempt_at)
    SELECT new.org_id, s.user_id, new.id, 'question', new.asked_at,
           CASE WHEN s.delay_seconds = 0 THEN new.asked_at
                ELSE strftime('%Y-%m-%dT%H:%M:%f000Z', new.asked_at, '+' || s.delay_seconds || ' seconds') END,
           CASE WHEN s.delay_seconds = 0 THEN new.asked_at
                ELSE strftime('%Y-%m-%dT%H:%M:%f000Z', new.asked_at, '+' || s.delay_seconds || ' seconds') END
    FROM notification_settings s
    WHERE s.org_id = new.org_id AND s.user_id = new.to_user_id
      AND s.channel <> 'none' AND s.on_questions AND s.paused_at IS NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER notification_outbox_answered AFTER UPDATE OF answered_seq ON messages
WHEN old.answered_seq IS NULL AND new.answered_seq IS NOT NULL
BEGIN
    INSERT INTO notification_outbox (org_id, user_id, message_id, kind, created_at, due_at, next_attempt_at)
    SELECT new.org_id, s.user_id, new.id, 'answer', new.answered_at, new.answered_at, new.answered_at
    FROM notification_settings s
    WHERE s.org_id = new.org_id AND s.user_id = new.from_user_id
      AND s.channel <> 'none' AND s.on_answers AND s.paused_at IS NULL;
END;
-- +goose StatementEnd

-- No foreign keys on the outbox (see PostgreSQL's migration): this
-- trigger deletes a message's notifications with it.
-- +goose StatementBegin
CREATE TRIGGER notification_outbox_deleted AFTER DELETE ON messages
BEGIN
    DELETE FROM notification_outbox WHERE org_id = old.org_id AND message_id = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER notification_outbox_deleted;
DROP TRIGGER notification_outbox_answered;
DROP TRIGGER notification_outbox_asked;
DROP TABLE notification_outbox;
DROP TABLE org_notification_settings;
DROP TABLE notification_settings;
