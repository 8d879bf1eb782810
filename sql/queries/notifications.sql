-- Notifications (issue 16): people's settings, the organization's policy,
-- and the outbox the delivery workers drain.

-- name: GetNotificationSettings :one
SELECT * FROM notification_settings WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id);

-- name: UpsertNotificationSettings :exec
-- Saves a person's settings whole; saving clears a pause and the count of
-- failed deliveries.
INSERT INTO notification_settings (org_id, user_id, channel, address, secret, on_questions, on_answers,
    delay_seconds, quiet_start, quiet_end, time_zone, paused_at, pause_reason, failures, updated_at)
VALUES (sqlc.arg(org_id), sqlc.arg(user_id), sqlc.arg(channel), sqlc.arg(address), sqlc.arg(secret),
    sqlc.arg(on_questions), sqlc.arg(on_answers), sqlc.arg(delay_seconds), sqlc.arg(quiet_start),
    sqlc.arg(quiet_end), sqlc.arg(time_zone), NULL, '', 0, sqlc.arg(updated_at))
ON CONFLICT (org_id, user_id) DO UPDATE SET
    channel = excluded.channel, address = excluded.address, secret = excluded.secret,
    on_questions = excluded.on_questions, on_answers = excluded.on_answers,
    delay_seconds = excluded.delay_seconds, quiet_start = excluded.quiet_start,
    quiet_end = excluded.quiet_end, time_zone = excluded.time_zone,
    paused_at = NULL, pause_reason = '', failures = 0, updated_at = excluded.updated_at;

-- name: GetOrgNotificationSettings :one
SELECT * FROM org_notification_settings WHERE org_id = sqlc.arg(org_id);

-- name: UpsertOrgNotificationSettings :exec
INSERT INTO org_notification_settings (org_id, excerpts, updated_at)
VALUES (sqlc.arg(org_id), sqlc.arg(excerpts), sqlc.arg(updated_at))
ON CONFLICT (org_id) DO UPDATE SET excerpts = excluded.excerpts, updated_at = excluded.updated_at;

-- name: ListFailedNotifications :many
-- An organization's failed deliveries, newest first, for its admins;
-- before_id pages backwards.
SELECT o.id, o.user_id, u.name AS user_name, o.message_id, m.thread_id, o.kind, o.created_at,
       o.attempts, o.delivered_at, o.last_error, s.channel
FROM notification_outbox o
JOIN users u ON u.org_id = o.org_id AND u.id = o.user_id
JOIN messages m ON m.org_id = o.org_id AND m.id = o.message_id
JOIN notification_settings s ON s.org_id = o.org_id AND s.user_id = o.user_id
WHERE o.org_id = sqlc.arg(org_id) AND o.outcome = 'failed' AND o.id < sqlc.arg(before_id)
ORDER BY o.id DESC
LIMIT sqlc.arg(max_rows);

-- name: FinishNotification :execrows
-- Marks a notification done, once: a second worker's mark matches nothing.
UPDATE notification_outbox
SET delivered_at = sqlc.arg(delivered_at), outcome = sqlc.arg(outcome), last_error = sqlc.arg(last_error),
    locked_until = NULL
WHERE id = sqlc.arg(id) AND delivered_at IS NULL;

-- name: RetryNotification :execrows
-- Gives a failed attempt back to the queue, due again at next_attempt_at.
UPDATE notification_outbox
SET next_attempt_at = sqlc.arg(next_attempt_at), locked_until = NULL, last_error = sqlc.arg(last_error)
WHERE id = sqlc.arg(id) AND delivered_at IS NULL;

-- name: PostponeNotification :execrows
-- Moves a notification past quiet hours; the claim does not count as an attempt.
UPDATE notification_outbox
SET next_attempt_at = sqlc.arg(next_attempt_at), locked_until = NULL, attempts = attempts - 1
WHERE id = sqlc.arg(id) AND delivered_at IS NULL;

-- name: BumpNotificationFailures :one
-- Counts one more failed delivery to a person's endpoint.
UPDATE notification_settings SET failures = failures + 1
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id)
RETURNING failures;

-- name: ClearNotificationFailures :exec
UPDATE notification_settings SET failures = 0
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id) AND failures <> 0;

-- name: PauseNotifications :execrows
-- Pauses an endpoint that keeps failing, until its owner saves the settings.
UPDATE notification_settings SET paused_at = sqlc.arg(paused_at), pause_reason = sqlc.arg(pause_reason)
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id) AND paused_at IS NULL;

-- name: NextNotificationDue :many
-- When the next undelivered notification comes due (none: no rows).
SELECT next_attempt_at FROM notification_outbox
WHERE delivered_at IS NULL
ORDER BY next_attempt_at
LIMIT 1;

-- name: CountPendingNotifications :one
SELECT count(*) FROM notification_outbox WHERE delivered_at IS NULL;

-- name: PruneNotifications :execrows
-- Deletes up to max_rows notifications finished before the cutoff.
DELETE FROM notification_outbox
WHERE id IN (
    SELECT f.id FROM notification_outbox f
    WHERE f.delivered_at < sqlc.arg(cutoff)
    LIMIT sqlc.arg(max_rows));
