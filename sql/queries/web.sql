-- name: ListAsked :many
-- The questions a person asked, newest first, answered or not, with whom
-- they asked (the web page "Asked"). before_id pages backwards.
SELECT sqlc.embed(messages), u.name AS recipient_name
FROM messages
JOIN users u ON u.org_id = messages.org_id AND u.id = messages.to_user_id
WHERE messages.org_id = sqlc.arg(org_id) AND messages.from_user_id = sqlc.arg(from_user_id)
  AND messages.id < sqlc.arg(before_id)
ORDER BY messages.id DESC
LIMIT sqlc.arg(max_rows);

-- name: ExtendToken :execrows
-- Slides a live token's expiry forward (web sessions' idle expiry); never
-- shortens it, never revives a revoked one.
UPDATE auth_tokens SET expires_at = sqlc.arg(expires_at)
WHERE token_hash = sqlc.arg(token_hash) AND revoked_at IS NULL AND expires_at < sqlc.arg(expires_at);
