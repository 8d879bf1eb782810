package relay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Shared answers and routing: search_answers finds answered questions the
// caller may see (shared with the organization, or their own), find_owner
// ranks people by what they own, what they wrote about themselves and what
// they answered in shared conversations.

const (
	// searchCandidates bounds the matches a search ranks: the newest ones.
	// Both backends pick the same ones, so results stay identical.
	searchCandidates = 50
	// searchPage is how many results a search returns.
	searchPage = 10
	// foundAnswerShown bounds an answer's text in a result (get_thread has all of it).
	foundAnswerShown = 600
	// ownersPage is how many people find_owner returns.
	ownersPage = 5
)

// Found is an answered question a search found.
type Found struct {
	MessageID  int64     `json:"message_id"`
	ThreadID   int64     `json:"thread_id"`
	AskedBy    Person    `json:"asked_by"`
	AnsweredBy Person    `json:"answered_by"`
	Question   string    `json:"question"`
	Answer     string    `json:"answer"`
	AnsweredAt time.Time `json:"answered_at"`
	// Shared says the whole organization can find it; otherwise it is one
	// of the caller's own conversations.
	Shared bool `json:"shared"`
	// Cut says Answer is the beginning of a longer answer.
	Cut bool `json:"answer_cut,omitempty"`
}

// SearchResult is the best matches of a search, best first.
type SearchResult struct {
	Query    string  `json:"query"`
	Results  []Found `json:"results"`
	Notice   string  `json:"notice"`
	NextStep string  `json:"next_step"`
}

// searchInput validates a search or a topic and returns its terms.
func searchInput(field, value string) ([]string, error) {
	v, err := text(field, value, true, MaxSearchLen)
	if err != nil {
		return nil, err
	}
	terms := searchTerms(v)
	if len(terms) == 0 {
		return nil, badInput("%s has no words to search for (only common words such as \"the\" or \"how\"): "+
			"name the thing itself, e.g. \"retry logic alpha-repo\"", field)
	}
	return terms, nil
}

// SearchAnswers finds answered questions matching query among those the
// caller may see: shared with the organization, or asked by or of them.
// Results are ranked by how many of the query's words they hold (in the
// question counting double), then newest first.
func (s *Service) SearchAnswers(ctx context.Context, cred Credentials, query string) (SearchResult, error) {
	terms, err := searchInput("query", query)
	if err != nil {
		return SearchResult{}, err
	}
	var res SearchResult
	err = s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		found, err := q.SearchMessages(ctx, c.user.OrgID, c.user.ID, db.Search{Terms: terms}, searchCandidates)
		if err != nil {
			return err
		}
		res = SearchResult{Query: strings.Join(terms, " "), Results: []Found{}, Notice: UntrustedNotice}
		for _, m := range rankFound(found, terms) {
			res.Results = append(res.Results, foundOf(m))
			if len(res.Results) == searchPage {
				break
			}
		}
		switch {
		case len(res.Results) == 0:
			res.NextStep = "Nothing answered matches. Ask someone: find_owner suggests who knows about a topic, " +
				"and ask_person takes a topic instead of a person."
		default:
			res.NextStep = "Show the user the best matches as the words of the people who wrote them. " +
				"get_thread shows a whole conversation; ask_person with follow_up_to continues one of yours."
		}
		return nil
	}))
	return res, err
}

// foundOf renders a search match.
func foundOf(m db.ThreadMessage) Found {
	f := Found{
		MessageID: m.ID, ThreadID: m.ThreadID, Question: m.Question, Answer: *m.AnswerText, AnsweredAt: *m.AnsweredAt,
		AskedBy: Person{UserID: m.FromUserID, Name: m.FromName}, AnsweredBy: Person{UserID: m.ToUserID, Name: m.ToName},
		Shared: m.SharedAt != nil,
	}
	if r := []rune(f.Answer); len(r) > foundAnswerShown {
		f.Answer, f.Cut = string(r[:foundAnswerShown-1])+"…", true
	}
	return f
}

// relevance scores a text for terms: each term found in the question counts
// 2 (more if repeated, up to 3 times), in the answer 1; a term found at all
// counts 10, so holding more of the words always ranks first.
func relevance(question, answer string, terms []string) int {
	qs, as := stems(question), stems(answer)
	score := 0
	for _, t := range terms {
		k := stem(t)
		nq, na := min(qs[k], 3), min(as[k], 3)
		if nq+na > 0 {
			score += 10 + 2*nq + na
		}
	}
	return score
}

