-- Queries whose text differs by dialect; sqlc compiles this folder for
-- SQLite only, beside the shared sql/queries.

-- name: LockUser :one
-- SQLite has no row locks and needs none: every write transaction takes the
-- database's write lock when it begins (_txlock=immediate), so this read
-- cannot interleave with another writer.
SELECT * FROM users WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);
