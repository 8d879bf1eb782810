package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// answer drafts and sends text as cred's answer to message id, shared with
// the organization or not, the way a client without dialogs does.
func (f *fixture) answer(cred Credentials, id int64, text string, share bool) SentResult {
	f.t.Helper()
	ctx := f.t.Context()
	if _, err := f.s.ProposeWith(ctx, cred, id, text, share); err != nil {
		f.t.Fatalf("Propose(%d) = %v", id, err)
	}
	out, err := f.s.Send(ctx, cred, id, text, Approval{Share: share})
	if err != nil || out.Sent == nil {
		f.t.Fatalf("Send(%d) = %+v, %v; want sent", id, out, err)
	}
	return *out.Sent
}

// ask asks a question and fails the test if it is refused.
func (f *fixture) ask(cred Credentials, in AskInput) AskResult {
	f.t.Helper()
	res, err := f.s.AskWith(f.t.Context(), cred, in)
	if err != nil {
		f.t.Fatalf("AskWith(%+v) = %v", in, err)
	}
	return res
}

// turnLines renders a conversation as "who kind: text" lines.
func turnLines(turns []Turn) []string {
	lines := make([]string, len(turns))
	for i, t := range turns {
		lines[i] = fmt.Sprintf("%s %s %d: %s", t.By.UserID, t.Kind, t.MessageID, t.Text)
	}
	return lines
}

// TestThreadTurns: a question, a clarification asked back, its answer, the
// answer, a follow-up and its answer form one conversation. Each turn
// arrives where a first question or answer does (inbox, replies, events),
// carries the conversation's id, and get_thread shows all turns in the
// order sent, with who wrote each, to both people and to no one else.
func TestThreadTurns(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john := umarAndJohn(t, s)
		f.user("acme", "cal")
		cal := Credentials{Token: f.login("acme", "cal")}
		f.org("other")
		f.user("other", "eve")
		eve := Credentials{Token: f.login("other", "eve")}

		q1 := f.ask(umar, AskInput{To: "john", Question: "What is the retry logic?"})
		f.advance(time.Second)
		c1 := f.ask(john, AskInput{FollowUpTo: q1.MessageID, Question: "Which service do you mean?"})
		if c1.ToUserID != "umar" || c1.ThreadID != q1.MessageID || c1.FollowUpTo != q1.MessageID {
			t.Fatalf("clarification = %+v; want it to umar in conversation %d", c1, q1.MessageID)
		}
		// Umar's inbox shows the clarification with what came before it.
		in, err := f.s.Inbox(ctx, umar, 0)
		if err != nil || len(in.Questions) != 1 || in.Questions[0].ThreadID != q1.MessageID ||
			!cmp.Equal(turnLines(in.Questions[0].Earlier), []string{"umar question 1: What is the retry logic?"}) {
			t.Fatalf("umar's inbox = %+v, %v; want the clarification with the first question before it", in, err)
		}
		f.advance(time.Second)
		f.answer(umar, c1.MessageID, "The payments service.", false)
		rep, err := f.s.CheckReplies(ctx, john, "", "")
		if err != nil || len(rep.Replies) != 1 || rep.Replies[0].ThreadID != q1.MessageID || rep.Replies[0].Answer != "The payments service." {
			t.Fatalf("john's replies = %+v, %v; want umar's clarification in conversation %d", rep, err, q1.MessageID)
		}
		f.advance(time.Second)
		f.answer(john, q1.MessageID, "Three attempts with exponential backoff.", false)
		f.advance(time.Second)
		f1 := f.ask(umar, AskInput{FollowUpTo: c1.MessageID, Question: "And idempotency keys?"})
		if f1.ToUserID != "john" || f1.ThreadID != q1.MessageID {
			t.Fatalf("follow-up = %+v; want it to john in conversation %d", f1, q1.MessageID)
		}
		in, err = f.s.Inbox(ctx, john, 0)
		if err != nil || len(in.Questions) != 1 || len(in.Questions[0].Earlier) != 4 {
			t.Fatalf("john's inbox = %+v, %v; want the follow-up with 4 earlier turns", in, err)
		}
		f.advance(time.Second)
		f.answer(john, f1.MessageID, "Yes, keyed by order id.", false)

		want := []string{
			"umar question 1: What is the retry logic?",
			"john question 2: Which service do you mean?",
			"umar answer 2: The payments service.",
			"john answer 1: Three attempts with exponential backoff.",
			"umar question 3: And idempotency keys?",
			"john answer 3: Yes, keyed by order id.",
		}
		for name, cred := range map[string]Credentials{"umar": umar, "john": john} {
			for _, id := range []int64{q1.MessageID, c1.MessageID, f1.MessageID} {
				th, err := f.s.GetThread(ctx, cred, id)
				if err != nil || th.ThreadID != q1.MessageID || !cmp.Equal(turnLines(th.Turns), want) || len(th.Unanswered) != 0 {
					t.Errorf("%s: GetThread(%d) = %v, %+v; want\n%s", name, id, err, turnLines(th.Turns), strings.Join(want, "\n"))
				}
			}
		}
		// Events: umar's and john's, in commit order, all in the conversation.
		for name, tc := range map[string]struct {
			cred Credentials
			want []string
		}{
			"umar": {umar, []string{"question 2", "answer 1", "answer 3"}},
			"john": {john, []string{"question 1", "answer 2", "question 3"}},
		} {
			zero := 0.0
			ev, err := f.s.Wait(ctx, tc.cred, "", &zero)
			var got []string
			for _, e := range ev.Events {
				got = append(got, fmt.Sprintf("%s %d", e.Kind, e.MessageID))
				if e.ThreadID != q1.MessageID {
					t.Errorf("%s: event %+v has thread %d, want %d", name, e, e.ThreadID, q1.MessageID)
				}
			}
			if err != nil || !cmp.Equal(got, tc.want) {
				t.Errorf("%s: Wait = %v, %v; want %v", name, got, err, tc.want)
			}
		}

		// Someone outside the conversation, in the organization or not,
		// cannot see it or continue it: the same answer as a missing message.
		missing := noConversation(99).Error()
		for name, cred := range map[string]Credentials{"cal": cal, "eve": eve} {
			for _, id := range []int64{q1.MessageID, 99} {
				wantErr := strings.ReplaceAll(missing, "99", fmt.Sprint(id))
				if _, err := f.s.GetThread(ctx, cred, id); err == nil || err.Error() != wantErr {
					t.Errorf("%s: GetThread(%d) = %v, want %q", name, id, err, wantErr)
				}
				if _, err := f.s.AskWith(ctx, cred, AskInput{FollowUpTo: id, Question: "Me too?"}); err == nil || err.Error() != wantErr {
					t.Errorf("%s: follow-up to %d = %v, want %q", name, id, err, wantErr)
				}
			}
		}
	})
}

