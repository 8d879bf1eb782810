-- name: UpdateUserPassword :execrows
UPDATE users SET password_hash = sqlc.arg(password_hash)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: SetUserDeactivated :execrows
UPDATE users SET deactivated_at = sqlc.narg(deactivated_at)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: GetThrottle :many
-- The throttle rows of an account key and a client address key.
SELECT * FROM login_throttle WHERE key IN (sqlc.arg(account_key), sqlc.arg(addr_key));

-- name: RecordFailure :exec
INSERT INTO login_throttle (key, failures, locked_until, updated_at)
VALUES (sqlc.arg(key), sqlc.arg(failures), sqlc.arg(locked_until), sqlc.arg(updated_at))
ON CONFLICT (key) DO UPDATE
SET failures = excluded.failures, locked_until = excluded.locked_until, updated_at = excluded.updated_at;

-- name: ClearThrottle :exec
DELETE FROM login_throttle WHERE key = sqlc.arg(key);

-- name: PruneThrottle :execrows
DELETE FROM login_throttle WHERE updated_at < sqlc.arg(before);
