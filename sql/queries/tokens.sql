-- name: CreateToken :exec
INSERT INTO auth_tokens (token_hash, org_id, user_id, created_at, expires_at, grant_id, resource, scope)
VALUES (sqlc.arg(token_hash), sqlc.arg(org_id), sqlc.arg(user_id), sqlc.arg(created_at), sqlc.arg(expires_at),
        sqlc.narg(grant_id), sqlc.narg(resource), sqlc.narg(scope));

-- name: GetToken :one
SELECT * FROM auth_tokens WHERE token_hash = sqlc.arg(token_hash);

-- name: RevokeToken :execrows
UPDATE auth_tokens SET revoked_at = sqlc.arg(revoked_at)
WHERE token_hash = sqlc.arg(token_hash) AND revoked_at IS NULL;

-- name: RevokeUserTokens :execrows
UPDATE auth_tokens SET revoked_at = sqlc.arg(revoked_at)
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id) AND revoked_at IS NULL
  AND token_hash <> sqlc.arg(keep_token_hash);

-- name: GetTokenUser :one
-- A token with its user, in one round trip: every authenticated call runs it.
SELECT sqlc.embed(auth_tokens), sqlc.embed(users)
FROM auth_tokens
JOIN users ON users.org_id = auth_tokens.org_id AND users.id = auth_tokens.user_id
WHERE auth_tokens.token_hash = sqlc.arg(token_hash);

-- name: PruneTokens :execrows
-- Deletes tokens that expired before the cutoff (revoked ones included):
-- a missing token is refused exactly like an expired one.
DELETE FROM auth_tokens WHERE expires_at < sqlc.arg(before);

-- name: TouchToken :execrows
-- Records that a token was used at used_at, unless that was already
-- recorded since stale_before (a write every few minutes at most).
UPDATE auth_tokens SET last_used_at = sqlc.arg(used_at)
WHERE token_hash = sqlc.arg(token_hash) AND (last_used_at IS NULL OR last_used_at < sqlc.arg(stale_before));