// TestFollowUpRefusals: a follow-up names its conversation only; bad
// combinations are refused with what to do, and nothing is stored.
func TestFollowUpRefusals(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john := umarAndJohn(t, s)
		f.user("acme", "cal")
		q1 := f.ask(umar, AskInput{To: "john", Question: "Retries?"})
		for _, tt := range []struct {
			in   AskInput
			want string
		}{
			{AskInput{FollowUpTo: q1.MessageID, To: "cal", Question: "x"}, `message 1 is your conversation with "john": leave to_user_id out`},
			{AskInput{FollowUpTo: q1.MessageID, Topic: "payments", Question: "x"}, "leave topic out"},
			{AskInput{To: "john", Topic: "payments", Question: "x"}, "not both"},
			{AskInput{FollowUpTo: -1, Question: "x"}, "follow_up_to must be a message id"},
			{AskInput{FollowUpTo: q1.MessageID, Question: "  "}, "question"},
		} {
			_, err := f.s.AskWith(ctx, umar, tt.in)
			var re *Error
			if !errors.As(err, &re) || re.Kind != KindBadInput || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AskWith(%+v) = %v, want bad input containing %q", tt.in, err, tt.want)
			}
		}
		// The same person named explicitly is fine.
		if res := f.ask(umar, AskInput{FollowUpTo: q1.MessageID, To: "John", Question: "And backoff?"}); res.MessageID != 2 {
			t.Errorf("follow-up naming john = %+v; want message 2 (the refusals stored nothing)", res)
		}
		in, _ := f.s.Inbox(ctx, john, 0)
		if len(in.Questions) != 2 {
			t.Errorf("john's inbox holds %d questions, want 2", len(in.Questions))
		}
	})
}

