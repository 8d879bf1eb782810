-- name: ExportMessages :many
-- An organization's questions in id order, for export: after_id pages.
SELECT * FROM messages
WHERE org_id = sqlc.arg(org_id) AND id > sqlc.arg(after_id)
ORDER BY id
LIMIT sqlc.arg(max_rows);

-- name: ExpiredConversations :many
-- Conversations past retention: every question answered, the newest answer
-- before the cutoff. Candidates come from answers before the cutoff
-- (messages_answered), and a conversation with a younger or unanswered
-- question is left alone.
SELECT DISTINCT m.org_id, m.thread_id
FROM messages m
WHERE m.answered_at < sqlc.arg(cutoff) AND m.answered_seq IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM messages y
      WHERE y.org_id = m.org_id AND y.thread_id = m.thread_id
        AND (y.answered_seq IS NULL OR y.answered_at >= sqlc.arg(cutoff)))
LIMIT sqlc.arg(max_rows);

-- name: DeleteConversation :execrows
DELETE FROM messages WHERE org_id = sqlc.arg(org_id) AND thread_id = sqlc.arg(thread_id);

-- name: DeleteOrgOAuthCodes :exec
DELETE FROM oauth_codes WHERE grant_id IN (SELECT g.id FROM oauth_grants g WHERE g.org_id = sqlc.arg(org_id));

-- name: DeleteOrgRefreshTokens :exec
DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT g.id FROM oauth_grants g WHERE g.org_id = sqlc.arg(org_id));

-- name: DeleteOrgTokens :exec
DELETE FROM auth_tokens WHERE org_id = sqlc.arg(org_id);

-- name: DeleteOrgGrants :exec
DELETE FROM oauth_grants WHERE org_id = sqlc.arg(org_id);

-- name: DeleteOrgAudit :exec
DELETE FROM audit_log WHERE org_id = sqlc.arg(org_id);

-- name: DeleteOrgMessages :execrows
DELETE FROM messages WHERE org_id = sqlc.arg(org_id);

-- name: DeleteOrgUsers :execrows
DELETE FROM users WHERE org_id = sqlc.arg(org_id);

-- name: DeleteOrganization :execrows
DELETE FROM organizations WHERE id = sqlc.arg(id);

-- name: DeleteOrgThrottles :exec
-- The sign-in throttles of an organization's people: every key from
-- user_prefix up to (not including) user_prefix_end ("user:<org>/...").
-- (Its admin password's key goes with ClearThrottle.)
DELETE FROM login_throttle WHERE key >= sqlc.arg(user_prefix) AND key < sqlc.arg(user_prefix_end);
