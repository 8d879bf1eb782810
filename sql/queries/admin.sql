-- The web app's admin console (issue 13): the admin role, an organization's
-- tokens and its audit log.

-- name: SetUserAdmin :execrows
-- Grants the admin role (admin_since set) or takes it back (NULL).
UPDATE users SET admin_since = sqlc.narg(admin_since)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: UpdateAdminPassword :execrows
UPDATE organizations SET admin_password_hash = sqlc.arg(admin_password_hash)
WHERE id = sqlc.arg(id);

-- name: AddAudit :exec
-- Records one event in an organization's audit log; nothing when the
-- organization does not exist (a lock on a made-up organization's name).
INSERT INTO audit_log (org_id, at, actor_user_id, action, target_user_id, address, detail)
SELECT o.id, sqlc.arg(at), sqlc.arg(actor_user_id), sqlc.arg(action), sqlc.arg(target_user_id),
       sqlc.arg(address), sqlc.arg(detail)
FROM organizations o WHERE o.id = sqlc.arg(org_id);

-- name: ListAudit :many
-- An organization's audit log, newest first; before_id pages backwards.
SELECT * FROM audit_log
WHERE org_id = sqlc.arg(org_id) AND id < sqlc.arg(before_id)
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);

-- name: ListOrgTokens :many
-- An organization's live tokens that belong to no grant (login tokens and
-- web sessions), newest first, for its admins.
SELECT * FROM auth_tokens
WHERE org_id = sqlc.arg(org_id)
  AND revoked_at IS NULL AND expires_at > sqlc.arg(now) AND grant_id IS NULL
ORDER BY created_at DESC, token_hash
LIMIT sqlc.arg(max_rows);

-- name: ListOrgGrants :many
-- An organization's live OAuth grants, newest first, for its admins.
SELECT * FROM oauth_grants
WHERE org_id = sqlc.arg(org_id) AND revoked_at IS NULL
ORDER BY created_at DESC, id DESC;

-- name: ListOrgGrantRefreshes :many
-- The unspent, unexpired refresh tokens of an organization's live grants.
SELECT r.grant_id, r.expires_at
FROM oauth_refresh_tokens r
JOIN oauth_grants g ON g.id = r.grant_id
WHERE g.org_id = sqlc.arg(org_id) AND g.revoked_at IS NULL
  AND r.used_at IS NULL AND r.expires_at > sqlc.arg(now);
