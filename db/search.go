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
	// Newest, when not 0, looks only at about the newest Newest answered
	// questions (SQLite: of every organization; PostgreSQL: the
	// organization's). The newest matches within it are the newest overall
	// whenever it holds as many as were asked for.
	Newest int64
}

// span is the window of the search index s looks at, per backend: SQLite
// counts index keys (one per answered question), PostgreSQL event sequence
// numbers (two per question: asked and answered).
func (s Search) span(perQuestion int64) int64 {
	if s.Newest <= 0 {
		return 1 << 62
	}
	return s.Newest * perQuestion
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

func (a sqliteQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	rows, err := a.q.SearchMessages(ctx, sqlitedb.SearchMessagesParams{OrgID: orgID, UserID: userID, Query: s.fts5(), Span: s.span(1), MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.SearchMessagesRow) ThreadMessage {
		return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
	}), sqliteError(err)
}

func (a pgQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	var minSeq int64 // the whole history
	if s.Newest > 0 {
		org, err := a.q.GetOrganization(ctx, orgID)
		if err != nil {
			return nil, pgError(err)
		}
		minSeq = org.LastEventSeq - s.span(2)
	}
	rows, err := a.q.SearchMessages(ctx, pgdb.SearchMessagesParams{OrgID: orgID, UserID: userID, Query: s.tsquery(), MinSeq: minSeq, MaxRows: int32(limit)})
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
