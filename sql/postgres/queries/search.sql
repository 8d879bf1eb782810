-- name: SearchMessages :many
-- Answered questions of an organization matching a tsquery (to_tsquery
-- syntax, English stemming), visible to user_id (shared with the
-- organization, or asked by or of them; "" for shared ones only), newest
-- answer first. The visibility filter runs before the limit, so nothing the
-- user may not see affects what they get.
--
-- messages_search alone picks the page, and messages is read for the page
-- only. What the user may see is three disjoint sets, each searched on its
-- own, newest first: shared answers, and the user's private ones as asker
-- and as the person asked. Each set walks its own newest-first index and
-- stops at the page (a common word) or takes its matches from the GIN index
-- (a rare one), so a search never reads answers the user may not see, and
-- the merge stops at the page.
WITH found AS (
    (SELECT s.org_id, s.message_id, s.answered_seq
     FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND s.shared
       AND s.body @@ to_tsquery('english'::regconfig, sqlc.arg(query)::text)
     ORDER BY s.answered_seq DESC
     LIMIT sqlc.arg(max_rows))
    UNION ALL
    (SELECT s.org_id, s.message_id, s.answered_seq
     FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.from_user_id = sqlc.arg(user_id)::text
       AND s.body @@ to_tsquery('english'::regconfig, sqlc.arg(query)::text)
     ORDER BY s.answered_seq DESC
     LIMIT sqlc.arg(max_rows))
    UNION ALL
    (SELECT s.org_id, s.message_id, s.answered_seq
     FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.to_user_id = sqlc.arg(user_id)::text
       AND s.from_user_id <> sqlc.arg(user_id)::text
       AND s.body @@ to_tsquery('english'::regconfig, sqlc.arg(query)::text)
     ORDER BY s.answered_seq DESC
     LIMIT sqlc.arg(max_rows))
    ORDER BY answered_seq DESC
    LIMIT sqlc.arg(max_rows)
)
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM found
JOIN messages ON messages.org_id = found.org_id AND messages.id = found.message_id
JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
ORDER BY found.answered_seq DESC;
