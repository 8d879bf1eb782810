-- Queries whose text differs by dialect; sqlc compiles this folder for
-- PostgreSQL only, beside the shared sql/queries.

-- name: LockUser :one
-- Reads a user and holds their row lock until commit, so a password check
-- and the act on it cannot interleave with a reset, change or deactivation.
SELECT * FROM users WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id) FOR UPDATE;
