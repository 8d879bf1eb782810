-- name: SearchWalk :many
-- A walk through the newest max_walk answers a user may see below
-- answered_seq below_seq (shared with the organization, or asked by or of
-- them; "" for shared ones only), through the three lists of migration
-- 00012 merged in answer order. Each row says where the walk started and
-- ended (hi and lo, the newest and the oldest answer it reached) and how
-- many answers it reached (walked: fewer than max_walk at the end of the
-- history), beside one of the newest max_rows answers walked that match a
-- tsquery (to_tsquery syntax, English stemming), newest first; one row
-- with no message (message_id 0) when none does. The bounds read only the
-- lists (index-only); the walk tests each answer in its index scan.
-- coalesce(body, body) keeps the GIN index out: the caller chose to walk
-- (SearchMatches is the GIN way), and the planner, not knowing lo, might
-- not.
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
-- GIN index messages_search_buckets: the words' lists under the user's
-- two reader groups (migration 00012), whose matches are then sorted
-- (answered_seq + 0 keeps the planner from walking newest answers instead;
-- SearchWalk does that, and the caller picks which). With lo_bucket 0 or
-- more, only answers of the buckets lo_bucket..hi_bucket of answer order
-- (answered_seq >> 14, migration 00013) are read. Terms that are all stop
-- words make an empty query, which matches nothing (numnode 0: with the
-- buckets it would match them all).
SELECT s.message_id, s.answered_seq
FROM messages_search s
WHERE s.org_id = sqlc.arg(org_id)
  AND search_readers(s.org_id, s.from_user_id, s.to_user_id, s.shared, s.answered_seq, s.body) @@ (
      SELECT CASE WHEN sqlc.arg(lo_bucket)::bigint < 0 OR numnode(w.q) = 0 THEN w.q
                  ELSE w.q && search_buckets(ARRAY[sqlc.arg(org_id) || '::', sqlc.arg(org_id) || ':' || sqlc.arg(user_id)::text || ':'],
                                             sqlc.arg(lo_bucket)::bigint, sqlc.arg(hi_bucket)::bigint) END
      FROM (SELECT search_query(sqlc.arg(terms)::text, sqlc.arg(match_any)::boolean, sqlc.arg(org_id) || '::')
                   || search_query(sqlc.arg(terms)::text, sqlc.arg(match_any)::boolean, sqlc.arg(org_id) || ':' || sqlc.arg(user_id)::text || ':') AS q) w)
  AND s.answered_seq + 0 < sqlc.arg(below_seq)::bigint
  AND (s.shared OR s.from_user_id = sqlc.arg(user_id)::text OR s.to_user_id = sqlc.arg(user_id)::text)
ORDER BY s.answered_seq + 0 DESC
LIMIT sqlc.arg(max_rows);

-- name: SearchFetch :many
-- The answered questions of search results (message ids), newest answer
-- first, visible to user_id (as SearchWalk; the ids come from a search
-- with the same filter, which stays so that nothing else could show).
-- The ids are probed in the primary key, and each message's people looked
-- up by it: joined, the planner joined every pair of people first and then
-- matched the page against all their messages (0.8 ms at 1k, 37 ms at 1M).
SELECT sqlc.embed(messages),
       (SELECT uf.name FROM users uf WHERE uf.org_id = messages.org_id AND uf.id = messages.from_user_id)::text AS from_name,
       (SELECT ut.name FROM users ut WHERE ut.org_id = messages.org_id AND ut.id = messages.to_user_id)::text AS to_name
FROM messages
WHERE messages.org_id = sqlc.arg(org_id) AND messages.id = ANY(sqlc.arg(ids)::bigint[])
  AND (messages.shared_at IS NOT NULL OR messages.from_user_id = sqlc.arg(user_id)::text OR messages.to_user_id = sqlc.arg(user_id)::text)
ORDER BY messages.answered_seq DESC;