// searchTeam is an organization where john answered umar in the open
// (shared) and in private, and another organization with the same words.
func searchTeam(t *testing.T, s db.Store) (f *fixture, umar, john, cal, eve Credentials) {
	t.Helper()
	f, umar, john = umarAndJohn(t, s)
	f.user("acme", "cal")
	cal = Credentials{Token: f.login("acme", "cal")}
	f.org("other")
	f.user("other", "eve")
	f.user("other", "zed")
	eve = Credentials{Token: f.login("other", "eve")}
	zed := Credentials{Token: f.login("other", "zed")}

	shared := f.ask(umar, AskInput{To: "john", Question: "What is the retry logic in alpha-repo?"})
	f.advance(time.Second)
	f.answer(john, shared.MessageID, "Three retries with exponential backoff, then the dead-letter queue.", true)
	f.advance(time.Second)
	private := f.ask(umar, AskInput{To: "john", Question: "Why was my retry budget cut?"})
	f.advance(time.Second)
	f.answer(john, private.MessageID, "Budget review: the secret project retrying too much.", false)
	f.advance(time.Second)
	other := f.ask(eve, AskInput{To: "zed", Question: "What is the retry logic in alpha-repo?"})
	f.answer(zed, other.MessageID, "Other organization's retry answer, shared there.", true)
	// More shared answers, to rank: one mentions the words once, in the answer.
	q := f.ask(cal, AskInput{To: "john", Question: "How do deploys work?"})
	f.advance(time.Second)
	f.answer(john, q.MessageID, "Deploys retry once on failure.", true)
	return f, umar, john, cal, eve
}

// foundLines renders search results.
func foundLines(r SearchResult) []string {
	var lines []string
	for _, x := range r.Results {
		lines = append(lines, fmt.Sprintf("%d %s→%s shared=%t: %s", x.MessageID, x.AskedBy.UserID, x.AnsweredBy.UserID, x.Shared, x.Question))
	}
	return lines
}

// TestSearchAnswers: a shared answer is found by a third person with other
// forms of the same words; a private one only by its two people; another
// organization's never, even for the exact words; and both backends return
// exactly the same results.
func TestSearchAnswers(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		results = map[string]string{}
	)
	t.Run("backends", func(t *testing.T) {
		dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
			ctx := t.Context()
			f, umar, john, cal, eve := searchTeam(t, s)
			search := func(cred Credentials, query string) SearchResult {
				t.Helper()
				r, err := f.s.SearchAnswers(ctx, cred, query)
				if err != nil {
					t.Fatalf("SearchAnswers(%q) = %v", query, err)
				}
				return r
			}
			// Cal asks with other forms of the words: "retries" finds "retry".
			got := foundLines(search(cal, "retries logic"))
			if want := []string{"1 umar→john shared=true: What is the retry logic in alpha-repo?"}; !cmp.Equal(got, want) {
				t.Errorf("cal: retries logic = %q, want %q", got, want)
			}
			// Cal does not see the private conversation; umar and john do.
			if got := foundLines(search(cal, "budget")); len(got) != 0 {
				t.Errorf("cal: budget = %q; want nothing (a private answer)", got)
			}
			for name, cred := range map[string]Credentials{"umar": umar, "john": john} {
				if got := foundLines(search(cred, "budgets")); !cmp.Equal(got, []string{"2 umar→john shared=false: Why was my retry budget cut?"}) {
					t.Errorf("%s: budgets = %q; want their own private conversation", name, got)
				}
			}
			// Ranking: both words in the question first, then fewer, newer first.
			all := search(umar, "retry")
			if got := foundLines(all); len(got) != 3 || !strings.HasPrefix(got[0], "2 ") || !strings.HasPrefix(got[1], "1 ") || !strings.HasPrefix(got[2], "3 ") {
				t.Errorf("umar: retry = %q; want the private question and the shared one (retry in question and answer, newer first), then the newest, deploy answer (retry in its answer only)", got)
			}
			// Another organization's answer is never found here, even word for word;
			// and eve never sees acme's.
			for _, r := range search(cal, "What is the retry logic in alpha-repo?").Results {
				if strings.Contains(r.Answer, "Other organization") {
					t.Errorf("cal found another organization's answer: %+v", r)
				}
			}
			for _, r := range search(eve, "exponential backoff dead letter").Results {
				t.Errorf("eve found %+v; want nothing from acme", r)
			}
			if _, err := f.s.SearchAnswers(ctx, cal, "the of and"); err == nil || !strings.Contains(err.Error(), "no words to search for") {
				t.Errorf("a search of stop words = %v; want a bad input saying what to do", err)
			}
			var page []string
			for _, q := range []string{"retry", "retries", "backoff", "deploy", "alpha repo", "queue letter"} {
				for _, c := range []Credentials{umar, john, cal} {
					page = append(page, strings.Join(foundLines(search(c, q)), "\n"))
				}
			}
			b, _ := json.Marshal(page)
			mu.Lock()
			results[s.Backend()] = string(b)
			mu.Unlock()
		})
	})
	if len(results) == 2 && results["sqlite"] != results["postgres"] {
		t.Errorf("search results differ between backends:\nsqlite:   %s\npostgres: %s", results["sqlite"], results["postgres"])
	}
}