// rankFound orders matches best first: by relevance, then newest answer.
func rankFound(found []db.ThreadMessage, terms []string) []db.ThreadMessage {
	scores := make(map[int64]int, len(found))
	for _, m := range found {
		scores[m.ID] = relevance(m.Question, *m.AnswerText, terms)
	}
	slices.SortStableFunc(found, func(a, b db.ThreadMessage) int {
		return cmp.Or(cmp.Compare(scores[b.ID], scores[a.ID]), cmp.Compare(*b.AnsweredSeq, *a.AnsweredSeq))
	})
	return found
}

// Owner is a person find_owner suggests, with why.
type Owner struct {
	Person
	Score  int    `json:"score"`
	Reason string `json:"reason"`
}

// Owners is who likely knows about a topic, best first.
type Owners struct {
	Topic    string  `json:"topic"`
	People   []Owner `json:"people"`
	Notice   string  `json:"notice"`
	NextStep string  `json:"next_step"`
}

// FindOwner ranks the active people of the caller's organization (not the
// caller) by what they own, their notes and profile notes, and the questions
// they answered in shared conversations.
func (s *Service) FindOwner(ctx context.Context, cred Credentials, topic string) (Owners, error) {
	terms, err := searchInput("topic", topic)
	if err != nil {
		return Owners{}, err
	}
	var res Owners
	err = s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		owners, err := rankOwners(ctx, q, c, terms)
		if err != nil {
			return err
		}
		res = Owners{Topic: strings.Join(terms, " "), People: owners[:min(len(owners), ownersPage)], Notice: UntrustedNotice}
		if len(res.People) == 0 {
			res.NextStep = "No one's ownership, notes or shared answers match. list_users shows everyone; " +
				"get_user_profile shows what a person owns."
		} else {
			res.NextStep = fmt.Sprintf("The best match is %s (%s). To ask them, call ask_person with to_user_id %q, "+
				"or with topic and ctalk picks the best match.", res.People[0].Name, res.People[0].Reason, res.People[0].UserID)
		}
		return nil
	}))
	return res, err
}

// rankOwners scores every active person but the caller for terms, best
// first, leaving out those who match nothing; ties go to the user id.
func rankOwners(ctx context.Context, q db.Queries, c caller, terms []string) ([]Owner, error) {
	users, err := q.ListUsers(ctx, c.user.OrgID)
	if err != nil {
		return nil, err
	}
	// Shared answers only: a private conversation must not route anyone.
	answers, err := q.SearchMessages(ctx, c.user.OrgID, "", db.Search{Terms: terms, Any: true}, searchCandidates)
	if err != nil {
		return nil, err
	}
	type tally struct {
		n     int
		terms []string
	}
	answered := map[string]*tally{}
	for _, m := range answers {
		t := answered[m.ToUserID]
		if t == nil {
			t = &tally{}
			answered[m.ToUserID] = t
		}
		t.n++
		for _, term := range matching(m.Question+" "+*m.AnswerText, terms) {
			if !slices.Contains(t.terms, term) {
				t.terms = append(t.terms, term)
			}
		}
	}
	var owners []Owner
	for _, u := range users {
		if u.DeactivatedAt != nil || u.ID == c.user.ID {
			continue
		}
		var (
			score   int
			reasons []string
		)
		if m := matching(u.Ownership, terms); len(m) > 0 {
			score += 3 * len(m)
			reasons = append(reasons, fmt.Sprintf("owns %q (%s)", clip(u.Ownership, 80), strings.Join(m, ", ")))
		}
		if m := matching(u.Notes+" "+u.ProfileNotes, terms); len(m) > 0 {
			score += len(m)
			reasons = append(reasons, "their notes mention "+strings.Join(m, ", "))
		}
		if t := answered[u.ID]; t != nil {
			score += min(t.n, 5)
			about := "this topic"
			if len(t.terms) > 0 {
				about = strings.Join(t.terms, ", ")
			}
			reasons = append(reasons, fmt.Sprintf("answered %d shared question%s about %s", t.n, plural(t.n), about))
		}
		if score > 0 {
			owners = append(owners, Owner{Person: Person{UserID: u.ID, Name: u.Name, Ownership: u.Ownership},
				Score: score, Reason: strings.Join(reasons, "; ")})
		}
	}
	slices.SortFunc(owners, func(a, b Owner) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.UserID, b.UserID)) })
	return owners, nil
}

// matching returns the terms whose stem is among the stems of s.
func matching(s string, terms []string) []string {
	have := stems(s)
	var m []string
	for _, t := range terms {
		if have[stem(t)] > 0 {
			m = append(m, t)
		}
	}
	return m
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
