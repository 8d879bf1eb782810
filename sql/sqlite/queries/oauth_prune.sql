-- name: PruneUnusedOAuthClients :execrows
-- Registered clients older than before that no grant names (never used to
-- sign in, or every grant of theirs pruned), at most max_rows of them: a
-- sweep's cost stays bounded however many a flood left. (SQLite has one
-- writer at a time: sweeps cannot overlap.)
DELETE FROM oauth_clients
WHERE id IN (SELECT c.id FROM oauth_clients c
             WHERE c.created_at < sqlc.arg(before)
               AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id)
             ORDER BY c.created_at
             LIMIT sqlc.arg(max_rows));
