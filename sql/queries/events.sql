-- name: ListEvents :many
-- What happened to a person after a cursor, in commit order: questions asked
-- of them (at asked_seq) and answers to their questions (at answered_seq).
-- other_name is the asker of a question, the answerer of an answer. The
-- columns line up with db.Event.
SELECT CAST('question' AS TEXT) AS kind, m.asked_seq AS seq, m.id AS message_id,
       m.from_user_id, m.to_user_id, m.question, m.asked_at, m.answer_text, m.answered_at,
       u.name AS other_name, m.thread_id
FROM messages m
JOIN users u ON u.org_id = m.org_id AND u.id = m.from_user_id
WHERE m.org_id = sqlc.arg(org_id) AND m.to_user_id = sqlc.arg(user_id) AND m.asked_seq > sqlc.arg(after_seq)
UNION ALL
SELECT CAST('answer' AS TEXT) AS kind, m.answered_seq AS seq, m.id AS message_id,
       m.from_user_id, m.to_user_id, m.question, m.asked_at, m.answer_text, m.answered_at,
       u.name AS other_name, m.thread_id
FROM messages m
JOIN users u ON u.org_id = m.org_id AND u.id = m.to_user_id
WHERE m.org_id = sqlc.arg(org_id) AND m.from_user_id = sqlc.arg(user_id) AND m.answered_seq > sqlc.arg(after_seq)
ORDER BY seq
LIMIT sqlc.arg(max_rows);
