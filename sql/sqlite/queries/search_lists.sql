-- name: SearchListed :one
-- How far an organization's answers are in search_lists (migration 00012),
-- and its newest answer's key.
SELECT CAST(coalesce((SELECT l.through FROM search_listed l WHERE l.org_id = sqlc.arg(org_id)), 0) AS INTEGER) AS through,
       CAST(coalesce((SELECT max(s.id) FROM messages_search s WHERE s.org_id = sqlc.arg(org_id)), 0) AS INTEGER) AS newest;

-- name: SearchAnsweredAfter :many
-- The organizations with answers whose keys are above after (NOT INDEXED:
-- the key range, not a scan of the organization index).
SELECT DISTINCT s.org_id FROM messages_search s NOT INDEXED WHERE s.id > sqlc.arg(after) ORDER BY s.org_id;

-- name: SearchToList :many
-- An organization's first answers after a key, oldest first, with who may
-- read them and the distinct terms FTS5 indexed them under. (The answers
-- are chosen first: the terms of only those are made.)
SELECT b.id, CAST(m.shared_at IS NOT NULL AS INTEGER) AS shared, m.from_user_id, m.to_user_id,
       CAST(ctalk_terms(tok.search_tokenizer, m.question || ' ' || m.answer_text) AS TEXT) AS terms
FROM search_tokenizer tok
CROSS JOIN (SELECT k.id, k.org_id, k.message_id FROM messages_search k
            WHERE k.org_id = sqlc.arg(org_id) AND k.id > sqlc.arg(after)
            ORDER BY k.id LIMIT sqlc.arg(max_rows)) b
CROSS JOIN messages m ON m.org_id = b.org_id AND m.id = b.message_id
WHERE tok.body MATCH 'x'
ORDER BY b.id;

-- name: SearchWordTerms :one
-- The terms FTS5 makes of each of words (separated by spaces), as a JSON
-- array of arrays.
SELECT CAST(ctalk_terms(tok.search_tokenizer, CAST(sqlc.arg(words) AS TEXT), 1) AS TEXT) AS terms
FROM search_tokenizer tok
WHERE tok.body MATCH 'x';

-- name: SearchListsLast :many
-- The newest block of each of lists, a JSON array of [group_id, term]
-- pairs, by its index in lists (lists without blocks are left out).
SELECT CAST(j.key AS INTEGER) AS i, l.first, l.keys
FROM json_each(CAST(sqlc.arg(lists) AS TEXT)) j
CROSS JOIN search_lists l
WHERE l.group_id = json_extract(j.value, '$[0]') AND l.term = json_extract(j.value, '$[1]')
  AND l.first = (SELECT max(x.first) FROM search_lists x
                 WHERE x.group_id = json_extract(j.value, '$[0]') AND x.term = json_extract(j.value, '$[1]'));

-- name: SearchListsPut :exec
-- Writes blocks, a JSON array of [group_id, term, first, keys in hex].
INSERT OR REPLACE INTO search_lists (group_id, term, first, keys)
SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
       unhex(json_extract(j.value, '$[3]'))
FROM json_each(CAST(sqlc.arg(blocks) AS TEXT)) j;

-- name: SearchListedThrough :exec
INSERT INTO search_listed (org_id, through) VALUES (sqlc.arg(org_id), sqlc.arg(through))
ON CONFLICT (org_id) DO UPDATE SET through = excluded.through;

-- name: SearchListBlocks :many
-- A list's blocks that start below a key, newest first.
SELECT first, keys FROM search_lists
WHERE group_id = sqlc.arg(group_id) AND term = sqlc.arg(term) AND first < sqlc.arg(below)
ORDER BY first DESC
LIMIT sqlc.arg(max_rows);

-- name: SearchGroupIDs :many
-- An organization's search groups.
SELECT id, user_id FROM search_groups WHERE org_id = sqlc.arg(org_id);

-- name: SearchNewestKey :one
-- The newest answer's key, of any organization.
SELECT CAST(coalesce(max(id), 0) AS INTEGER) AS newest FROM messages_search;
