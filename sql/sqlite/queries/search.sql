-- name: SearchMessages :many
-- span bounds the search to the newest answered questions (of every
-- organization: keys are global): the rules widen it when the newest hold
-- too few matches, so a common word costs a window, not the whole history.
-- CROSS JOIN fixes the join order: the index's matches, newest first, drive
-- it (SQLite's planner, without statistics, would read every message).
-- Answered questions of an organization matching an FTS5 query, visible to
-- user_id (shared with the organization, or asked by or of them; "" for
-- shared ones only), newest answer first. The visibility filter runs before
-- the limit, so nothing the user may not see affects what they get.
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM messages_fts
CROSS JOIN messages_search s ON s.id = messages_fts.rowid
CROSS JOIN messages ON messages.org_id = s.org_id AND messages.id = s.message_id
CROSS JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
CROSS JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
WHERE messages_fts.body MATCH sqlc.arg(query) AND s.org_id = sqlc.arg(org_id)
  AND messages_fts.rowid > (SELECT MAX(k.id) FROM messages_search k) - sqlc.arg(span)
  AND (messages.shared_at IS NOT NULL OR messages.from_user_id = sqlc.arg(user_id) OR messages.to_user_id = sqlc.arg(user_id))
ORDER BY messages_fts.rowid DESC
LIMIT sqlc.arg(max_rows);
