-- The "Connected clients and tokens" page: a person's live tokens and the
-- expiry of their connected clients' refresh tokens.

-- name: ListUserTokens :many
-- A person's live tokens that belong to no grant (login tokens and web
-- sessions), newest first. OAuth access tokens are shown as their grant.
SELECT * FROM auth_tokens
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id)
  AND revoked_at IS NULL AND expires_at > sqlc.arg(now) AND grant_id IS NULL
ORDER BY created_at DESC, token_hash
LIMIT sqlc.arg(max_rows);

-- name: ListUserGrantRefreshes :many
-- The unspent, unexpired refresh tokens of a person's live grants: a
-- connected client lasts as long as its newest one.
SELECT r.grant_id, r.expires_at
FROM oauth_refresh_tokens r
JOIN oauth_grants g ON g.id = r.grant_id
WHERE g.org_id = sqlc.arg(org_id) AND g.user_id = sqlc.arg(user_id) AND g.revoked_at IS NULL
  AND r.used_at IS NULL AND r.expires_at > sqlc.arg(now);
