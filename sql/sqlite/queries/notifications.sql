-- name: ClaimNotifications :many
-- Leases up to max_rows due notifications to one worker (SQLite has one
-- writer at a time, so no row is claimed twice); the lease moves
-- next_attempt_at to its end, so a worker that dies leaves them due again.
UPDATE notification_outbox
SET attempts = attempts + 1, locked_until = sqlc.arg(lease_until), next_attempt_at = sqlc.arg(lease_until)
WHERE id IN (
    SELECT d.id FROM notification_outbox d
    WHERE d.delivered_at IS NULL AND d.next_attempt_at <= sqlc.arg(now)
    ORDER BY d.next_attempt_at
    LIMIT sqlc.arg(max_rows))
RETURNING id;

-- name: GetNotificationDeliveries :many
-- What delivering claimed notifications needs: the row, the question,
-- both people's names, the recipient's settings and the organization's
-- excerpt policy.
SELECT o.id, o.org_id, o.user_id, o.message_id, o.kind, o.created_at, o.attempts,
       m.thread_id, m.from_user_id, m.to_user_id, m.question, m.answer_text, m.answered_at,
       f.name AS from_name, t.name AS to_name,
       s.channel, s.address, s.secret, s.quiet_start, s.quiet_end, s.time_zone, s.paused_at, s.on_questions, s.on_answers,
       EXISTS (SELECT 1 FROM org_notification_settings x WHERE x.org_id = o.org_id AND x.excerpts) AS excerpts
FROM notification_outbox o
JOIN messages m ON m.org_id = o.org_id AND m.id = o.message_id
JOIN users f ON f.org_id = m.org_id AND f.id = m.from_user_id
JOIN users t ON t.org_id = m.org_id AND t.id = m.to_user_id
JOIN notification_settings s ON s.org_id = o.org_id AND s.user_id = o.user_id
WHERE o.id IN (sqlc.slice(ids))
ORDER BY o.id;
