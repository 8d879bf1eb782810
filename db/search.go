package db

import (
	"cmp"
	"context"
	"math"
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
	// sizes, when set (by tests: export_test.go), replace the sizes and
	// costs a search decides its way by, so that small data goes every way.
	sizes *searchSizes
}

// searchSizes are what a search decides how to read its lists by (see
// searchGroup and pgQueries.SearchMessages).
type searchSizes struct {
	probe, pairMost, tailMost                 int // SQLite
	walkFirst, walkMost, ginCost, bucketsMost int // PostgreSQL
}

// defaultSearchSizes are the sizes measured at 1M (BENCHMARKS.md).
var defaultSearchSizes = searchSizes{
	probe: searchProbe, pairMost: searchPairMost, tailMost: searchTailMost,
	walkFirst: searchWalkFirst, walkMost: searchWalkMost, ginCost: searchGINCost, bucketsMost: searchBucketsMost,
}

// size is the sizes s decides by.
func (s Search) size() searchSizes {
	if s.sizes != nil {
		return *s.sizes
	}
	return defaultSearchSizes
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
// then reads those messages. An AND of two or more words intersects the
// groups' word lists (search_lists.go) when they are listed; otherwise,
// and for one word or any of a few, FTS5 reads each group newest first and
// stops at limit (searchGroup). (No window of newest answers: FTS5 checks
// a rowid bound only at a match, so a window with too few matches cost as
// much as the whole list, for each window tried.)
//
// The lists may still hold answers deleted since they were listed: the
// messages read are only those that exist, and when some did not, the
// search looks for as many more.
func (a sqliteQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	groups, err := a.q.SearchGroups(ctx, sqlitedb.SearchGroupsParams{OrgID: orgID, UserID: userID})
	if err != nil || len(groups) == 0 {
		return nil, sqliteError(err)
	}
	// The organization's shared answers first: the most of them, so the
	// way its words are read there is the way for the user's own too.
	slices.SortFunc(groups, func(a, b sqlitedb.SearchGroupsRow) int { return strings.Compare(a.UserID, b.UserID) })
	listed, err := a.listedFor(ctx, orgID, s)
	if err != nil {
		return nil, sqliteError(err)
	}
	for want := limit; ; {
		var keys []int64
		var order []string // the words, rarest first, once a group has shown it
		for _, g := range groups {
			var rows []int64
			if listed != nil {
				rows, err = a.searchLists(ctx, g.ID, listed, want)
			} else {
				rows, order, err = a.searchGroup(ctx, g.ID, s, order, want)
			}
			if err != nil {
				return nil, sqliteError(err)
			}
			keys = append(keys, rows...)
		}
		if len(keys) == 0 {
			return nil, nil
		}
		slices.SortFunc(keys, func(a, b int64) int { return cmp.Compare(b, a) })
		keys = slices.Compact(keys)[:min(len(keys), want)]
		list := make([]string, len(keys))
		for i, k := range keys {
			list[i] = strconv.FormatInt(k, 10)
		}
		rows, err := a.q.SearchFetch(ctx, sqlitedb.SearchFetchParams{Keys: "[" + strings.Join(list, ",") + "]", OrgID: orgID, UserID: userID})
		if err != nil {
			return nil, sqliteError(err)
		}
		if len(rows) == len(keys) || len(keys) < want {
			return convertAll(rows[:min(len(rows), limit)], func(r sqlitedb.SearchFetchRow) ThreadMessage {
				return ThreadMessage{Message(r.Message), r.FromName, r.ToName}
			}), nil
		}
		want += len(keys) - len(rows)
	}
}

// The two ways a SQLite search of three or more words reads a group (see
// searchGroup).
const (
	// searchProbe is how many of each word's newest rows in a group a
	// search reads first, to see which word is the rarest.
	searchProbe = 64
	// searchPairMost is the most rows the rarest word may be estimated to
	// have in a group for the search to go by pairs of words.
	searchPairMost = 1024
)

// searchGroup returns the keys of the newest limit answers of group that
// match s, newest first, and for an AND of three or more words the order
// it read them in (rarest first; nil for the whole AND at once), which a
// search passes on as order to its next group.
//
// FTS5 merges an AND of three or more words slowly when one of them is
// rarer than the others: it reads the common words' lists through, where
// the rare one alone would find the few candidates (measured at 1M, in the
// organization's shared group: "production AND zovibako AND fakololo"
// 2.4 ms, "zovibako AND fakololo" 0.22 ms; "dulovimu AND load AND service"
// 1.9 ms, "dulovimu AND load" 0.44 ms). So such a search first reads each
// word's searchProbe newest rows in the group: a word with fewer has no
// more, and for the others the age of the last row read says how common
// the word is. If the rarest word is rare enough, the search goes by
// pairs: the rarest word with each other one, rarest first, each pair read
// whole (at most the rarest word's rows), keeping the answers every pair
// found, and stopping as soon as none is left (two rare names seldom
// meet). Else the words are all common, and the whole AND runs, which
// stops early when such words meet often. The next group (the user's own
// answers, fewer than the organization's shared ones) goes the same way
// without reading the words first.
func (a sqliteQueries) searchGroup(ctx context.Context, group int64, s Search, order []string, limit int) ([]int64, []string, error) {
	base, size := group*searchGroupSpan, s.size()
	find := func(s Search, limit int) ([]int64, error) {
		rows, err := a.q.SearchGroupKeys(ctx, sqlitedb.SearchGroupKeysParams{
			Query: s.fts5(), Lo: base, Hi: base + searchGroupSpan - 1, MaxRows: int64(limit)})
		for i, r := range rows {
			rows[i] = searchGroupSpan - 1 - (r - base)
		}
		return rows, err
	}
	if s.Any || len(s.Terms) < 3 {
		rows, err := find(s, limit)
		return rows, nil, err
	}
	var found []int64 // the rarest word's rows, when the probe read them all
	if order == nil {
		type probe struct {
			term string
			keys []int64 // the word's newest rows in the group, newest (highest key) first
		}
		probes := make([]probe, 0, len(s.Terms))
		newest := int64(0)
		for _, t := range s.Terms {
			keys, err := find(Search{Terms: []string{t}}, size.probe)
			if err != nil || len(keys) == 0 {
				return nil, nil, err
			}
			probes = append(probes, probe{t, keys})
			newest = max(newest, keys[0])
		}
		// Rarest first: a word with fewer rows than read, then the word whose
		// last row read is the oldest.
		slices.SortStableFunc(probes, func(a, b probe) int {
			return cmp.Or(cmp.Compare(len(a.keys), len(b.keys)), cmp.Compare(a.keys[len(a.keys)-1], b.keys[len(b.keys)-1]))
		})
		order = make([]string, len(probes))
		for i, p := range probes {
			order[i] = p.term
		}
		if rarest := probes[0].keys; len(rarest) < size.probe {
			found = rarest
		} else if int64(size.probe)*newest/(newest-rarest[size.probe-1]+1) > int64(size.pairMost) {
			order = order[:0] // all common: the whole AND, here and in the next group
		}
	}
	if len(order) == 0 {
		rows, err := find(s, limit)
		return rows, order, err
	}
	for i, t := range order[1:] {
		both, err := find(Search{Terms: []string{order[0], t}}, searchGroupSpan)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 && found == nil {
			found = both
		} else {
			found = intersectNewest(found, both)
		}
		if len(found) == 0 {
			return nil, order, nil
		}
	}
	return found[:min(len(found), limit)], order, nil
}

// intersectNewest keeps the keys of a that b holds too. Both are newest
// (highest key) first, as FTS5 returns a group's rows, so one pass over each
// does: a pair of a word in a few thousand answers would otherwise cost a
// search millions of comparisons.
func intersectNewest(a, b []int64) []int64 {
	kept, j := a[:0], 0
	for _, k := range a {
		for j < len(b) && b[j] > k {
			j++
		}
		if j < len(b) && b[j] == k {
			kept = append(kept, k)
		}
	}
	return kept
}

// How a search on PostgreSQL finds its page (see pgQueries.SearchMessages).
const (
	// searchWalkFirst is how many of the newest answers a user may see a
	// search walks first.
	searchWalkFirst = 1024
	// searchWalkMost bounds one further walk.
	searchWalkMost = 16384
	// searchGINCost is what a match found through the GIN index costs, in
	// answers walked. Measured at 1M on a 128 MB shared_buffers server: a
	// walk costs 0.6-0.8 µs an answer (index, heap row, test), a GIN match
	// 2 µs with its heap page in shared buffers and about 5 µs without.
	searchGINCost = 4
	// searchBucketBits: a bucket of answer order (migration 00013) is
	// 2^searchBucketBits event sequence numbers, about 8,000 answers.
	searchBucketBits = 14
	// searchBucketsMost is the most buckets a GIN search asks for; a wider
	// window reads the whole history below the walk instead. Twice the
	// estimated span and 8 buckets: "key retry" at 1M (2,200 matches in the
	// history) went from 9.8 to 6.1 ms; four times and 8 buckets left it
	// at 9.6 (its window was wider than 8), 64 buckets made other searches
	// slower.
	searchBucketsMost = 8
)

// SearchMessages finds the newest limit answers the user may see that
// match s, in one of two ways, each bounded by a different thing:
//   - walking the newest answers the user may see and testing each (cost:
//     the answers walked, about limit over the matches' density);
//   - the GIN index, whose lists hold only the answers the user's reader
//     groups may see (migration 00012): it finds the matches of the words
//     and sorts them (cost: the words' lists, and a heap read per match),
//     in a window of buckets of answer order (migration 00013) where the
//     walk's density says the newest matches are, so that it reads about
//     twice the matches it needs rather than every one in the history.
//
// The planner chose between such plans by its estimate of the words'
// matches, which for two or three words that go together was off by
// 3-14x. Here a first short walk measures the density instead: the
// answers a further walk would need, and the matches older than the walk
// (the density times the answers before it, estimated by how much of the
// history the walk covered). The walk goes on while it is the cheaper, and
// the GIN index finds the rest, older than what was walked. Either way the
// result is the newest limit matches, as on SQLite.
func (a pgQueries) SearchMessages(ctx context.Context, orgID, userID string, s Search, limit int) ([]ThreadMessage, error) {
	var ids []int64
	size := s.size()
	below, newest, walked, walk := int64(math.MaxInt64), int64(0), 0, size.walkFirst
	for {
		rows, err := a.q.SearchWalk(ctx, pgdb.SearchWalkParams{Query: s.tsquery(), MaxWalk: int32(walk), OrgID: orgID, BelowSeq: below,
			UserID: userID, MaxRows: int32(limit - len(ids))})
		if err != nil || len(rows) == 0 {
			return nil, pgError(err)
		}
		for _, r := range rows {
			if r.MessageID != 0 && !slices.Contains(ids, r.MessageID) {
				ids = append(ids, r.MessageID)
			}
		}
		walked += int(rows[0].Walked)
		below, newest = rows[0].Lo, max(newest, rows[0].Hi)
		if rows[0].Walked < int64(walk) || len(ids) >= limit {
			return a.searchFetch(ctx, orgID, userID, ids[:min(len(ids), limit)])
		}
		if len(ids) == 0 || newest <= below {
			break
		}
		rest := (limit - len(ids)) * walked / len(ids)
		older := int64(len(ids)) * below / (newest - below)
		if int64(rest) > int64(size.ginCost)*older {
			break
		}
		walk = min(rest+rest/2, size.walkMost)
	}
	// The GIN index, first in a window of buckets of answer order
	// (migration 00013) sized by the walk's density to hold twice the
	// matches still needed, then, if the page is not full, the whole
	// history below the window: each GIN search reads the words' lists
	// whole, whatever its window, so a second window sized again would cost
	// as much as the rest (measured: doubling windows took "deploy deploy
	// memory" from 8 to 13 ms). The whole history below the walk at once
	// when the walk found nothing, or when the window would span more than
	// searchBucketsMost buckets: a window reads its buckets' lists whole
	// too, and at 32 buckets they cost more than the heap reads they save.
	span := int64(math.MaxInt64)
	if len(ids) > 0 && newest > below {
		span = 2 * int64(limit-len(ids)) * (newest - below) / int64(len(ids))
	}
	for {
		lo, hi := int64(-1), (below-1)>>searchBucketBits
		if span < below && (below-span)>>searchBucketBits > 0 && hi-(below-span)>>searchBucketBits < int64(size.bucketsMost) {
			lo = (below - span) >> searchBucketBits
		}
		rows, err := a.q.SearchMatches(ctx, pgdb.SearchMatchesParams{OrgID: orgID, Terms: strings.Join(s.Terms, " "), MatchAny: s.Any,
			BelowSeq: below, UserID: userID, LoBucket: lo, HiBucket: hi, MaxRows: int32(limit - len(ids))})
		if err != nil {
			return nil, pgError(err)
		}
		for _, r := range rows {
			ids = append(ids, r.MessageID)
		}
		if lo < 0 || len(ids) >= limit {
			return a.searchFetch(ctx, orgID, userID, ids)
		}
		below, span = lo<<searchBucketBits, math.MaxInt64
	}
}

// searchFetch reads the messages a search found, newest answer first.
func (a pgQueries) searchFetch(ctx context.Context, orgID, userID string, ids []int64) ([]ThreadMessage, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := a.q.SearchFetch(ctx, pgdb.SearchFetchParams{OrgID: orgID, Ids: ids, UserID: userID})
	return convertAll(rows, func(r pgdb.SearchFetchRow) ThreadMessage {
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
