package db

import (
	"cmp"
	"context"
	"slices"
	"strconv"
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

// searchGroupSpan is how many search keys a SQLite search group spans:
// an index row's rowid is group * searchGroupSpan + searchGroupSpan - 1 -
// key (migration 00011), so a group's newest answers come first.
const searchGroupSpan = 1 << 40

// SearchMessages reads the index rows of the groups the user may read (the
// organization's shared answers and the user's own), which hold only
// answers the user may see, takes the newest limit of their matches, and
// then reads those messages. FTS5 reads each group newest first and stops
// at limit; a search with few matches reads the group's lists whole, a
// third of the organization's at most. (No window of newest answers: FTS5
// checks a rowid bound only at a match, so a window with too few matches
// cost as much as the whole list, for each window tried.)
func (a sqliteQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	groups, err := a.q.SearchGroups(ctx, sqlitedb.SearchGroupsParams{OrgID: orgID, UserID: userID})
	if err != nil || len(groups) == 0 {
		return nil, sqliteError(err)
	}
	var keys []int64
	for _, g := range groups {
		rows, err := a.searchGroup(ctx, g.ID, s, limit)
		if err != nil {
			return nil, sqliteError(err)
		}
		keys = append(keys, rows...)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	slices.SortFunc(keys, func(a, b int64) int { return cmp.Compare(b, a) })
	keys = slices.Compact(keys)[:min(len(keys), limit)]
	list := make([]string, len(keys))
	for i, k := range keys {
		list[i] = strconv.FormatInt(k, 10)
	}
	rows, err := a.q.SearchFetch(ctx, sqlitedb.SearchFetchParams{Keys: "[" + strings.Join(list, ",") + "]", OrgID: orgID, UserID: userID})
	return convertAll(rows, func(r sqlitedb.SearchFetchRow) ThreadMessage {
		return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
	}), sqliteError(err)
}

// searchRare is how many rows of a group a word may have to count as rare
// (see searchGroup).
const searchRare = 64

// searchGroup returns the keys of the newest limit answers of group that
// match s, newest first.
//
// FTS5 merges an AND of three or more words slowly when one of them is rare
// and the others common (measured at 1M: 3.5 ms for a group, against 0.5 ms
// for the rare word with each common one), so such a search looks for a
// word with fewer than searchRare rows in the group first: its rows are the
// only candidates, and each other word is checked in one query beside it;
// the answers found by every such pair are those holding all the words.
func (a sqliteQueries) searchGroup(ctx context.Context, group int64, s Search, limit int) ([]int64, error) {
	base := group * searchGroupSpan
	find := func(s Search, limit int) ([]int64, error) {
		rows, err := a.q.SearchGroupKeys(ctx, sqlitedb.SearchGroupKeysParams{
			Query: s.fts5(), Lo: base, Hi: base + searchGroupSpan - 1, MaxRows: int64(limit)})
		for i, r := range rows {
			rows[i] = searchGroupSpan - 1 - (r - base)
		}
		return rows, err
	}
	if s.Any || len(s.Terms) < 3 {
		return find(s, limit)
	}
	for i, rare := range s.Terms {
		found, err := find(Search{Terms: []string{rare}}, searchRare)
		if err != nil || len(found) == searchRare {
			if err != nil {
				return nil, err
			}
			continue
		}
		for j, t := range s.Terms {
			if j == i || len(found) == 0 {
				continue
			}
			both, err := find(Search{Terms: []string{rare, t}}, searchRare)
			if err != nil {
				return nil, err
			}
			found = slices.DeleteFunc(found, func(k int64) bool { return !slices.Contains(both, k) })
		}
		return found[:min(len(found), limit)], nil
	}
	return find(s, limit)
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
