package relay

import (
	"strings"
	"unicode"
)

// Words: how search_answers and find_owner read what a person typed.
//
// The backends find the matches (SQLite FTS5 with the Porter stemmer,
// PostgreSQL's english configuration); the rules rank them, from the texts
// the caller may see only, so the order is the same on both backends and no
// one else's private text can move a result (corpus-wide statistics such as
// FTS5's bm25 would).

// MaxSearchLen bounds a search or a topic.
const MaxSearchLen = 500

// maxTerms bounds the words of one search: more would only slow it.
const maxTerms = 12

// stopWords are PostgreSQL's english stop words: its to_tsquery drops
// them, so they are dropped before either backend sees the search, and an
// FTS5 search (which keeps every word) finds what PostgreSQL finds.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves what which who
		whom this that these those am is are was were be been being have has had having do does did doing a an
		the and but if or because as until while of at by for with about against between into through during
		before after above below to from up down in out on off over under again further then once here there
		when where why how all any both each few more most other some such no nor not only own same so than too
		very s t can will just don should now`) {
		m[w] = true
	}
	return m
}()

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// searchTerms are the distinct words of s worth searching for, in order:
// no stop words, at most maxTerms.
func searchTerms(s string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range words(s) {
		if stopWords[w] || seen[w] || len(w) > 64 {
			continue
		}
		seen[w] = true
		if terms = append(terms, w); len(terms) == maxTerms {
			break
		}
	}
	return terms
}

// stem reduces an English word to a key that its common inflections share
// ("retries", "retried", "retrying" and "retry" → "retri"; "payments" →
// "payment"): Porter's plural and -ed/-ing steps, enough to rank what the
// backends' full stemmers already matched.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") || strings.HasSuffix(w, "ied"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	for _, suffix := range []string{"ing", "ed"} {
		if base, ok := strings.CutSuffix(w, suffix); ok && len(base) >= 3 && strings.ContainsAny(base, "aeiouy") {
			w = base
			if n := len(w); n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			break
		}
	}
	if n := len(w); n > 2 && w[n-1] == 'y' && strings.ContainsAny(w[:n-1], "aeiou") {
		w = w[:n-1] + "i"
	}
	return w
}

// stems are the stems of the words of s, counted.
func stems(s string) map[string]int {
	m := map[string]int{}
	for _, w := range words(s) {
		m[stem(w)]++
	}
	return m
}
