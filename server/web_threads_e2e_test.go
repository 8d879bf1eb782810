package server_test

// The web pages of conversations, shared answers and search (issue 14),
// end to end over real HTTP on both backends: the thread page to its two
// people, to a third person and to another organization; a follow-up and a
// question asked back from the thread page reaching the other person; the
// share checkbox deciding what a third person's search finds; CSRF; and
// message text escaped in turns and search results.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// threadInbox is check_inbox with what the web pages here rely on.
type threadInbox struct {
	Questions []struct {
		MessageID int64  `json:"message_id"`
		ThreadID  int64  `json:"thread_id"`
		Question  string `json:"question"`
	} `json:"questions"`
}

// inOrder reports whether body holds every one of texts, in that order.
func inOrder(body string, texts ...string) bool {
	at := 0
	for _, s := range texts {
		i := strings.Index(body[at:], s)
		if i < 0 {
			return false
		}
		at += i + len(s)
	}
	return true
}

func TestWebThreads(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, logs := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		umarTok, johnTok := team(t, cs, "acme")
		registerUser(t, cs, "acme", "sara", "Sara", "alpha-repo docs")
		registerOrg(t, cs, "beta", "Beta")
		registerUser(t, cs, "beta", "eve", "Eve", "")

		john, umar, sara, eve := newBrowser(base), newBrowser(base), newBrowser(base), newBrowser(base)
		john.signIn(t, "acme", "john", userPassword)
		umar.signIn(t, "acme", "umar", userPassword)
		sara.signIn(t, "acme", "sara", userPassword)
		eve.signIn(t, "beta", "eve", userPassword)

		const (
			first    = `<script>alert(1)</script> How many refund retries do we make?`
			firstEsc = `&lt;script&gt;alert(1)&lt;/script&gt; How many refund retries do we make?`
			back     = "Which service do you mean?"
			backAns  = "payments-service, the refund worker."
			answer1  = "Three <b>retry</b> attempts with exponential backoff."
			private  = "What about idempotency keys for refunds?"
			privAns  = "Every refund carries an idempotency key."
			follow   = "And how long between the attempts?"
		)
		id1 := ask(t, cs, umarTok, "john", first)
		p1 := "/app/thread/" + strconv.FormatInt(id1, 10)
		q1 := "/app/q/" + strconv.FormatInt(id1, 10)

		// John opens the conversation of a question waiting for him: the form
		// reads as asking back; the question page's share box is off.
		page := john.get(t, p1)
		if page.status != http.StatusOK || !strings.Contains(page.body, "Ask back for clarification") ||
			!strings.Contains(page.body, firstEsc) || strings.Contains(page.body, "<script>") ||
			!strings.Contains(page.body, `href="/app/q/`+strconv.FormatInt(id1, 10)+`"`) {
			t.Fatalf("john's thread page = %d; want the question escaped, a link to answer it and the ask-back form\n%s", page.status, page.body)
		}
		qp := john.get(t, q1)
		if !strings.Contains(qp.body, `name="share" value="1"`) || strings.Contains(qp.body, " checked") ||
			!strings.Contains(qp.body, "Let everyone in Org acme find this question and answer") {
			t.Errorf("question page: want an unchecked share box naming the organization\n%s", qp.body)
		}

		// CSRF: a follow-up post without the session's token asks nothing.
		for name, form := range map[string]url.Values{
			"no csrf_token":          {"question": {"forged"}},
			"another session's csrf": {"question": {"forged"}, "csrf_token": {csrf(t, umar.get(t, "/app/asked"))}},
		} {
			if p := john.post(t, p1, form); p.status != http.StatusForbidden {
				t.Errorf("%s: follow-up post = %d, want 403", name, p.status)
			}
		}
		if got := callOK[threadInbox](t, cs, "check_inbox", args{"auth_token": umarTok}); len(got.Questions) != 0 {
			t.Fatalf("after forged follow-ups umar's inbox = %+v; want empty", got)
		}
		// An empty follow-up is refused with the rules' message.
		if p := john.post(t, p1, url.Values{"csrf_token": {csrf(t, page)}, "question": {"  "}}); p.status != http.StatusBadRequest ||
			!strings.Contains(p.body, `role="alert"`) {
			t.Errorf("empty follow-up = %d, want 400 with an alert\n%s", p.status, p.body)
		}

		// John asks back from the thread page: it reaches Umar's inbox in this conversation.
		p := john.post(t, p1, url.Values{"csrf_token": {csrf(t, page)}, "question": {back}})
		if p.status != http.StatusSeeOther || !strings.HasSuffix(p.location, "?ok=followup") {
			t.Fatalf("ask back = %d to %q\n%s", p.status, p.location, p.body)
		}
		in := callOK[threadInbox](t, cs, "check_inbox", args{"auth_token": umarTok})
		if len(in.Questions) != 1 || in.Questions[0].Question != back || in.Questions[0].ThreadID != id1 {
			t.Fatalf("umar's check_inbox after john asked back = %+v; want %q in conversation %d", in, back, id1)
		}
		id2 := in.Questions[0].MessageID
		if got := john.get(t, p.location); got.status != http.StatusOK || !strings.Contains(got.body, "Question sent") {
			t.Errorf("after asking back: %d, want the confirmation", got.status)
		}
		// Umar's inbox marks it a follow-up; its question page shows the earlier turn.
		if got := umar.get(t, "/app"); !strings.Contains(got.body, "follow-up in conversation "+strconv.FormatInt(id1, 10)) {
			t.Errorf("umar's inbox does not mark the follow-up\n%s", got.body)
		}
		if got := umar.get(t, "/app/q/"+strconv.FormatInt(id2, 10)); !strings.Contains(got.body, "Earlier in this conversation") ||
			!inOrder(got.body, firstEsc, back) || strings.Contains(got.body, "<script>") {
			t.Errorf("umar's question page lacks the earlier turn before the question\n%s", got.body)
		}
		answer(t, cs, umarTok, id2, backAns)

		// John answers, shared: the confirmation and the page say so.
		p = john.post(t, q1, url.Values{"csrf_token": {csrf(t, qp)}, "action": {"send"}, "answer": {answer1}, "share": {"1"}})
		if p.status != http.StatusSeeOther || p.location != q1+"?ok=sent" {
			t.Fatalf("send shared = %d to %q\n%s", p.status, p.location, p.body)
		}
		if got := john.get(t, p.location); !strings.Contains(got.body, "Answer sent and shared: everyone in Org acme can find") {
			t.Errorf("the confirmation does not say the answer is shared\n%s", got.body)
		}

		// Both people see all four turns, in the order they were sent.
		for who, b := range map[string]*browser{"umar": umar, "john": john} {
			got := b.get(t, p1)
			if got.status != http.StatusOK || !inOrder(got.body, firstEsc, back, backAns, "Three &lt;b&gt;retry&lt;/b&gt; attempts") ||
				!strings.Contains(got.body, "Ask a follow-up") || strings.Contains(got.body, "<script>") || strings.Contains(got.body, "<b>") {
				t.Errorf("%s's thread page = %d; want the four turns in order, escaped, and the follow-up form\n%s", who, got.status, got.body)
			}
		}

		// Sara, a third person, finds the shared answer with another form of
		// the word, and sees only its shared turns, without a form.
		s := sara.get(t, "/app/search?q="+url.QueryEscape("retry"))
		if s.status != http.StatusOK || !strings.Contains(s.body, firstEsc) || !strings.Contains(s.body, "Three &lt;b&gt;retry&lt;/b&gt;") ||
			!strings.Contains(s.body, "Shared") || !strings.Contains(s.body, `href="`+p1+`"`) || strings.Contains(s.body, "<script>") {
			t.Errorf("sara's search for retry = %d; want the shared answer, escaped, linking to its conversation\n%s", s.status, s.body)
		}
		st := sara.get(t, p1)
		if st.status != http.StatusOK || !inOrder(st.body, firstEsc, "Three &lt;b&gt;retry") || strings.Contains(st.body, back) ||
			strings.Contains(st.body, backAns) || strings.Contains(st.body, `name="question"`) {
			t.Errorf("sara's view of the shared thread = %d; want only the shared question and answer, no form\n%s", st.status, st.body)
		}
		if got := sara.post(t, p1, url.Values{"csrf_token": {csrf(t, s)}, "question": {"May I join?"}}); got.status != http.StatusNotFound {
			t.Errorf("sara posting a follow-up in their conversation = %d, want 404", got.status)
		}
		for _, tok := range []string{umarTok, johnTok} {
			if got := callOK[threadInbox](t, cs, "check_inbox", args{"auth_token": tok}); len(got.Questions) != 0 {
				t.Errorf("after sara's post an inbox holds %+v; want nothing asked", got)
			}
		}

		// An answer sent without the box ticked stays between the two.
		id3 := ask(t, cs, umarTok, "john", private)
		q3 := "/app/q/" + strconv.FormatInt(id3, 10)
		qp3 := john.get(t, q3)
		if p := john.post(t, q3, url.Values{"csrf_token": {csrf(t, qp3)}, "action": {"send"}, "answer": {privAns}}); p.status != http.StatusSeeOther {
			t.Fatalf("send private = %d\n%s", p.status, p.body)
		}
		if got := john.get(t, q3+"?ok=sent"); !strings.Contains(got.body, "Answer sent to Umar only.") {
			t.Errorf("the confirmation does not say the answer went to Umar only\n%s", got.body)
		}
		if got := sara.get(t, "/app/search?q=idempotency"); got.status != http.StatusOK || strings.Contains(got.body, "idempotency key") ||
			!strings.Contains(got.body, "Nothing answered matches") {
			t.Errorf("sara's search for a private answer = %d; want nothing found\n%s", got.status, got.body)
		}
		if got := umar.get(t, "/app/search?q=idempotency"); !strings.Contains(got.body, privAns) || !strings.Contains(got.body, "Yours") {
			t.Errorf("umar's search for his own private answer: want it, marked yours\n%s", got.body)
		}

		// One 404 for a private thread, another organization's and a missing one.
		for name, c := range map[string]struct {
			b    *browser
			path string
		}{
			"sara, a private thread": {sara, "/app/thread/" + strconv.FormatInt(id3, 10)},
			"eve, a shared thread":   {eve, p1},
			"eve, a private thread":  {eve, "/app/thread/" + strconv.FormatInt(id3, 10)},
			"sara, a malformed id":   {sara, "/app/thread/abc"},
		} {
			got, missing := c.b.get(t, c.path), c.b.get(t, "/app/thread/999999")
			if got.status != http.StatusNotFound || nonceAttr.ReplaceAllString(got.body, "") != nonceAttr.ReplaceAllString(missing.body, "") {
				t.Errorf("%s = %d; want the same 404 page as a missing id\n%s", name, got.status, got.body)
			}
		}
		if got := eve.get(t, "/app/search?q=refund+retries"); got.status != http.StatusOK || strings.Contains(got.body, "exponential backoff") ||
			!strings.Contains(got.body, "Nothing answered matches") {
			t.Errorf("eve's search for acme's exact words = %d; want nothing\n%s", got.status, got.body)
		}

		// A follow-up from the thread page reaches John in the conversation.
		page = umar.get(t, p1)
		if p := umar.post(t, p1, url.Values{"csrf_token": {csrf(t, page)}, "question": {follow}}); p.status != http.StatusSeeOther {
			t.Fatalf("umar's follow-up = %d\n%s", p.status, p.body)
		}
		in = callOK[threadInbox](t, cs, "check_inbox", args{"auth_token": johnTok})
		if len(in.Questions) != 1 || in.Questions[0].Question != follow || in.Questions[0].ThreadID != id1 {
			t.Fatalf("john's check_inbox after the follow-up = %+v; want %q in conversation %d", in, follow, id1)
		}
		if got := umar.get(t, "/app/asked"); !strings.Contains(got.body, "follow-up in conversation "+strconv.FormatInt(id1, 10)) ||
			!strings.Contains(got.body, `href="/app/thread/`+strconv.FormatInt(in.Questions[0].MessageID, 10)+`"`) {
			t.Errorf("umar's Asked page does not mark the follow-up or link to its conversation\n%s", got.body)
		}

		// Searches with nothing to search for show the rules' message.
		for q, want := range map[string]string{"": "query is required", "the how": "no words to search for"} {
			got := sara.get(t, "/app/search?q="+url.QueryEscape(q))
			if got.status != http.StatusBadRequest || !strings.Contains(got.body, want) {
				t.Errorf("search %q = %d; want 400 with the rules' message\n%s", q, got.status, got.body)
			}
		}
		if got := sara.get(t, "/app/search"); got.status != http.StatusOK || strings.Contains(got.body, `role="alert"`) {
			t.Errorf("the search page without a query = %d; want the form alone", got.status)
		}

		// Asking by topic: ctalk says whom it chose and why.
		asked := sara.get(t, "/app/asked")
		got := sara.post(t, "/app/asked", url.Values{"csrf_token": {csrf(t, asked)}, "topic": {"refund retries in payments"}, "question": {"Who reviews refunds?"}})
		if got.status != http.StatusOK || !strings.Contains(got.body, "Question sent to John (john), chosen because: owns") {
			t.Errorf("asking by topic = %d; want it sent to john with the reason\n%s", got.status, got.body)
		}
		got = sara.post(t, "/app/asked", url.Values{"csrf_token": {csrf(t, asked)}, "to_user_id": {"umar"}, "topic": {"payments"}, "question": {"Both?"}})
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, "Choose a person or name a topic") {
			t.Errorf("asking a person and a topic = %d; want 400\n%s", got.status, got.body)
		}
		if in := callOK[threadInbox](t, cs, "check_inbox", args{"auth_token": umarTok}); len(in.Questions) != 0 {
			t.Errorf("umar's inbox after the refused ask = %+v; want nothing", in)
		}

		for _, secret := range []string{answer1, privAns, follow, back} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log contains a message text (%.12s…)", secret)
			}
		}
	})
}