// TestFindOwner: people are ranked by ownership, notes and shared answers,
// with a reason; deactivated people and the caller are never chosen; and
// ask_person by topic reaches the first.
func TestFindOwner(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f := newFixture(t, s)
		f.org("acme")
		admin := Admin{OrgID: "acme", Password: testAdminPassword}
		for _, u := range []NewUser{
			{UserID: "pat", Name: "Pat", Ownership: "payments-service", Notes: "billing and refunds"},
			{UserID: "al", Name: "Al", Ownership: "alpha-repo", Notes: "retries in the job runner"},
			{UserID: "old", Name: "Old", Ownership: "payments-service refunds retries"},
			{UserID: "umar", Name: "Umar", Ownership: "payments-service"},
		} {
			u.Password = testUserPassword
			if _, err := f.s.RegisterUser(ctx, admin, u); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.s.DeactivateUser(ctx, admin, "old"); err != nil {
			t.Fatal(err)
		}
		umar := Credentials{Token: f.login("acme", "umar")}
		res, err := f.s.FindOwner(ctx, umar, "refund retries in payments")
		if err != nil || len(res.People) != 2 || res.People[0].UserID != "pat" || res.People[1].UserID != "al" {
			t.Fatalf("FindOwner = %+v, %v; want pat then al (not old, deactivated; not umar, the caller)", res, err)
		}
		if r := res.People[0].Reason; !strings.Contains(r, `owns "payments-service" (payments)`) || !strings.Contains(r, "refund") {
			t.Errorf("pat's reason = %q; want the ownership and the notes that matched", r)
		}
		asked, err := f.s.AskWith(ctx, umar, AskInput{Topic: "refund retries in payments", Question: "How are refunds retried?"})
		if err != nil || asked.ToUserID != "pat" || !strings.Contains(asked.ChosenBecause, "payments-service") {
			t.Fatalf("ask by topic = %+v, %v; want it sent to pat, saying why", asked, err)
		}
		// A shared answer makes its answerer an owner of what it was about.
		al := Credentials{Token: f.login("acme", "al")}
		f.answer(Credentials{Token: f.login("acme", "pat")}, asked.MessageID, "Refund retries run in al's job runner.", true)
		q := f.ask(umar, AskInput{To: "al", Question: "Where do ledger exports live?"})
		f.answer(al, q.MessageID, "Ledger exports are in the nightly job.", true)
		res, err = f.s.FindOwner(ctx, umar, "ledger exports")
		if err != nil || len(res.People) != 1 || res.People[0].UserID != "al" ||
			!strings.Contains(res.People[0].Reason, "answered 1 shared question about ledger, exports") {
			t.Errorf("FindOwner(ledger exports) = %+v, %v; want al, for the shared answer", res, err)
		}
		if _, err := f.s.AskWith(ctx, umar, AskInput{Topic: "kubernetes", Question: "Who runs the cluster?"}); err == nil ||
			!strings.Contains(err.Error(), "no one in your organization owns") {
			t.Errorf("ask by an unowned topic = %v; want not found, saying what to do", err)
		}
	})
}

