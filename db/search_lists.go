package db

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// Word lists of SQLite searches (migration 00012).
//
// FTS5 intersects the lists of an AND by stepping through each list entry
// by entry, in WebAssembly (about 25 ns an entry), so three common words
// that seldom meet cost a search at 1M answers the whole of their three
// lists in each group it reads (1.8 ms in the organization's shared group
// for "error docker dependency"), whatever limit it asks for. search_lists
// keeps the same lists as blocks of keys that a search reads as a few rows
// and intersects in Go, passing without decoding every block that holds
// no key it still looks for (BENCHMARKS.md has the figures). A background
// lister (keepListing) fills them a batch of answers at a time, and a
// search reads them for the keys up to its organization's listed ones and
// FTS5 for the few after, a word at a time (every entry of one word is a
// match, so FTS5 stops at the end of the range; an AND would read on past
// it to its next match).

// The sizes of the lists and of their use (searchSizes holds those of a search).
const (
	// searchBlockBytes: a block grows until its keys take this many bytes,
	// so that a row fits in its B-tree page.
	searchBlockBytes = 800
	// searchListBatch is how many answers one listing transaction takes,
	// holding the write lock: on the test machine, with 1M answers, about a
	// second for 1,024 (256 took half a second, halving the rate).
	searchListBatch = 1024
	// searchTailMost is the most keys after an organization's listed ones
	// for a search to use the lists (otherwise FTS5 alone, as before).
	searchTailMost = 8192
	// searchBlocksFirst is how many blocks of each word a search reads
	// first; it reads the rest searchBlocksMore at a time.
	searchBlocksFirst, searchBlocksMore = 8, 256
)

// searchListEvery is how often the lister looks for answers to list; 0 (as
// the package's own tests set it) starts no lister.
var searchListEvery = time.Second

// registerFTS5 loads FTS5 into a connection with ctalk_terms, the
// auxiliary function that tokenizes with a table's tokenizer.
func registerFTS5(c *sqlite3.Conn) error {
	return fts5.RegisterCustom(c, func(api *fts5.API) error { return api.CreateFunction("ctalk_terms", ctalkTerms) })
}

// ctalkTerms is ctalk_terms(table, text[, each]): the distinct terms the
// table's tokenizer makes of text, as a JSON array; with each set, the
// terms of each of text's space-separated words, as an array of arrays.
func ctalkTerms(fc fts5.Context, ctx sqlite3.Context, arg ...sqlite3.Value) {
	if len(arg) < 1 || len(arg) > 2 {
		ctx.ResultError(errors.New("ctalk_terms(table, text[, each])"))
		return
	}
	terms := func(text string) ([]string, error) {
		out := []string{}
		seen := map[string]bool{}
		err := fc.Tokenize(text, "", func(_ fts5.TokenFlag, token string, _, _ int) error {
			if !seen[token] {
				seen[token] = true
				out = append(out, token)
			}
			return nil
		})
		return out, err
	}
	var result any
	var err error
	if text := arg[0].Text(); len(arg) == 2 && arg[1].Bool() {
		var each [][]string
		for _, w := range strings.Split(text, " ") {
			var ts []string
			if ts, err = terms(w); err != nil {
				break
			}
			each = append(each, ts)
		}
		result = each
	} else {
		result, err = terms(text)
	}
	if err != nil {
		ctx.ResultError(err)
		return
	}
	b, err := json.Marshal(result)
	if err != nil {
		ctx.ResultError(err)
		return
	}
	ctx.ResultText(string(b))
}

// lister runs keepListing for a store until stop.
type lister struct {
	stop func()
	done sync.WaitGroup
}

// startListing starts the store's lister, which lists what was answered
// before it started and then, every searchListEvery, what was answered
// since.
func (s *sqliteStore) startListing(logger *slog.Logger) {
	if searchListEvery <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.lister.stop = cancel
	s.lister.done.Go(func() { s.keepListing(ctx, searchListEvery, logger) })
}

// stopListing stops the lister and waits for it (Close).
func (s *sqliteStore) stopListing() {
	if s.lister.stop != nil {
		s.lister.stop()
		s.lister.done.Wait()
	}
}

