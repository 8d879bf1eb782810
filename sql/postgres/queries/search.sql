-- name: SearchMessages :many
-- Answered questions of an organization matching a tsquery (to_tsquery
-- syntax, English stemming), visible to user_id (shared with the
-- organization, or asked by or of them; "" for shared ones only), newest
-- answer first. messages_search alone picks the page (its GIN index for
-- rare words, its newest-first index for common ones); messages is read for
-- the page only (joined on the organization as a constant, not on found's
-- column, so the planner cannot join users to the page before messages).
-- The visibility filter runs before the limit, so nothing the user may not
-- see affects what they get.
WITH found AS (
    SELECT s.message_id, s.answered_seq
    FROM messages_search s
    WHERE s.org_id = sqlc.arg(org_id) AND s.body @@ to_tsquery('english'::regconfig, sqlc.arg(query)::text)
      AND (s.shared OR s.from_user_id = sqlc.arg(user_id)::text OR s.to_user_id = sqlc.arg(user_id)::text)
    ORDER BY s.answered_seq DESC
    LIMIT sqlc.arg(max_rows)
)
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM found
JOIN messages ON messages.org_id = sqlc.arg(org_id) AND messages.id = found.message_id
JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
ORDER BY found.answered_seq DESC;
