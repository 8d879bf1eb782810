-- name: SearchGroups :many
-- The search groups a user reads (see migration 00011): the organization's
-- shared answers (an empty user_id) and the user's own ("" for shared ones
-- only); a group exists once an answer is in it.
SELECT g.id, g.user_id
FROM search_groups g
WHERE g.org_id = sqlc.arg(org_id) AND g.user_id IN ('', sqlc.arg(user_id));

-- name: SearchGroupKeys :many
-- The rowids (group * 2^40 + 2^40 - 1 - key) of one group's answers
-- matching an FTS5 query, in the range lo..hi, newest first (lowest rowid
-- first). Only the index is read: every answer of the group is one the
-- group's reader may see, of its organization.
SELECT CAST(messages_fts.rowid AS INTEGER) AS rowid
FROM messages_fts
WHERE messages_fts.body MATCH sqlc.arg(query) AND messages_fts.rowid >= CAST(sqlc.arg(lo) AS INTEGER) AND messages_fts.rowid <= CAST(sqlc.arg(hi) AS INTEGER)
ORDER BY messages_fts.rowid
LIMIT sqlc.arg(max_rows);

-- name: SearchFetch :many
-- The answered questions of search keys (a JSON array), newest answer
-- first, visible to user_id (shared with the organization, or asked by or
-- of them; "" for shared ones only): the keys come from the user's groups,
-- so the filter removes nothing, and it stays so that nothing else could
-- show. CROSS JOIN fixes the join order: the keys drive it.
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM messages_search s
CROSS JOIN messages ON messages.org_id = s.org_id AND messages.id = s.message_id
CROSS JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
CROSS JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
WHERE s.id IN (SELECT CAST(j.value AS INTEGER) FROM json_each(CAST(sqlc.arg(keys) AS TEXT)) j) AND s.org_id = sqlc.arg(org_id)
  AND (messages.shared_at IS NOT NULL OR messages.from_user_id = sqlc.arg(user_id) OR messages.to_user_id = sqlc.arg(user_id))
ORDER BY s.id DESC;