// keepListing lists answers until ctx ends: each tick, those of the
// organizations that answered since the last, and at the start those of
// every organization with answers. A failure is logged and tried again at
// the next tick; searches stay right meanwhile, reading FTS5 for what is
// not listed.
func (s *sqliteStore) keepListing(ctx context.Context, every time.Duration, logger *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	seen := int64(0) // every organization with answers up to this key is listed
	var warned time.Time
	for {
		var newest int64
		err := s.View(ctx, func(q Queries) error {
			var err error
			newest, err = q.(sqliteQueries).q.SearchNewestKey(ctx)
			return err
		})
		if err == nil && newest != seen {
			if err = s.listSearch(ctx, seen, searchListBatch, searchBlockBytes, 0); err == nil {
				seen = newest
			}
		}
		if err != nil && ctx.Err() == nil && logger != nil && time.Since(warned) >= time.Minute {
			logger.Warn("listing answers for search failed; searches read FTS5 alone meanwhile", "error", err)
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listSearch lists the unlisted answers of every organization with answers
// whose keys are above after, batch answers a transaction, in blocks of
// blockBytes; with most > 0, at most most answers of each organization
// (tests).
func (s *sqliteStore) listSearch(ctx context.Context, after int64, batch, blockBytes, most int) error {
	var orgs []string
	err := s.View(ctx, func(q Queries) error {
		var err error
		orgs, err = q.(sqliteQueries).q.SearchAnsweredAfter(ctx, after)
		return err
	})
	if err != nil {
		return err
	}
	for _, org := range orgs {
		for left := most; most <= 0 || left > 0; left -= batch {
			n := batch
			if most > 0 {
				n = min(batch, left)
			}
			listed := 0
			err := s.InTx(ctx, func(q Queries) error {
				var err error
				listed, err = q.(sqliteQueries).listBatch(ctx, org, n, blockBytes)
				return err
			})
			if err != nil {
				return fmt.Errorf("list the answers of organization %q: %w", org, err)
			}
			if listed < n {
				break
			}
		}
	}
	return nil
}

// listBatch puts at most n of an organization's unlisted answers into its
// groups' lists, oldest first, and returns how many it listed.
func (a sqliteQueries) listBatch(ctx context.Context, orgID string, n, blockBytes int) (int, error) {
	listed, err := a.q.SearchListed(ctx, orgID)
	if err != nil {
		return 0, err
	}
	answers, err := a.q.SearchToList(ctx, sqlitedb.SearchToListParams{OrgID: orgID, After: listed.Through, MaxRows: int64(n)})
	if err != nil || len(answers) == 0 {
		return 0, err
	}
	groups, err := a.q.SearchGroupIDs(ctx, orgID)
	if err != nil {
		return 0, err
	}
	groupOf := map[string]int64{}
	for _, g := range groups {
		groupOf[g.UserID] = g.ID
	}
	type list struct {
		group int64
		term  string
	}
	lists := map[list][]int64{} // keys ascending: the answers come oldest first
	for _, r := range answers {
		var terms []string
		if err := json.Unmarshal([]byte(r.Terms), &terms); err != nil {
			return 0, fmt.Errorf("terms of search key %d: %w", r.ID, err)
		}
		readers := []string{""}
		if r.Shared == 0 {
			readers = []string{r.FromUserID}
			if r.ToUserID != r.FromUserID {
				readers = append(readers, r.ToUserID)
			}
		}
		for _, u := range readers {
			g, ok := groupOf[u]
			if !ok {
				return 0, fmt.Errorf("search key %d: no search group for reader %q", r.ID, u)
			}
			for _, t := range terms {
				lists[list{g, t}] = append(lists[list{g, t}], r.ID)
			}
		}
	}
	order := make([]list, 0, len(lists))
	for l := range lists {
		order = append(order, l)
	}
	slices.SortFunc(order, func(a, b list) int { return cmp.Or(cmp.Compare(a.group, b.group), strings.Compare(a.term, b.term)) })
	// Two statements for the whole batch (JSON in, JSON out): a statement
	// for each list a batch adds to listed 1M answers in 12 minutes.
	pairs := make([][2]any, len(order))
	for i, l := range order {
		pairs[i] = [2]any{l.group, l.term}
	}
	j, err := json.Marshal(pairs)
	if err != nil {
		return 0, err
	}
	lasts, err := a.q.SearchListsLast(ctx, string(j))
	if err != nil {
		return 0, err
	}
	last := make([]*sqlitedb.SearchListsLastRow, len(order))
	for i := range lasts {
		if n := lasts[i].I; n >= 0 && n < int64(len(order)) {
			last[n] = &lasts[i]
		}
	}
	var blocks [][4]any
	for i, l := range order {
		var first, prev int64 // the open block's first and last keys; 0: none
		keys := []byte{}
		if b := last[i]; b != nil && len(b.Keys) < blockBytes {
			first, keys = b.First, b.Keys
			block, err := decodeBlock(first, keys, nil)
			if err != nil {
				return 0, err
			}
			prev = block[len(block)-1]
		}
		for _, k := range lists[l] {
			if first != 0 && len(keys) >= blockBytes {
				blocks = append(blocks, [4]any{l.group, l.term, first, hex.EncodeToString(keys)})
				first = 0
			}
			if first == 0 {
				first, prev, keys = k, k, []byte{}
				continue
			}
			keys, prev = binary.AppendUvarint(keys, uint64(k-prev)), k
		}
		blocks = append(blocks, [4]any{l.group, l.term, first, hex.EncodeToString(keys)})
	}
	if j, err = json.Marshal(blocks); err != nil {
		return 0, err
	}
	if err := a.q.SearchListsPut(ctx, string(j)); err != nil {
		return 0, err
	}
	through := answers[len(answers)-1].ID
	return len(answers), a.q.SearchListedThrough(ctx, sqlitedb.SearchListedThroughParams{OrgID: orgID, Through: through})
}

// decodeBlock appends a block's keys to into, in ascending order.
func decodeBlock(first int64, keys []byte, into []int64) ([]int64, error) {
	into = append(into, first)
	for k, i := first, 0; i < len(keys); {
		d, n := uint64(keys[i]), 1
		if d >= 0x80 {
			d, n = binary.Uvarint(keys[i:])
		}
		if n <= 0 || d == 0 {
			return nil, fmt.Errorf("search list block %d is damaged", first)
		}
		k, i = k+int64(d), i+n
		into = append(into, k)
	}
	return into, nil
}

// searchListed is how a search reads an organization's lists: its words'
// terms as FTS5 indexes them, and how far the lists go.
type searchListed struct {
	terms   []string // distinct
	words   []string // a word of each term, for FTS5
	through int64
	tail    bool // whether the organization has answers after through
}

// listedFor returns how s reads orgID's lists, or nil when it cannot: s is
// not an AND of two or more words (FTS5 stops one word, or any of a few,
// at the limit), too many answers are not listed yet, or a word is not
// one term.
func (a sqliteQueries) listedFor(ctx context.Context, orgID string, s Search) (*searchListed, error) {
	if s.Any || len(s.Terms) < 2 {
		return nil, nil
	}
	listed, err := a.ask.SearchListed(ctx, orgID)
	if err != nil || listed.Through == 0 || listed.Newest-listed.Through > int64(s.size().tailMost) {
		return nil, err
	}
	j, err := a.ask.SearchWordTerms(ctx, strings.Join(s.Terms, " "))
	if err != nil {
		return nil, err
	}
	var each [][]string
	if err := json.Unmarshal([]byte(j), &each); err != nil || len(each) != len(s.Terms) {
		return nil, err
	}
	l := &searchListed{through: listed.Through, tail: listed.Newest > listed.Through}
	for i, ts := range each {
		if len(ts) != 1 {
			return nil, nil
		}
		if !slices.Contains(l.terms, ts[0]) {
			l.terms, l.words = append(l.terms, ts[0]), append(l.words, s.Terms[i])
		}
	}
	return l, nil
}

// searchLists returns the keys of the newest limit answers of group holding
// every term of l, newest first: a stream of each term's keys (FTS5 after
// the listed ones, then the list's blocks), intersected.
func (a sqliteQueries) searchLists(ctx context.Context, group int64, l *searchListed, limit int) ([]int64, error) {
	base := group * searchGroupSpan
	streams := make([]*keyStream, len(l.terms))
	for i, term := range l.terms {
		var tail []int64
		if l.tail {
			var err error
			tail, err = a.ask.SearchGroupKeys(ctx, sqlitedb.SearchGroupKeysParams{
				Query: `"` + l.words[i] + `"`, Lo: base, Hi: base + searchGroupSpan - 2 - l.through, MaxRows: math.MaxInt32})
			if err != nil {
				return nil, err
			}
			for j, r := range tail {
				tail[j] = searchGroupSpan - 1 - (r - base)
			}
			slices.Reverse(tail) // ascending
		}
		streams[i] = &keyStream{keys: tail, top: len(tail), below: l.through + 1, more: searchBlocksFirst,
			load: func(below int64, n int) ([]sqlitedb.SearchListBlocksRow, error) {
				return a.ask.SearchListBlocks(ctx, sqlitedb.SearchListBlocksParams{GroupID: group, Term: term, Below: below, MaxRows: int64(n)})
			}}
	}
	return intersectStreams(streams, limit)
}

// keyStream is one term's keys in a group, newest first: keys already
// read, then blocks loaded a page at a time.
type keyStream struct {
	keys   []int64 // read, ascending; keys[:top] are not passed yet
	top    int
	blocks []sqlitedb.SearchListBlocksRow // loaded and not read yet, from next on
	next   int
	below  int64 // blocks not loaded yet start below this key
	more   int   // how many blocks the next load asks for; 0 once none is left
	load   func(below int64, n int) ([]sqlitedb.SearchListBlocksRow, error)
}

// seek returns the stream's newest key not above k, and 0 when it has none.
// A block whose first key is above k holds no such key: it is passed
// without being read, and so are the blocks a load would have given
// between it and k.
func (s *keyStream) seek(k int64) (int64, error) {
	for {
		if s.top > 0 {
			// Keys close below the last one found first (lists that meet
			// often), then a binary search (a key far below).
			for i := s.top - 1; i >= max(0, s.top-8); i-- {
				if s.keys[i] <= k {
					s.top = i + 1
					return s.keys[i], nil
				}
			}
			n, found := slices.BinarySearch(s.keys[:max(0, s.top-8)], k)
			if found {
				n++
			}
			if s.top = n; n > 0 {
				return s.keys[n-1], nil
			}
		}
		for s.next < len(s.blocks) && s.blocks[s.next].First > k {
			s.next++
		}
		if s.next == len(s.blocks) {
			if s.more == 0 {
				return 0, nil
			}
			n, below := s.more, s.below
			if k < below { // k+1 would overflow at the first seek
				below = k + 1
			}
			blocks, err := s.load(below, n)
			if err != nil {
				return 0, err
			}
			s.blocks, s.next, s.more = blocks, 0, searchBlocksMore
			if len(blocks) < n {
				s.more = 0
			}
			if len(blocks) > 0 {
				s.below = blocks[len(blocks)-1].First
			}
			continue
		}
		b := s.blocks[s.next]
		s.next++
		var err error
		if s.keys, err = decodeBlock(b.First, b.Keys, s.keys[:0]); err != nil {
			return 0, err
		}
		s.top = len(s.keys)
	}
}

// intersectStreams returns the newest limit keys every stream holds,
// newest first: each stream in turn seeks the candidate, and one that has
// it not moves the candidate down to its next key, until all agree.
func intersectStreams(streams []*keyStream, limit int) ([]int64, error) {
	var found []int64
	cand, agreed := int64(math.MaxInt64), 0
	for i := 0; len(found) < limit; i = (i + 1) % len(streams) {
		k, err := streams[i].seek(cand)
		if err != nil || k == 0 {
			return found, err
		}
		if k < cand {
			cand, agreed = k, 0
		}
		if agreed++; agreed == len(streams) {
			found = append(found, cand)
			cand, agreed = cand-1, 0
		}
	}
	return found, nil
}

// ListForSearch lists every answer not yet in SQLite's word lists now,
// rather than leaving them to the store's background lister; on
// PostgreSQL it does nothing. (The search benchmark measures with
// everything listed, as a server is a second after its last answer.)
func ListForSearch(ctx context.Context, s Store) error {
	if s, ok := s.(*sqliteStore); ok {
		return s.listSearch(ctx, 0, searchListBatch, searchBlockBytes, 0)
	}
	return nil
}