// TestShareIsApproved: the sharing choice is part of what the person
// approves. An Accept given for a private answer does not send it shared,
// and what is sent records the choice that was approved.
func TestShareIsApproved(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john := umarAndJohn(t, s)
		q := f.ask(umar, AskInput{To: "john", Question: "Retry logic?"})
		const text = "Three attempts."
		out, err := f.s.Send(ctx, john, q.MessageID, text, Approval{CanAsk: true})
		if err != nil || out.Ask == nil || out.Ask.Share {
			t.Fatalf("Send = %+v, %v; want a request to approve a private answer", out, err)
		}
		private := out.Ask.Key
		out, err = f.s.Send(ctx, john, q.MessageID, text, Approval{CanAsk: true, Key: private, Accepted: true, Share: true})
		if err != nil || out.Ask == nil || !out.Ask.Share || out.Ask.Key == private {
			t.Fatalf("Send(shared, with the private answer's approval) = %+v, %v; want a new request naming the sharing", out, err)
		}
		out, err = f.s.Send(ctx, john, q.MessageID, text, Approval{CanAsk: true, Key: out.Ask.Key, Accepted: true, Share: true})
		if err != nil || out.Sent == nil || !out.Sent.Shared {
			t.Fatalf("Send(shared, approved) = %+v, %v; want sent and shared", out, err)
		}
		f.user("acme", "cal")
		r, err := f.s.SearchAnswers(ctx, Credentials{Token: f.login("acme", "cal")}, "retry")
		if err != nil || len(r.Results) != 1 || !r.Results[0].Shared {
			t.Errorf("cal's search = %+v, %v; want the shared answer", r, err)
		}
	})
}

// TestSearchOddInput: whatever a person types, a search either runs or says
// what to do: no query syntax of either backend gets through, and no
// script, digit form or mark makes a backend fail.
func TestSearchOddInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, _, _, _ := searchTeam(t, s)
		for _, query := range []string{
			`"retry" OR NOT logic`, `retry & !logic | (x`, `retry:* <-> logic`, `NEAR(retry logic)`, `{body}: retry`,
			"日本語 テスト", "café crème", "１２３ retry", "ǅemal", "x-y_z.w/v", "e\u0301", "retry\x00logic", "🙂 retry",
			strings.Repeat("retry ", 200), "a b c d e f g h i j k l m n o p q r s t u v w x y z",
		} {
			_, err := f.s.SearchAnswers(ctx, umar, query)
			if err == nil {
				continue
			}
			var re *Error
			if !errors.As(err, &re) || re.Kind != KindBadInput {
				t.Errorf("SearchAnswers(%q) = %v; want results or a bad-input message", query, err)
			}
		}
		if _, err := f.s.FindOwner(ctx, umar, `"payments" OR 1=1; --`); err != nil {
			t.Errorf("FindOwner with query syntax = %v; want it read as words", err)
		}
	})
}

// TestShareWithDraft: without a dialog, the sharing choice is saved and
// shown with the draft, and send_response must ask for the same: the model
// cannot share what the person approved as private, or the reverse.
func TestShareWithDraft(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		f, umar, john := umarAndJohn(t, s)
		q := f.ask(umar, AskInput{To: "john", Question: "Retry logic?"})
		d, err := f.s.ProposeWith(ctx, john, q.MessageID, "Three attempts.", false)
		if err != nil || d.Share || d.Audience != "only the asker and you" {
			t.Fatalf("ProposeWith(private) = %+v, %v; want the audience said", d, err)
		}
		out, err := f.s.Send(ctx, john, q.MessageID, "Three attempts.", Approval{Share: true})
		if err == nil || !strings.Contains(err.Error(), "proposed with share false") || out.Sent != nil {
			t.Fatalf("Send(shared) of a private draft = %+v, %v; want refused, naming propose_response", out, err)
		}
		d, err = f.s.ProposeWith(ctx, john, q.MessageID, "Three attempts.", true)
		if err != nil || !d.Share || !strings.Contains(d.Audience, "everyone in your organization") {
			t.Fatalf("ProposeWith(shared) = %+v, %v", d, err)
		}
		if _, err := f.s.Send(ctx, john, q.MessageID, "Three attempts.", Approval{}); err == nil {
			t.Fatalf("Send(private) of a shared draft = nil; want refused")
		}
		if sent := f.answer(john, q.MessageID, "Three attempts.", true); !sent.Shared {
			t.Errorf("Send(shared) of the shared draft = %+v; want sent and shared", sent)
		}
	})
}
