package db_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSearchIndexByReader: the search index keeps each answer in the
// lists of those who may read it (migration 00011). A search finds shared
// answers and the user's own, never another person's private answer or
// another organization's; the migration rebuilds the index from what is
// stored (down, then up); and a deleted conversation or organization
// leaves nothing behind that a search would find.
func TestSearchIndexByReader(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		s := openStore(t, cfg)
		seedOrg(t, s, "a", "amy", "bob", "cal")
		seedOrg(t, s, "b", "amy", "bob")
		answered := func(org, from, to, question, text string, shared bool) db.Message {
			t.Helper()
			m := ask(t, s, org, from, to, question, t0)
			mustTx(t, s, func(q db.Queries) error {
				seq, err := q.AllocateEvent(t.Context(), org)
				if err != nil {
					return err
				}
				var at *time.Time
				if shared {
					at = ptr(t0)
				}
				return q.AnswerMessage(t.Context(), org, m.ID, text, t0, seq, at)
			})
			return m
		}
		shared := answered("a", "amy", "bob", "What is the retry logic?", "Retries with backoff.", true)
		mine := answered("a", "amy", "bob", "Why was my retry budget cut?", "The budget was halved.", false)
		others := answered("a", "cal", "bob", "Is the deploy budget final?", "Yes, the budget is final.", false)
		otherOrg := answered("b", "amy", "bob", "What is the retry logic?", "Other organization: retries.", true)
		search := func(org, user string, terms ...string) []int64 {
			t.Helper()
			var ids []int64
			view(t, s, func(q db.Queries) error {
				found, err := q.SearchMessages(t.Context(), org, user, db.Search{Terms: terms}, 10)
				for _, m := range found {
					ids = append(ids, m.ID)
				}
				return err
			})
			return ids
		}
		check := func(when string) {
			t.Helper()
			for _, c := range []struct {
				org, user string
				terms     []string
				want      []int64
			}{
				{"a", "cal", []string{"retries"}, []int64{shared.ID}},          // the shared one, another form of the word
				{"a", "amy", []string{"retry"}, []int64{mine.ID, shared.ID}},   // her own too, newest first
				{"a", "bob", []string{"budget"}, []int64{others.ID, mine.ID}},  // bob answered both
				{"a", "amy", []string{"budget"}, []int64{mine.ID}},             // not cal's private one
				{"a", "cal", []string{"budget"}, []int64{others.ID}},           // not amy's private one
				{"a", "", []string{"budget"}, nil},                             // shared answers only
				{"a", "cal", []string{"retry", "budget"}, nil},                 // all words, in one answer she may see
				{"b", "amy", []string{"retry", "logic"}, []int64{otherOrg.ID}}, // b's, not a's
				{"b", "bob", []string{"budget"}, nil},                          // a's amy and bob are not b's
			} {
				if got := search(c.org, c.user, c.terms...); !cmp.Equal(got, c.want) {
					t.Errorf("%s: SearchMessages(%s, %q, %q) = %v, want %v", when, c.org, c.user, c.terms, got, c.want)
				}
			}
		}
		check("after answering")

		// Three words or more: common words (more than a rare word's share of a
		// group) and a rare one, in both ways of matching them (see searchGroup).
		var many []int64
		for i := range 70 {
			text := "Common words of alpha, again."
			if i == 20 {
				text = "Common words of alpha, and a zebra."
			}
			many = append(many, answered("a", "cal", "bob", "Which alpha words?", text, true).ID)
		}
		slices.Reverse(many)
		threeWords := func(when string) {
			t.Helper()
			if got, want := search("a", "amy", "alpha", "common", "words"), many[:10]; !cmp.Equal(got, want) {
				t.Errorf("%s: three common words = %v, want the newest ten %v", when, got, want)
			}
			if got, want := search("a", "amy", "alpha", "zebra", "common"), []int64{many[49]}; !cmp.Equal(got, want) {
				t.Errorf("%s: two common words and a rare one = %v, want %v", when, got, want)
			}
			if got := search("a", "amy", "alpha", "zebra", "budget"); len(got) != 0 {
				t.Errorf("%s: words no answer holds together = %v, want nothing", when, got)
			}
		}
		threeWords("before listing")
		// The word lists of SQLite (migration 00012), in blocks of a few keys,
		// and a last answer after them, which FTS5 finds.
		if err := db.ListSearch(t.Context(), s, 3, 0); err != nil {
			t.Fatalf("ListSearch() = %v", err)
		}
		answered("a", "cal", "bob", "Which alpha words?", "None.", true)
		check("after listing")
		threeWords("after listing")

		m, err := db.OpenMigrator(t.Context(), cfg)
		if err != nil {
			t.Fatalf("OpenMigrator() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		// Down the migration that keeps an answer under its readers (00011 on
		// SQLite, 00012 on PostgreSQL), and on SQLite the lists after it, then
		// up again: the index is rebuilt from what is stored.
		downs := map[string]int{"sqlite": 2, "postgres": 1}[s.Backend()]
		for range downs {
			if _, err := m.Down(t.Context()); err != nil {
				t.Fatalf("Down() = %v", err)
			}
		}
		if n, err := m.Up(t.Context()); err != nil || n != downs {
			t.Fatalf("Up() = %d, %v; want %d, nil", n, err, downs)
		}
		check("after the index was rebuilt")
		threeWords("after the index was rebuilt")
		if err := db.ListSearch(t.Context(), s, 3, 0); err != nil {
			t.Fatalf("ListSearch() = %v", err)
		}

		mustTx(t, s, func(q db.Queries) error {
			_, err := q.DeleteConversation(t.Context(), db.Conversation{OrgID: "a", ThreadID: mine.ThreadID})
			return err
		})
		if got := search("a", "amy", "retry", "budget"); len(got) != 0 {
			t.Errorf("after deleting the conversation, amy finds %v; want nothing", got)
		}
		if got := search("a", "bob", "budget"); !slices.Equal(got, []int64{others.ID}) {
			t.Errorf("after deleting amy's conversation, bob finds %v; want only cal's", got)
		}
		mustTx(t, s, func(q db.Queries) error {
			_, err := q.DeleteOrganization(t.Context(), "a")
			return err
		})
		seedOrg(t, s, "a", "amy", "bob", "cal")
		for _, user := range []string{"amy", "bob", "cal", ""} {
			if got := search("a", user, "retry"); len(got) != 0 {
				t.Errorf("a new organization a: %q finds %v; want nothing of the deleted one", user, got)
			}
		}
		if got := search("b", "amy", "retry"); !slices.Equal(got, []int64{otherOrg.ID}) {
			t.Errorf("after deleting a, b's amy finds %v; want b's answer", got)
		}
	})
}

