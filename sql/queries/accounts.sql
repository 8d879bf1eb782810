-- name: UpdateUserPassword :execrows
UPDATE users SET password_hash = sqlc.arg(password_hash)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: SetUserDeactivated :execrows
UPDATE users SET deactivated_at = sqlc.narg(deactivated_at)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: GetThrottle :many
-- The throttle rows of an account key and a client address key.
SELECT * FROM login_throttle WHERE key IN (sqlc.arg(account_key), sqlc.arg(addr_key));

-- name: BumpThrottle :one
-- Counts one attempt against a key, atomically (concurrent attempts queue
-- on the row), and returns the row: failures after this attempt, and the
-- lock as it was before it.
INSERT INTO login_throttle (key, failures, locked_until, updated_at)
VALUES (sqlc.arg(key), 1, sqlc.arg(unlocked), sqlc.arg(updated_at))
ON CONFLICT (key) DO UPDATE
SET failures = login_throttle.failures + 1, updated_at = excluded.updated_at
RETURNING *;

-- name: LockThrottle :exec
UPDATE login_throttle SET locked_until = sqlc.arg(locked_until) WHERE key = sqlc.arg(key);

-- name: ForgiveThrottle :exec
-- Takes back one counted attempt (it turned out to be a success).
UPDATE login_throttle SET failures = failures - 1 WHERE key = sqlc.arg(key) AND failures > 0;

-- name: ClearThrottle :exec
DELETE FROM login_throttle WHERE key = sqlc.arg(key);

-- name: PruneThrottle :execrows
DELETE FROM login_throttle WHERE updated_at < sqlc.arg(before);
