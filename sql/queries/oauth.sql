-- OAuth 2.1 sign-in: registered clients, grants (one connected client of one
-- person) and the codes and refresh tokens issued under them. Access tokens
-- are auth_tokens rows with a grant_id (sql/queries/tokens.sql).

-- name: CreateOAuthClient :exec
INSERT INTO oauth_clients (id, name, redirect_uris, created_at)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(redirect_uris), sqlc.arg(created_at));

-- name: GetOAuthClient :one
SELECT * FROM oauth_clients WHERE id = sqlc.arg(id);

-- name: CreateOAuthGrant :exec
INSERT INTO oauth_grants (id, org_id, user_id, client_id, client_name, resource, scope, created_at, last_used_at, revoked_at)
VALUES (sqlc.arg(id), sqlc.arg(org_id), sqlc.arg(user_id), sqlc.arg(client_id), sqlc.arg(client_name),
        sqlc.arg(resource), sqlc.arg(scope), sqlc.arg(created_at), sqlc.narg(last_used_at), sqlc.narg(revoked_at));

-- name: GetOAuthGrant :one
SELECT * FROM oauth_grants WHERE id = sqlc.arg(id);

-- name: ListOAuthGrants :many
-- A person's connected clients, newest first.
SELECT * FROM oauth_grants
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id) AND revoked_at IS NULL
ORDER BY created_at DESC, id DESC;

-- name: TouchOAuthGrant :execrows
-- Only a live grant is touched: the update waits for (and then sees) a
-- revocation running at the same time.
UPDATE oauth_grants SET last_used_at = sqlc.arg(last_used_at)
WHERE id = sqlc.arg(id) AND revoked_at IS NULL;

-- name: RevokeOAuthGrant :execrows
UPDATE oauth_grants SET revoked_at = sqlc.arg(revoked_at)
WHERE org_id = sqlc.arg(org_id) AND user_id = sqlc.arg(user_id) AND id = sqlc.arg(id) AND revoked_at IS NULL;

-- name: RevokeGrantTokens :execrows
UPDATE auth_tokens SET revoked_at = sqlc.arg(revoked_at)
WHERE grant_id = sqlc.arg(grant_id) AND revoked_at IS NULL;

-- name: SpendGrantRefreshTokens :execrows
UPDATE oauth_refresh_tokens SET used_at = sqlc.arg(used_at)
WHERE grant_id = sqlc.arg(grant_id) AND used_at IS NULL;

-- name: RevokeUserGrants :execrows
-- Every live grant of a person except the one of keep_token_hash (an access
-- token), if it has one.
UPDATE oauth_grants SET revoked_at = sqlc.arg(revoked_at)
WHERE oauth_grants.org_id = sqlc.arg(org_id) AND oauth_grants.user_id = sqlc.arg(user_id)
  AND oauth_grants.revoked_at IS NULL
  AND oauth_grants.id NOT IN (SELECT t.grant_id FROM auth_tokens t
                 WHERE t.token_hash = sqlc.arg(keep_token_hash) AND t.grant_id IS NOT NULL);

-- name: SpendUserRevokedRefreshTokens :execrows
-- Marks spent the refresh tokens of a person's revoked grants.
UPDATE oauth_refresh_tokens SET used_at = sqlc.arg(used_at)
WHERE used_at IS NULL
  AND grant_id IN (SELECT g.id FROM oauth_grants g
                   WHERE g.org_id = sqlc.arg(org_id) AND g.user_id = sqlc.arg(user_id) AND g.revoked_at IS NOT NULL);

-- name: CreateOAuthCode :exec
INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, created_at, expires_at, used_at)
VALUES (sqlc.arg(code_hash), sqlc.arg(grant_id), sqlc.arg(redirect_uri), sqlc.arg(code_challenge),
        sqlc.arg(created_at), sqlc.arg(expires_at), sqlc.narg(used_at));

-- name: GetOAuthCode :one
SELECT * FROM oauth_codes WHERE code_hash = sqlc.arg(code_hash);

-- name: UseOAuthCode :execrows
-- Only an unused code can be used: exactly one of racing redemptions wins.
UPDATE oauth_codes SET used_at = sqlc.arg(used_at)
WHERE code_hash = sqlc.arg(code_hash) AND used_at IS NULL;

-- name: CreateOAuthRefresh :exec
INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at)
VALUES (sqlc.arg(token_hash), sqlc.arg(grant_id), sqlc.arg(created_at), sqlc.arg(expires_at), sqlc.narg(used_at));

-- name: GetOAuthRefresh :one
SELECT * FROM oauth_refresh_tokens WHERE token_hash = sqlc.arg(token_hash);

-- name: UseOAuthRefresh :execrows
-- Only an unused refresh token can be redeemed: exactly one of racing
-- redemptions wins.
UPDATE oauth_refresh_tokens SET used_at = sqlc.arg(used_at)
WHERE token_hash = sqlc.arg(token_hash) AND used_at IS NULL;

-- name: PruneOAuthCodes :execrows
DELETE FROM oauth_codes WHERE expires_at < sqlc.arg(before);

-- name: PruneOAuthRefreshTokens :execrows
DELETE FROM oauth_refresh_tokens WHERE expires_at < sqlc.arg(before);

-- name: PruneRevokedOAuthCodes :execrows
DELETE FROM oauth_codes
WHERE grant_id IN (SELECT g.id FROM oauth_grants g WHERE g.revoked_at < sqlc.arg(before));

-- name: PruneRevokedOAuthRefreshTokens :execrows
DELETE FROM oauth_refresh_tokens
WHERE grant_id IN (SELECT g.id FROM oauth_grants g WHERE g.revoked_at < sqlc.arg(before));

-- name: PruneRevokedOAuthGrants :execrows
-- After PruneRevokedOAuthCodes and PruneRevokedOAuthRefreshTokens: nothing
-- references these grants any more but access tokens, which keep their
-- (dangling) grant_id until they are deleted themselves.
DELETE FROM oauth_grants WHERE revoked_at < sqlc.arg(before);