// TestSearchWaysAgree: every way a search may read its lists gives the
// newest answers the user may see that hold the words (or any of them),
// the same on both backends. With the sizes measured at 1M a search of a
// few hundred answers walks them all on PostgreSQL and probes a single
// row of each word on SQLite, so the test also runs with sizes that send
// it every other way: on PostgreSQL a first walk of four answers, then
// walks of at most eight or the GIN index for the rest; on SQLite the
// pairs of words from a probe of two rows, or the whole AND, and then the
// word lists in small blocks, with and without answers after them.
func TestSearchWaysAgree(t *testing.T) {
	t.Parallel()
	words := []struct {
		word  string
		every int // the word is in every every-th answer
		at    []int
	}{
		{"alpha", 2, nil}, {"bravo", 3, nil}, {"charlie", 5, nil}, {"delta", 7, nil}, {"echo", 11, nil},
		{"foxtrot", 0, []int{100, 140, 200}}, {"golf", 0, []int{140, 150}},
	}
	users := []string{"amy", "bob", "cal", "dan"}
	type answer struct {
		id       int64
		from, to string
		shared   bool
		words    map[string]bool
	}
	const n = 240
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		s := openStore(t, cfg)
		seedOrg(t, s, "a", users...)
		seedOrg(t, s, "b", users...)
		var answers []answer // org a's, in answer order
		for i := 1; i <= n; i++ {
			a := answer{from: users[i%4], to: users[(i/4+i+1)%4], shared: i%3 == 0, words: map[string]bool{}}
			if a.to == a.from {
				a.to = users[(i+1)%4]
			}
			var text []string
			for _, w := range words {
				if (w.every > 0 && i%w.every == 0) || slices.Contains(w.at, i) {
					text, a.words[w.word] = append(text, w.word), true
				}
			}
			for _, org := range []string{"a", "b"} {
				m := ask(t, s, org, a.from, a.to, fmt.Sprintf("Question %d?", i), t0)
				mustTx(t, s, func(q db.Queries) error {
					seq, err := q.AllocateEvent(t.Context(), org)
					if err != nil {
						return err
					}
					var at *time.Time
					if a.shared {
						at = ptr(t0)
					}
					return q.AnswerMessage(t.Context(), org, m.ID, "Answer: "+strings.Join(text, " ")+".", t0, seq, at)
				})
				if org == "a" {
					a.id = m.ID
				}
			}
			answers = append(answers, a)
			if i%20 == 0 && cfg.DatabaseURL != "" { // every 20 answers a new bucket of answer order (migration 00013)
				for _, org := range []string{"a", "b"} {
					dbtest.PGExec(t, cfg.DatabaseURL, "UPDATE organizations SET last_event_seq = last_event_seq + 16384 WHERE id = '"+org+"'")
				}
			}
		}
		// want is what a search must find: the newest limit answers user may
		// see holding every word (or any), found by reading them all.
		want := func(user string, search db.Search, limit int) []int64 {
			var ids []int64
			for i := len(answers) - 1; i >= 0 && len(ids) < limit; i-- {
				a := answers[i]
				if !a.shared && a.from != user && a.to != user {
					continue
				}
				held := 0
				for _, w := range search.Terms {
					if a.words[w] {
						held++
					}
				}
				if held == len(search.Terms) || (search.Any && held > 0) {
					ids = append(ids, a.id)
				}
			}
			return ids
		}
		searches := []db.Search{
			{Terms: []string{"alpha"}}, {Terms: []string{"foxtrot"}}, {Terms: []string{"alpha", "bravo"}},
			{Terms: []string{"alpha", "bravo", "charlie"}}, {Terms: []string{"charlie", "delta", "echo"}},
			{Terms: []string{"alpha", "foxtrot", "bravo"}}, {Terms: []string{"bravo", "foxtrot", "golf"}},
			{Terms: []string{"delta", "echo", "foxtrot"}}, {Terms: []string{"alpha", "charlie", "delta", "echo"}},
			{Terms: []string{"golf", "echo", "alpha"}},
			{Terms: []string{"foxtrot", "golf"}, Any: true}, {Terms: []string{"delta", "echo"}, Any: true},
		}
		ways := map[string]*db.SearchSizes{
			"as at 1M":                nil,
			"GIN after a short walk":  {Probe: 2, PairMost: 1 << 30, WalkFirst: 4, WalkMost: 8, GINCost: 0},
			"short walks to the end":  {Probe: 2, PairMost: 0, WalkFirst: 4, WalkMost: 8, GINCost: 1 << 30},
			"a second walk, then GIN": {Probe: 3, PairMost: 1 << 30, WalkFirst: 16, WalkMost: 4, GINCost: 4},
			"GIN in windows":          {Probe: 2, PairMost: 0, WalkFirst: 16, WalkMost: 4, GINCost: 0, BucketsMost: 64},
			"GIN in one-bucket steps": {Probe: 2, PairMost: 0, WalkFirst: 2, WalkMost: 4, GINCost: 0, BucketsMost: 1},
		}
		run := func(ways map[string]*db.SearchSizes) {
			for way, sizes := range ways {
				for _, search := range searches {
					if sizes != nil {
						search = search.WithSizes(*sizes)
					}
					for _, user := range []string{"amy", "cal", ""} {
						for _, limit := range []int{5, 50} {
							var got []int64
							view(t, s, func(q db.Queries) error {
								found, err := q.SearchMessages(t.Context(), "a", user, search, limit)
								for _, m := range found {
									got = append(got, m.ID)
								}
								return err
							})
							if w := want(user, search, limit); !slices.Equal(got, w) {
								t.Errorf("%s: %q searching %q (any %v, limit %d) = %v, want %v", way, user, search.Terms, search.Any, limit, got, w)
							}
						}
					}
				}
			}
		}
		run(ways)
		if s.Backend() != "sqlite" {
			return
		}
		// The word lists (migration 00012), in blocks of two bytes of keys:
		// listed up to answer 100 of each organization, FTS5 after; then FTS5
		// alone, as when too much is not listed; then all listed.
		if err := db.ListSearch(t.Context(), s, 2, 100); err != nil {
			t.Fatalf("ListSearch() = %v", err)
		}
		run(map[string]*db.SearchSizes{
			"lists, then FTS5":          nil,
			"FTS5 when too much is new": {Probe: 2, PairMost: 1 << 30, TailMost: 10},
		})
		if err := db.ListSearch(t.Context(), s, 2, 0); err != nil {
			t.Fatalf("ListSearch() = %v", err)
		}
		run(map[string]*db.SearchSizes{"lists": nil})
	})
}

