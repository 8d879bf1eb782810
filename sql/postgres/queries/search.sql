-- name: SearchWalk :many
-- A walk through the newest max_walk answers a user may see below
-- answered_seq below_seq (shared with the organization, or asked by or of
-- them; "" for shared ones only), through the three lists of migration
-- 00012 merged in answer order: where it starts and ends (hi and lo, the
-- newest and the oldest answer it reached; walked, how many it reached,
-- fewer than max_walk at the end of the history), and the newest max_rows of them matching a tsquery
-- (to_tsquery syntax, English stemming), newest first; one row with no
-- message (message_id 0) when none does. The bounds read only the lists (index-only);
-- the walk tests each answer in its index scan. coalesce(body, body) keeps
-- the GIN index out: the caller chose to walk (SearchMatches is the GIN
-- way), and the planner, not knowing lo, might not.
SELECT b.lo, b.hi, b.walked, coalesce(x.message_id, 0)::bigint AS message_id, coalesce(x.answered_seq, 0)::bigint AS answered_seq
FROM (
    SELECT coalesce(min(v.answered_seq), 0)::bigint AS lo, coalesce(max(v.answered_seq), 0)::bigint AS hi, count(*)::bigint AS walked
    FROM (
        (SELECT s.answered_seq FROM messages_search s
         WHERE s.org_id = sqlc.arg(org_id) AND s.shared AND s.answered_seq < sqlc.arg(below_seq)
         ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_walk))
        UNION ALL
        (SELECT s.answered_seq FROM messages_search s
         WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.from_user_id = sqlc.arg(user_id)::text AND s.answered_seq < sqlc.arg(below_seq)
         ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_walk))
        UNION ALL
        (SELECT s.answered_seq FROM messages_search s
         WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.to_user_id = sqlc.arg(user_id)::text AND s.answered_seq < sqlc.arg(below_seq)
         ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_walk))
        ORDER BY answered_seq DESC
        LIMIT sqlc.arg(max_walk)
    ) v
) b
LEFT JOIN LATERAL (
    (SELECT s.message_id, s.answered_seq FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND s.shared AND s.answered_seq >= b.lo AND s.answered_seq < sqlc.arg(below_seq)
       AND coalesce(s.body, s.body) @@ (SELECT to_tsquery('english'::regconfig, sqlc.arg(query)::text))
     ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_rows))
    UNION ALL
    (SELECT s.message_id, s.answered_seq FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.from_user_id = sqlc.arg(user_id)::text
       AND s.answered_seq >= b.lo AND s.answered_seq < sqlc.arg(below_seq)
       AND coalesce(s.body, s.body) @@ (SELECT to_tsquery('english'::regconfig, sqlc.arg(query)::text))
     ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_rows))
    UNION ALL
    (SELECT s.message_id, s.answered_seq FROM messages_search s
     WHERE s.org_id = sqlc.arg(org_id) AND NOT s.shared AND s.to_user_id = sqlc.arg(user_id)::text
       AND s.answered_seq >= b.lo AND s.answered_seq < sqlc.arg(below_seq)
       AND coalesce(s.body, s.body) @@ (SELECT to_tsquery('english'::regconfig, sqlc.arg(query)::text))
     ORDER BY s.answered_seq DESC LIMIT sqlc.arg(max_rows))
    ORDER BY answered_seq DESC
    LIMIT sqlc.arg(max_rows)
) x ON true
ORDER BY x.answered_seq DESC;

-- name: SearchMatches :many
-- The newest max_rows answers a user may see below answered_seq below_seq
-- matching terms (search_query: every one of them or any), through the
-- GIN index messages_search_readers: the words' lists under the user's
-- two reader groups (migration 00012), whose matches are then sorted
-- (answered_seq + 0 keeps the planner from walking newest answers instead;
-- SearchWalk does that, and the caller picks which).
SELECT s.message_id, s.answered_seq
FROM messages_search s
WHERE s.org_id = sqlc.arg(org_id)
  AND search_readers(s.org_id, s.from_user_id, s.to_user_id, s.shared, s.body) @@ (SELECT search_query(sqlc.arg(terms)::text, sqlc.arg(match_any)::boolean, sqlc.arg(org_id) || '::')
                           || search_query(sqlc.arg(terms)::text, sqlc.arg(match_any)::boolean, sqlc.arg(org_id) || ':' || sqlc.arg(user_id)::text || ':'))
  AND s.answered_seq + 0 < sqlc.arg(below_seq)::bigint
  AND (s.shared OR s.from_user_id = sqlc.arg(user_id)::text OR s.to_user_id = sqlc.arg(user_id)::text)
ORDER BY s.answered_seq + 0 DESC
LIMIT sqlc.arg(max_rows);

-- name: SearchFetch :many
-- The answered questions of search results (message ids), newest answer
-- first, visible to user_id (as SearchWalk; the ids come from a search
-- with the same filter, which stays so that nothing else could show).
-- The ids drive the join, and users are joined on messages' columns:
-- joined on the organization as a constant, the planner joined every pair
-- of people first and probed messages for each pair (6 ms for 6 ids).
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM unnest(sqlc.arg(ids)::bigint[]) AS k(id)
JOIN messages ON messages.org_id = sqlc.arg(org_id) AND messages.id = k.id
JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
WHERE messages.shared_at IS NOT NULL OR messages.from_user_id = sqlc.arg(user_id)::text OR messages.to_user_id = sqlc.arg(user_id)::text
ORDER BY messages.answered_seq DESC;
