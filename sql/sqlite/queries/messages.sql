-- name: AskCheck :one
-- ask_person's reads in one statement, run inside its write transaction:
-- the token with its user's state, and the recipient in the token's
-- organization if there is one. A token issued for another resource (NULL:
-- the login tool's) is no row, as if it did not exist.
SELECT t.org_id, t.user_id, t.expires_at, t.revoked_at, t.last_used_at, u.deactivated_at AS caller_deactivated_at,
       r.name AS to_name, r.deactivated_at AS to_deactivated_at
FROM auth_tokens t
JOIN users u ON u.org_id = t.org_id AND u.id = t.user_id
LEFT JOIN users r ON r.org_id = t.org_id AND r.id = sqlc.arg(to_user_id)
WHERE t.token_hash = sqlc.arg(token_hash) AND t.resource IS sqlc.narg(resource);