// TestSearchListsAfterDeletes: answers deleted after SQLite listed them
// (migration 00012) are never found, a search still fills its page with
// the answers before them, and a new answer never takes a listed key (the
// newest answer's key would otherwise be used again, and the new answer
// found by the deleted one's words). The lister lists what is answered
// while it runs. PostgreSQL gives the same results.
func TestSearchListsAfterDeletes(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		s := openStore(t, cfg)
		seedOrg(t, s, "a", "amy", "bob")
		answer := func(question, text string) db.Message {
			t.Helper()
			m := ask(t, s, "a", "amy", "bob", question, t0)
			mustTx(t, s, func(q db.Queries) error {
				seq, err := q.AllocateEvent(t.Context(), "a")
				if err != nil {
					return err
				}
				return q.AnswerMessage(t.Context(), "a", m.ID, text, t0, seq, ptr(t0))
			})
			return m
		}
		var ids []int64
		for i := range 6 {
			ids = append(ids, answer(fmt.Sprintf("Alpha %d?", i), "Alpha and beta.").ID)
		}
		if err := db.ListSearch(t.Context(), s, 2, 0); err != nil {
			t.Fatalf("ListSearch() = %v", err)
		}
		search := func(limit int, terms ...string) []int64 {
			t.Helper()
			var got []int64
			view(t, s, func(q db.Queries) error {
				found, err := q.SearchMessages(t.Context(), "a", "bob", db.Search{Terms: terms}, limit)
				for _, m := range found {
					got = append(got, m.ID)
				}
				return err
			})
			return got
		}
		for _, id := range ids[4:] { // the two newest
			mustTx(t, s, func(q db.Queries) error {
				_, err := q.DeleteConversation(t.Context(), db.Conversation{OrgID: "a", ThreadID: id})
				return err
			})
		}
		if got, want := search(3, "alpha", "beta"), []int64{ids[3], ids[2], ids[1]}; !slices.Equal(got, want) {
			t.Errorf("after deleting the two newest, a page of 3 = %v, want %v", got, want)
		}
		gamma := answer("Gamma?", "Gamma and delta.")
		if got, want := search(10, "alpha", "beta"), []int64{ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(got, want) {
			t.Errorf("after a new answer without the words = %v, want %v", got, want)
		}
		if got, want := search(10, "gamma", "delta"), []int64{gamma.ID}; !slices.Equal(got, want) {
			t.Errorf("the new answer's words = %v, want %v", got, want)
		}

		// The lister lists the new answer, and one answered while it runs.
		db.StartListing(s, 10*time.Millisecond)
		later := answer("Gamma again?", "Gamma and delta, again.")
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			through, newest, err := db.SearchListed(t.Context(), s, "a")
			if err != nil {
				t.Fatal(err)
			}
			if through == newest {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("the lister listed through key %d in 10s; want %d", through, newest)
			}
		}
		if got, want := search(10, "gamma", "delta"), []int64{later.ID, gamma.ID}; !slices.Equal(got, want) {
			t.Errorf("after the lister ran = %v, want %v", got, want)
		}
	})
}
