-- name: CreateOrganization :exec
INSERT INTO organizations (id, name, admin_password_hash, created_at)
VALUES (sqlc.arg(id), sqlc.arg(name), sqlc.arg(admin_password_hash), sqlc.arg(created_at));

-- name: GetOrganization :one
SELECT * FROM organizations WHERE id = sqlc.arg(id);

-- name: AllocateMessage :one
-- Takes the organization's row lock until commit: questions and answers of
-- one organization are numbered in commit order.
UPDATE organizations
SET last_message_id = last_message_id + 1, last_event_seq = last_event_seq + 1
WHERE id = sqlc.arg(id)
RETURNING last_message_id, last_event_seq;

-- name: AllocateEvent :one
UPDATE organizations SET last_event_seq = last_event_seq + 1
WHERE id = sqlc.arg(id)
RETURNING last_event_seq;

-- name: CreateUser :exec
INSERT INTO users (org_id, id, name, password_hash, ownership, notes, profile_notes, created_at, admin_since)
VALUES (sqlc.arg(org_id), sqlc.arg(id), sqlc.arg(name), sqlc.arg(password_hash), sqlc.arg(ownership),
        sqlc.arg(notes), sqlc.arg(profile_notes), sqlc.arg(created_at), sqlc.narg(admin_since));

-- name: GetUser :one
SELECT * FROM users WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: ListUsers :many
SELECT * FROM users WHERE org_id = sqlc.arg(org_id) ORDER BY id;

-- name: UpdateUserNotes :execrows
UPDATE users SET notes = sqlc.arg(notes)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: UpdateUserProfileNotes :execrows
UPDATE users SET profile_notes = sqlc.arg(profile_notes)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);
