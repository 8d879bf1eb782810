package db

import (
	"context"
	"strings"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// Search is a full-text search over answered questions: each backend
// stems its terms (SQLite FTS5's Porter tokenizer, PostgreSQL's english
// configuration), so "retries" finds "retry".
type Search struct {
	// Terms are lower-case words of letters and digits only (the rules
	// split and filter what a person typed), so no term can carry either
	// dialect's query syntax. At least one.
	Terms []string
	// Any matches a question that has any of the terms; otherwise it must have all.
	Any bool
}

// fts5 renders s in FTS5 query syntax: each term quoted, joined by AND or OR.
func (s Search) fts5() string {
	quoted := make([]string, len(s.Terms))
	for i, t := range s.Terms {
		quoted[i] = `"` + t + `"`
	}
	return strings.Join(quoted, map[bool]string{false: " AND ", true: " OR "}[s.Any])
}

// tsquery renders s in PostgreSQL's to_tsquery syntax, joined by & or |.
func (s Search) tsquery() string {
	return strings.Join(s.Terms, map[bool]string{false: " & ", true: " | "}[s.Any])
}

// sqliteWindows are how far back a SQLite search looks, widening: the
// newest answered questions first (of every organization: the index's keys
// are global), the whole index only when the newer hold fewer matches than
// asked for. The newest matches of a window that holds enough are the
// newest overall, so the result is the same; FTS5 reads a window of a
// common word's matches, not all of them.
var sqliteWindows = []int64{10_000, 100_000, 0}

func (a sqliteQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	windows := sqliteWindows
	for i, w := range windows {
		span := int64(1 << 62)
		if w > 0 {
			span = w
		}
		rows, err := a.q.SearchMessages(ctx, sqlitedb.SearchMessagesParams{OrgID: orgID, UserID: userID, Query: s.fts5(), Span: span, MaxRows: int64(limit)})
		if err != nil || len(rows) >= limit || i == len(windows)-1 {
			return convertAll(rows, func(r sqlitedb.SearchMessagesRow) ThreadMessage {
				return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
			}), sqliteError(err)
		}
	}
	return nil, nil
}

func (a pgQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	// One query, no window: the planner walks the newest answers
	// for a common word and uses the GIN index for a rare one; a window made
	// it build the GIN bitmap of a common word in full (measured 3x slower).
	rows, err := a.q.SearchMessages(ctx, pgdb.SearchMessagesParams{OrgID: orgID, UserID: userID, Query: s.tsquery(), MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.SearchMessagesRow) ThreadMessage {
		return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
	}), pgError(err)
}

// threadOf is the conversation a new message belongs to: a message that
// names none starts its own.
func threadOf(m Message) int64 {
	if m.ThreadID == 0 {
		return m.ID
	}
	return m.ThreadID
}

func (a sqliteQueries) ListThread(ctx context.Context, orgID string, threadID int64, limit int) ([]ThreadMessage, error) {
	rows, err := a.q.ListThread(ctx, sqlitedb.ListThreadParams{OrgID: orgID, ThreadID: threadID, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ListThreadRow) ThreadMessage {
		return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
	}), sqliteError(err)
}

func (a pgQueries) ListThread(ctx context.Context, orgID string, threadID int64, limit int) ([]ThreadMessage, error) {
	rows, err := a.q.ListThread(ctx, pgdb.ListThreadParams{OrgID: orgID, ThreadID: threadID, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ListThreadRow) ThreadMessage {
		return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
	}), pgError(err)
}
