-- name: ClaimNotifications :many
-- Leases up to max_rows due notifications to one worker: rows another
-- worker holds locked are skipped, not waited for; the lease moves
-- next_attempt_at to its end, so a worker that dies leaves them due again.
-- Any due rows, not the oldest: an ORDER BY would sort the whole backlog
-- at every claim, and each claim takes its rows out of the due set, so no
-- row waits more than backlog / max_rows claims.
UPDATE notification_outbox
SET attempts = attempts + 1, locked_until = sqlc.arg(lease_until), next_attempt_at = sqlc.arg(lease_until)
WHERE id IN (
    SELECT d.id FROM notification_outbox d
    WHERE d.delivered_at IS NULL AND d.next_attempt_at <= sqlc.arg(now)
    LIMIT sqlc.arg(max_rows)
    FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: GetNotificationDeliveries :many
-- What delivering claimed notifications needs: the row, the question,
-- both people's names, the recipient's settings and the organization's
-- excerpt policy. (Integers as bigint: the same row as SQLite's.) Each
-- question is read by its key (the lateral subquery, kept apart by OFFSET
-- 0): before its first ANALYZE the planner would reach a fresh outbox's
-- messages through the asker's whole history instead.
SELECT o.id, o.org_id, o.user_id, o.message_id, o.kind, o.created_at, o.attempts::bigint AS attempts,
       m.thread_id, m.from_user_id, m.to_user_id, m.question, m.answer_text, m.answered_at,
       f.name AS from_name, t.name AS to_name,
       s.channel, s.address, s.secret, s.quiet_start::bigint AS quiet_start, s.quiet_end::bigint AS quiet_end, s.time_zone, s.paused_at, s.on_questions, s.on_answers,
       EXISTS (SELECT 1 FROM org_notification_settings e WHERE e.org_id = o.org_id AND e.excerpts) AS excerpts
FROM notification_outbox o
CROSS JOIN LATERAL (
    SELECT x.thread_id, x.from_user_id, x.to_user_id, x.question, x.answer_text, x.answered_at, x.org_id
    FROM messages x WHERE x.org_id = o.org_id AND x.id = o.message_id OFFSET 0) m
JOIN users f ON f.org_id = m.org_id AND f.id = m.from_user_id
JOIN users t ON t.org_id = m.org_id AND t.id = m.to_user_id
JOIN notification_settings s ON s.org_id = o.org_id AND s.user_id = o.user_id
WHERE o.id = ANY(sqlc.arg(ids)::bigint[])
ORDER BY o.id;
