-- name: AskPerson :one
-- ask_person in one statement: authenticate the token (live, not expired,
-- its user active, and issued for the resource the call came through: NULL
-- for /mcp's login-tool tokens, the resource indicator for OAuth's), check the recipient,
-- number the question under the organization's row lock, insert it and
-- queue the wake-up (delivered at commit). Nothing is written unless every
-- check passes; status says which failed first (the rules map it to their
-- messages): 0 asked, 1 bad token, 2 the caller asked themselves, 3 no such
-- recipient, 4 recipient deactivated. thread_id 0 starts a conversation;
-- another continues that one (the rules checked it is the caller's).
WITH caller AS (
    SELECT t.org_id, t.user_id, t.last_used_at
    FROM auth_tokens t
    JOIN users u ON u.org_id = t.org_id AND u.id = t.user_id
    WHERE t.token_hash = sqlc.arg(token_hash) AND t.revoked_at IS NULL
      AND t.expires_at > sqlc.arg(asked_at) AND u.deactivated_at IS NULL
      AND t.resource IS NOT DISTINCT FROM sqlc.narg(resource)::text
), recipient AS (
    SELECT r.name, r.deactivated_at
    FROM caller c
    JOIN users r ON r.org_id = c.org_id AND r.id = sqlc.arg(to_user_id)::text
), numbered AS (
    UPDATE organizations o
    SET last_message_id = o.last_message_id + 1, last_event_seq = o.last_event_seq + 1
    FROM caller c, recipient r
    WHERE o.id = c.org_id AND c.user_id <> sqlc.arg(to_user_id)::text AND r.deactivated_at IS NULL
    RETURNING o.id AS org_id, c.user_id AS from_user_id, o.last_message_id AS id, o.last_event_seq AS seq
), inserted AS (
    INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, thread_id)
    SELECT n.org_id, n.id, n.from_user_id, sqlc.arg(to_user_id)::text, sqlc.arg(question), sqlc.arg(asked_at), n.seq,
           CASE WHEN sqlc.arg(thread_id)::bigint > 0 THEN sqlc.arg(thread_id)::bigint ELSE n.id END
    FROM numbered n
    RETURNING org_id, id, asked_seq
), notified AS (
    SELECT pg_notify('ctalk_events', json_build_object('s', current_schema(), 'o', i.org_id,
        'u', sqlc.arg(to_user_id)::text, 'q', i.asked_seq)::text) AS done
    FROM inserted i
)
SELECT (CASE
        WHEN NOT EXISTS (SELECT 1 FROM caller) THEN 1
        WHEN (SELECT c.user_id FROM caller c) = sqlc.arg(to_user_id)::text THEN 2
        WHEN NOT EXISTS (SELECT 1 FROM recipient) THEN 3
        WHEN (SELECT r.deactivated_at FROM recipient r) IS NOT NULL THEN 4
        ELSE 0 END)::int AS status,
       COALESCE((SELECT c.org_id FROM caller c), '')::text AS org_id,
       COALESCE((SELECT c.user_id FROM caller c), '')::text AS from_user_id,
       COALESCE((SELECT r.name FROM recipient r), '')::text AS to_name,
       COALESCE((SELECT i.id FROM inserted i), 0)::bigint AS id,
       COALESCE((SELECT i.asked_seq FROM inserted i), 0)::bigint AS asked_seq,
       (SELECT count(*) FROM notified)::bigint AS notified,
       -- when the token was last recorded as used; the epoch for never
       COALESCE((SELECT c.last_used_at FROM caller c), 'epoch')::timestamptz AS token_last_used_at;
