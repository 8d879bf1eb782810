-- +goose Up
-- Notifications by email and chat webhooks (issue 16).
--
-- notification_settings: how a person wants to be told, one row per person
-- (no row: no notifications). channel 'none' keeps the row (and its other
-- choices) without sending. address is the email address or webhook URL;
-- secret signs the generic webhook's bodies (shown only to its owner).
-- delay_seconds: a question is announced only if still unanswered after
-- it. quiet_start and quiet_end are minutes after midnight in time_zone;
-- equal means no quiet hours. An endpoint that keeps failing is paused
-- (paused_at, pause_reason) until its owner saves the settings again;
-- failures counts consecutive failed deliveries.
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
    paused_at     TIMESTAMPTZ,
    pause_reason  TEXT        NOT NULL,
    failures      INTEGER     NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (org_id, user_id),
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

-- An organization's notification policy: excerpts says whether question
-- and answer text may leave ctalk in a notification (off by default).
CREATE TABLE org_notification_settings (
    org_id     TEXT        NOT NULL PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    excerpts   BOOLEAN     NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- The outbox: one row per notification to deliver, written by the triggers
-- below in the transaction that asks or answers, so a committed question
-- always has its notification and a rolled-back one never does. Workers
-- claim due rows (next_attempt_at <= now) with a lease (locked_until; the
-- claim also moves next_attempt_at to the lease's end, so a crashed
-- worker's row comes due again), and finish a row once (delivered_at set
-- only while NULL) with its outcome: sent, suppressed (the question was
-- answered within the delay), skipped (the setting changed to none or was
-- paused) or failed (after the last attempt; last_error says why, never
-- with message text or secrets).
--
-- The outbox has no foreign keys: a row is written only by the triggers,
-- for the message being written and one of its two people, and a key's
-- check (a lookup and a row lock of the message) would cost every
-- ask_person a third more on PostgreSQL. A trigger deletes a message's
-- notifications with it (retention, deleting an organization); people are
-- deleted only with their organization, after its messages.
CREATE TABLE notification_outbox (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id          TEXT        NOT NULL,
    user_id         TEXT        NOT NULL,
    message_id      BIGINT      NOT NULL,
    kind            TEXT        NOT NULL CHECK (kind IN ('question', 'answer')),
    created_at      TIMESTAMPTZ NOT NULL,
    due_at          TIMESTAMPTZ NOT NULL,
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    locked_until    TIMESTAMPTZ,
    delivered_at    TIMESTAMPTZ,
    outcome         TEXT        NOT NULL DEFAULT '',
    last_error      TEXT        NOT NULL DEFAULT ''
);
-- The workers' queue: undelivered rows by when they are due.
CREATE INDEX notification_outbox_due ON notification_outbox (next_attempt_at) WHERE delivered_at IS NULL;
-- The admins' list of failed deliveries.
CREATE INDEX notification_outbox_failed ON notification_outbox (org_id, id) WHERE outcome = 'failed';
-- Deleting a message deletes its notifications (the trigger below).
CREATE INDEX notification_outbox_message ON notification_outbox (org_id, message_id);
-- Pruning finished notifications after a while (the workers, hourly).
CREATE INDEX notification_outbox_finished ON notification_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION notification_outbox_asked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notification_outbox (org_id, user_id, message_id, kind, created_at, due_at, next_attempt_at)
    SELECT new.org_id, s.user_id, new.id, 'question', new.asked_at,
           new.asked_at + make_interval(secs => s.delay_seconds), new.asked_at + make_interval(secs => s.delay_seconds)
    FROM notification_settings s
    WHERE s.org_id = new.org_id AND s.user_id = new.to_user_id
      AND s.channel <> 'none' AND s.on_questions AND s.paused_at IS NULL;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER notification_outbox_asked AFTER INSERT ON messages
FOR EACH ROW EXECUTE FUNCTION notification_outbox_asked();

-- +goose StatementBegin
CREATE FUNCTION notification_outbox_answered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notification_outbox (org_id, user_id, message_id, kind, created_at, due_at, next_attempt_at)
    SELECT new.org_id, s.user_id, new.id, 'answer', new.answered_at, new.answered_at, new.answered_at
    FROM notification_settings s
    WHERE s.org_id = new.org_id AND s.user_id = new.from_user_id
      AND s.channel <> 'none' AND s.on_answers AND s.paused_at IS NULL;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER notification_outbox_answered AFTER UPDATE OF answered_seq ON messages
FOR EACH ROW WHEN (old.answered_seq IS NULL AND new.answered_seq IS NOT NULL)
EXECUTE FUNCTION notification_outbox_answered();

-- +goose StatementBegin
CREATE FUNCTION notification_outbox_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM notification_outbox WHERE org_id = old.org_id AND message_id = old.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER notification_outbox_deleted AFTER DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION notification_outbox_deleted();

-- +goose Down
DROP TRIGGER notification_outbox_deleted ON messages;
DROP FUNCTION notification_outbox_deleted();
DROP TRIGGER notification_outbox_answered ON messages;
DROP FUNCTION notification_outbox_answered();
DROP TRIGGER notification_outbox_asked ON messages;
DROP FUNCTION notification_outbox_asked();
DROP TABLE notification_outbox;
DROP TABLE org_notification_settings;
DROP TABLE notification_settings;
