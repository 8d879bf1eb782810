-- name: CreateMessage :exec
INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, thread_id)
VALUES (sqlc.arg(org_id), sqlc.arg(id), sqlc.arg(from_user_id), sqlc.arg(to_user_id),
        sqlc.arg(question), sqlc.arg(asked_at), sqlc.arg(asked_seq), sqlc.arg(thread_id));

-- name: GetMessage :one
SELECT * FROM messages WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id);

-- name: ListInbox :many
-- A recipient's unanswered questions, oldest first, with who asked them.
SELECT sqlc.embed(messages), u.name AS sender_name, u.ownership AS sender_ownership,
       u.notes AS sender_notes, u.profile_notes AS sender_profile_notes
FROM messages
JOIN users u ON u.org_id = messages.org_id AND u.id = messages.from_user_id
WHERE messages.org_id = sqlc.arg(org_id) AND messages.to_user_id = sqlc.arg(to_user_id)
  AND messages.answered_seq IS NULL AND messages.id > sqlc.arg(after_id)
ORDER BY messages.id
LIMIT sqlc.arg(max_rows);

-- name: SaveDraft :execrows
-- draft_share is whether the draft, once sent, would be shared with the
-- organization: part of what the person is shown and approves.
UPDATE messages SET draft_text = sqlc.arg(draft_text), draft_updated_at = sqlc.arg(draft_updated_at),
    draft_share = sqlc.arg(draft_share)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id) AND answered_seq IS NULL;

-- name: AnswerMessage :execrows
-- Only an unanswered question takes an answer: the guard makes answering
-- exactly-once however many calls race. shared_at is set when the person
-- answering shares the conversation with the organization.
UPDATE messages
SET answer_text = sqlc.arg(answer_text), answered_at = sqlc.arg(answered_at), answered_seq = sqlc.arg(answered_seq),
    shared_at = sqlc.narg(shared_at)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id) AND answered_seq IS NULL;

-- name: ListReplies :many
-- Answers to an asker's questions in commit order: those after a cursor and
-- answered at or after since, and every one the asker has not been shown yet
-- (above seen_seq). min_seq is the smaller of after_seq and seen_seq, so the
-- replies index bounds the scan.
SELECT sqlc.embed(messages), u.name AS recipient_name
FROM messages
JOIN users u ON u.org_id = messages.org_id AND u.id = messages.to_user_id
WHERE messages.org_id = sqlc.arg(org_id) AND messages.from_user_id = sqlc.arg(from_user_id)
  AND messages.answered_seq > sqlc.arg(min_seq)
  AND ((messages.answered_seq > sqlc.arg(after_seq) AND messages.answered_at >= sqlc.arg(since))
       OR messages.answered_seq > sqlc.arg(seen_seq))
ORDER BY messages.answered_seq
LIMIT sqlc.arg(max_rows);

-- name: MarkRepliesSeen :exec
UPDATE users SET replies_seen_seq = sqlc.arg(seen_seq)
WHERE org_id = sqlc.arg(org_id) AND id = sqlc.arg(id) AND replies_seen_seq < sqlc.arg(seen_seq);

-- name: CountQuestions :one
SELECT COUNT(*) FROM messages
WHERE org_id = sqlc.arg(org_id) AND from_user_id = sqlc.arg(from_user_id) AND to_user_id = sqlc.arg(to_user_id);

-- name: LastQuestion :many
-- The newest question from one person to another (zero or one row).
SELECT * FROM messages
WHERE org_id = sqlc.arg(org_id) AND from_user_id = sqlc.arg(from_user_id) AND to_user_id = sqlc.arg(to_user_id)
ORDER BY id DESC
LIMIT 1;

-- name: LastAnswer :many
-- The newest answer from one person to another's question (zero or one row).
SELECT * FROM messages
WHERE org_id = sqlc.arg(org_id) AND from_user_id = sqlc.arg(from_user_id) AND to_user_id = sqlc.arg(to_user_id)
  AND answered_seq IS NOT NULL
ORDER BY answered_seq DESC
LIMIT 1;

-- name: ListThread :many
-- A conversation's questions in the order they were asked, with the names
-- of who asked and who was asked.
SELECT sqlc.embed(messages), uf.name AS from_name, ut.name AS to_name
FROM messages
JOIN users uf ON uf.org_id = messages.org_id AND uf.id = messages.from_user_id
JOIN users ut ON ut.org_id = messages.org_id AND ut.id = messages.to_user_id
WHERE messages.org_id = sqlc.arg(org_id) AND messages.thread_id = sqlc.arg(thread_id)
ORDER BY messages.id
LIMIT sqlc.arg(max_rows);
