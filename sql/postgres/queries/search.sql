-- name: SearchMessages :many
-- Answered questions of an organization matching a tsquery (to_tsquery
-- syntax, English stemming), visible to user_id (shared with the
-- organization, or asked by or of them; "" for shared ones only), newest
-- answer first. The expression is messages_search's, so the index serves
-- it. The visibility filter runs before the limit, so nothing the user may
-- not see affects what they get.
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM messages
JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
WHERE messages.org_id = sqlc.arg(org_id) AND messages.answered_seq IS NOT NULL
  AND to_tsvector('english'::regconfig, messages.question || ' ' || messages.answer_text) @@ to_tsquery('english'::regconfig, sqlc.arg(query)::text)
  AND (messages.shared_at IS NOT NULL OR messages.from_user_id = sqlc.arg(user_id)::text OR messages.to_user_id = sqlc.arg(user_id)::text)
ORDER BY messages.answered_seq DESC
LIMIT sqlc.arg(max_rows);
