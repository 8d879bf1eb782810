package server_test

// End-to-end tests: the real HTTP handler over a real store on both backends,
// driven by the official MCP Go SDK client as a user's Claude would drive it.

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mcp"
)

func TestE2EWalkthrough(t *testing.T) {
	t.Parallel()
	for _, proto := range []struct{ asked, want string }{{protocolSession, protocolSession}, {"", protocolStateless}} {
		t.Run("protocol="+proto.want, func(t *testing.T) {
			t.Parallel()
			dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
				cs := connectTo(t, newEnv(t, s).url, "", proto.asked)
				if got := cs.InitializeResult().ProtocolVersion; got != proto.want {
					t.Errorf("negotiated protocol %q, want %q", got, proto.want)
				}
				walkthrough(t, cs)
			})
		})
	}
}

// TestE2EOrgIsolation: two organizations with the same user ids see nothing
// of each other, and the other's ids answer exactly like ids that do not exist.
func TestE2EOrgIsolation(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		cs := newEnv(t, s).connect(t, "")
		aUmar, aJohn := team(t, cs, "ai-company")
		registerOrg(t, cs, "other-co", "Other Co")
		registerUser(t, cs, "other-co", "umar", "Umar Other", "billing")
		registerUser(t, cs, "other-co", "john", "John Other", "beta-repo")
		bUmar, bJohn := login(t, cs, "other-co", "umar"), login(t, cs, "other-co", "john")

		// What other-co sees; ids 1 and 2 and user alice exist only in ai-company, and only later.
		probe := func() map[string]string {
			out := map[string]string{}
			rec := func(name, tool string, a args) {
				res := call(t, cs, tool, a)
				out[name] = fmt.Sprintf("isError=%v %s", res.IsError, resultText(res))
			}
			rec("list_users", "list_users", args{"auth_token": bUmar})
			rec("check_inbox john", "check_inbox", args{"auth_token": bJohn})
			rec("check_replies umar", "check_replies", args{"auth_token": bUmar})
			rec("profile john", "get_user_profile", args{"auth_token": bUmar, "user_id": "john"})
			rec("profile alice", "get_user_profile", args{"auth_token": bUmar, "user_id": "alice"})
			rec("ask alice", "ask_person", args{"auth_token": bUmar, "to_user_id": "alice", "question": "Hi?"})
			rec("login alice", "login", args{"org_id": "other-co", "user_id": "alice", "password": userPassword})
			for _, id := range []int{1, 2} {
				rec(fmt.Sprint("propose ", id), "propose_response", args{"auth_token": bJohn, "message_id": id, "draft_text": "B draft"})
				rec(fmt.Sprint("send ", id), "send_response", args{"auth_token": bJohn, "message_id": id, "final_text": "B answer"})
			}
			return out
		}
		before := probe() // nothing exists in ai-company yet: every id above is truly nonexistent

		registerUser(t, cs, "ai-company", "alice", "Alice", "infra")
		aAlice := login(t, cs, "ai-company", "alice")
		ask(t, cs, aUmar, "john", seedQuestion)
		ask(t, cs, aAlice, "john", "Is payments-service deployed?")
		afterAsk := probe()
		answer(t, cs, aJohn, 1, seedAnswer)
		afterAnswer := probe()
		for name, got := range map[string]map[string]string{"after ai-company asked": afterAsk, "after ai-company answered": afterAnswer} {
			if diff := cmp.Diff(before, got); diff != "" {
				t.Errorf("other-co's view changed %s (-before +after):\n%s", name, diff)
			}
		}
		// The same texts as a number that never exists anywhere.
		for _, tool := range []string{"propose_response", "send_response"} {
			never := callErr(t, cs, tool, args{"auth_token": bJohn, "message_id": 999, "draft_text": "x", "final_text": "x"})
			other := callErr(t, cs, tool, args{"auth_token": bJohn, "message_id": 2, "draft_text": "x", "final_text": "x"})
			if want := strings.ReplaceAll(never, "999", "2"); other != want {
				t.Errorf("%s(other org's message 2) = %q, want the nonexistent-id text %q", tool, other, want)
			}
		}

		// ai-company is untouched by other-co's attempts.
		inbox := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": aJohn})
		if len(inbox.Questions) != 1 || inbox.Questions[0].MessageID != 2 || inbox.Questions[0].DraftText != nil {
			t.Errorf("ai-company john's inbox = %+v, want only message 2 with no draft", inbox.Questions)
		}
		replies := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": aUmar})
		if len(replies.Replies) != 1 || replies.Replies[0].Answer != seedAnswer || replies.Replies[0].AnsweredBy.Name != "John" {
			t.Errorf("ai-company umar's replies = %+v, want one: john's answer", replies.Replies)
		}
		names := func(token string) []string {
			var out []string
			for _, u := range callOK[usersOut](t, cs, "list_users", args{"auth_token": token}).Users {
				out = append(out, u.UserID+"="+u.Name+"/"+u.Ownership)
			}
			slices.Sort(out)
			return out
		}
		if diff := cmp.Diff([]string{"john=John Other/beta-repo", "umar=Umar Other/billing"}, names(bUmar)); diff != "" {
			t.Errorf("other-co list_users mismatch (-want +got):\n%s", diff)
		}
		if got := callOK[profileOut](t, cs, "get_user_profile", args{"auth_token": bUmar, "user_id": "john"}); got.User.Name != "John Other" ||
			got.Interactions.YouAsked != 0 || got.Interactions.LastQ != nil {
			t.Errorf("other-co get_user_profile(john) = %+v, want John Other with no interactions", got)
		}

		// other-co's own numbering starts at 1 and reaches only its own john.
		if id := ask(t, cs, bUmar, "john", "Where are the billing dashboards?"); id != 1 {
			t.Errorf("other-co's first question is message %d, want 1 (numbers are per organization)", id)
		}
		bInbox := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": bJohn})
		if len(bInbox.Questions) != 1 || bInbox.Questions[0].From.Name != "Umar Other" {
			t.Errorf("other-co john's inbox = %+v, want only Umar Other's question", bInbox.Questions)
		}
		if got := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": aJohn}); len(got.Questions) != 1 || got.Questions[0].MessageID != 2 {
			t.Errorf("ai-company john's inbox after other-co asked = %+v, want only message 2", got.Questions)
		}
	})
}

// TestE2EExactlyOnce: concurrent send_response calls answer a question once.
func TestE2EExactlyOnce(t *testing.T) {
	t.Parallel()
	withTeam(t, "", "ai-company", func(t *testing.T, w teamEnv) {
		e, cs, umar, john := w.env, w.anon, w.umar, w.john
		const n = 20
		sessions := make([]*sdk.ClientSession, n)
		for i := range sessions {
			sessions[i] = e.connect(t, john)
		}
		sendAll := func(id int64, text func(i int) string) (outcomes []string) {
			outcomes = make([]string, n)
			waitAll(n, func(i int) {
				outcomes[i] = outcome(tryCall(t.Context(), sessions[i], "send_response", args{"message_id": id, "final_text": text(i)}))
			})
			return outcomes
		}
		text := func(i int) string { return fmt.Sprintf("Answer %d: three attempts.", i) }

		// Twenty approvals of different texts at once, each saving its draft and sending it.
		id := ask(t, cs, umar, "john", seedQuestion)
		outcomes := make([]string, n)
		waitAll(n, func(i int) {
			res := tryCall(t.Context(), sessions[i], "propose_response", args{"message_id": id, "draft_text": text(i)})
			if !res.IsError {
				res = tryCall(t.Context(), sessions[i], "send_response", args{"message_id": id, "final_text": text(i)})
			}
			outcomes[i] = outcome(res)
		})
		counts := map[string]int{}
		for _, o := range outcomes {
			counts[o]++
		}
		// A loser was answered by another, or had its draft replaced before it sent.
		if counts["sent"] != 1 || counts["sent"]+counts[refusedAnswered]+counts[refusedProposeFirst] != n {
			t.Fatalf("20 concurrent propose+send: outcomes %v, want exactly one \"sent\" and the rest refused", counts)
		}
		win := slices.Index(outcomes, "sent")
		// Every text again, now: the winner's is "already sent", every other one refused.
		want := slices.Repeat([]string{refusedAnswered}, n)
		want[win] = "already sent"
		if diff := cmp.Diff(want, sendAll(id, text)); diff != "" {
			t.Errorf("every text sent again after #%d won (-want +got):\n%s", win, diff)
		}
		replies := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar})
		if len(replies.Replies) != 1 || replies.Replies[0].Answer != text(win) {
			t.Errorf("check_replies = %+v, want exactly the winning answer %q", replies.Replies, text(win))
		}
		if msg := callErr(t, cs, "propose_response", args{"auth_token": john, "message_id": id, "draft_text": "new"}); !strings.Contains(msg, "already answered") {
			t.Errorf("propose_response after the answer = %q, want it to say already answered", msg)
		}

		// The same approved text sent twenty times at once: one delivery, no errors.
		id2 := ask(t, cs, umar, "john", "Which queue does alpha-repo retry on?")
		callOK[draftOut](t, cs, "propose_response", args{"auth_token": john, "message_id": id2, "draft_text": "The orders queue."})
		statuses := map[string]int{}
		for _, o := range sendAll(id2, func(int) string { return "The orders queue." }) {
			statuses[o]++
		}
		if diff := cmp.Diff(map[string]int{"sent": 1, "already sent": n - 1}, statuses); diff != "" {
			t.Errorf("20 identical send_response calls mismatch (-want +got):\n%s", diff)
		}
		if got := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar}); len(got.Replies) != 2 {
			t.Errorf("check_replies has %d replies, want 2 (one per question)", len(got.Replies))
		}
	})
}

// TestE2ETokens: the token may come in the Authorization header or the auth_token argument.
func TestE2ETokens(t *testing.T) {
	t.Parallel()
	withTeam(t, "", "ai-company", func(t *testing.T, w teamEnv) {
		e, s, anon, umar, john := w.env, w.store, w.anon, w.umar, w.john
		header := e.connect(t, umar)
		whoami := func(cs *sdk.ClientSession, a args) string {
			t.Helper()
			return callOK[userOut](t, cs, "whoami", a).UserID
		}

		if got := whoami(header, args{}); got != "umar" {
			t.Errorf("whoami(header only) = %q, want umar", got)
		}
		if got := whoami(anon, args{"auth_token": john}); got != "john" {
			t.Errorf("whoami(argument only) = %q, want john", got)
		}
		if got := whoami(header, args{"auth_token": umar}); got != "umar" {
			t.Errorf("whoami(header and same argument) = %q, want umar", got)
		}
		if id := ask(t, header, "", "john", seedQuestion); id != 1 {
			t.Errorf("ask_person with the header token = message %d, want 1", id)
		}
		msg := callErr(t, header, "whoami", args{"auth_token": john})
		if !strings.Contains(msg, "different tokens") || strings.Contains(msg, umar) || strings.Contains(msg, john) {
			t.Errorf("whoami(header umar, argument john) = %q, want a mismatch error that shows neither token", msg)
		}
		if msg := callErr(t, anon, "whoami", args{}); !strings.Contains(msg, "login") {
			t.Errorf("whoami(no token) = %q, want it to say to call login", msg)
		}
		fake := "ctalk_" + strings.Repeat("A", 43)
		for name, a := range map[string]args{"garbage": {"auth_token": "hunter2"}, "token-shaped": {"auth_token": fake}} {
			if msg := callErr(t, anon, "check_inbox", a); !strings.Contains(msg, "login again") {
				t.Errorf("check_inbox(%s token) = %q, want it to say to log in again", name, msg)
			}
		}
		if msg := callErr(t, connectTo(t, e.url, fake, ""), "whoami", args{}); !strings.Contains(msg, "login again") {
			t.Errorf("whoami(unknown header token) = %q, want it to say to log in again", msg)
		}

		// Revoked by the operator, and expired: refused until the person logs in again.
		if err := s.InTx(t.Context(), func(q db.Queries) error {
			_, err := q.RevokeUserTokens(t.Context(), "ai-company", "john", nil, time.Now().UTC())
			return err
		}); err != nil {
			t.Fatalf("RevokeUserTokens: %v", err)
		}
		if msg := callErr(t, anon, "check_inbox", args{"auth_token": john}); !strings.Contains(msg, "revoked") {
			t.Errorf("check_inbox(revoked token) = %q, want it to say the token is revoked", msg)
		}
		if got := whoami(anon, args{"auth_token": login(t, anon, "ai-company", "john")}); got != "john" {
			t.Errorf("whoami(new token after revocation) = %q, want john", got)
		}
		later := mcp.Options{Logger: e.logger, Now: func() time.Time { return time.Now().Add(mcp.DefaultTokenTTL + time.Hour) }}
		future := connectTo(t, serve(t, s, later, e.logger), "", "")
		if msg := callErr(t, future, "whoami", args{"auth_token": umar}); !strings.Contains(msg, "expired") {
			t.Errorf("whoami(token past its expiry) = %q, want it to say the token expired", msg)
		}
	})
}

// TestE2ESecrets: no password or token is stored or logged in plain text, and no message body is logged.
func TestE2ESecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newEnv(t, dbtest.Open(t, cfg))
		cs := e.connect(t, "")
		secrets, texts := walkthrough(t, cs)
		umarToken, johnToken := secrets[2], secrets[3]
		// Failures must not log what they were given either.
		callErr(t, cs, "login", args{"org_id": "ai-company", "user_id": "umar", "password": "wrong-password-123"})
		callErr(t, cs, "register_user", args{"org_id": "ai-company", "admin_password": "wrong-admin-password",
			"user_id": "eve", "name": "Eve", "password": "eve-password-123", "ownership": "x"})
		secrets = append(secrets, "wrong-password-123", "wrong-admin-password", "eve-password-123")
		callErr(t, connectTo(t, e.url, umarToken, ""), "whoami", args{"auth_token": johnToken})

		cells := dbText(t, cfg)
		all := strings.Join(cells, "\n")
		if !strings.Contains(all, seedQuestion) || !strings.Contains(all, "$argon2id$") {
			t.Fatalf("database scan is missing the question or an argon2id hash: it did not read the tables")
		}
		for _, secret := range secrets {
			for _, form := range []string{secret, hex.EncodeToString([]byte(secret))} {
				for _, cell := range cells {
					if strings.Contains(cell, form) {
						t.Errorf("database holds secret %.12q… in plain text: %.80s", secret, cell)
					}
				}
			}
		}

		// An unexpected failure is logged, without the question it was carrying.
		broken, err := db.Open(t.Context(), cfg)
		if err != nil {
			t.Fatalf("db.Open: %v", err)
		}
		broken.Close()
		brokenCS := connectTo(t, serve(t, broken, mcp.Options{Logger: e.logger}, e.logger), "", "")
		const privateQuestion = "Is the acquisition of Initech still confidential?"
		msg := callErr(t, brokenCS, "ask_person", args{"auth_token": umarToken, "to_user_id": "john", "question": privateQuestion})
		if !strings.Contains(msg, "internal error") && !strings.Contains(msg, "unavailable") {
			t.Errorf("ask_person on a closed database = %q, want the internal-error or unavailable message", msg)
		}
		texts = append(texts, privateQuestion)

		logs := e.logs.String()
		if !strings.Contains(logs, "path=/mcp") {
			t.Fatalf("captured log has no request lines; got:\n%s", logs)
		}
		for _, line := range strings.Split(logs, "\n") {
			for _, s := range append(secrets, texts...) {
				if strings.Contains(line, s) {
					t.Errorf("server log line contains %.12q…: %.200s", s, line)
				}
			}
		}
	})
}

// TestE2EBadInput: bad arguments are refused with a message saying what to do, and nothing is stored.
func TestE2EBadInput(t *testing.T) {
	t.Parallel()
	withTeam(t, "", "ai-company", func(t *testing.T, w teamEnv) {
		e, cs, umar, john := w.env, w.anon, w.umar, w.john
		ask(t, cs, umar, "john", seedQuestion)
		inboxBefore := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john})
		askArgs := func(key string, v any) args {
			a := args{"auth_token": umar, "to_user_id": "john", "question": "Where is the retry config?"}
			a[key] = v
			return a
		}
		tests := []struct {
			name string
			tool string
			args args
			want []string // the message names the problem and what to do
		}{
			{"over-long question", "ask_person", askArgs("question", strings.Repeat("retry? ", 1200)), []string{"question is too long", "at most 8000"}},
			{"NUL in question", "ask_person", askArgs("question", "What is\x00 the retry logic?"), []string{"control character", "remove it"}},
			{"token in question", "ask_person", askArgs("question", "Use my token "+umar+" to look"), []string{"looks like a credential", "remove it"}},
			{"blank question", "ask_person", askArgs("question", " \n "), []string{"question is required"}},
			{"number as to_user_id", "ask_person", askArgs("to_user_id", 42), []string{"to_user_id", "wrong type", "send a string"}},
			{"list as question", "ask_person", askArgs("question", []string{"a", "b"}), []string{"question", "wrong type", "send a string"}},
			{"object as auth_token", "ask_person", askArgs("auth_token", args{"token": umar}), []string{"auth_token", "wrong type"}},
			{"unknown recipient", "ask_person", askArgs("to_user_id", "nobody"), []string{"no user \"nobody\"", "list_users"}},
			{"message_id not a number", "propose_response", args{"auth_token": john, "message_id": "soon", "draft_text": "x"}, []string{"message_id must be a message number"}},
			{"NUL in draft", "propose_response", args{"auth_token": john, "message_id": 1, "draft_text": "a\x00b"}, []string{"control character", "remove it"}},
			{"token in answer", "send_response", args{"auth_token": john, "message_id": 1, "final_text": "token: " + john}, []string{"looks like a credential"}},
		}
		for _, tt := range tests {
			msg := callErr(t, cs, tt.tool, tt.args)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s: %s = %q, want it to contain %q", tt.name, tt.tool, msg, w)
				}
			}
			if strings.Contains(msg, umar) || strings.Contains(msg, john) || strings.Contains(msg, "\x00") {
				t.Errorf("%s: %s = %q echoes a token or the control character", tt.name, tt.tool, msg)
			}
		}
		// Past the request body limit the HTTP layer refuses the call outright.
		huge := strings.Repeat("x", 2<<20)
		if res, err := connectTo(t, e.url, "", "").CallTool(t.Context(), &sdk.CallToolParams{Name: "ask_person",
			Arguments: askArgs("question", huge)}); err == nil && !res.IsError {
			t.Errorf("ask_person with a 2 MiB question succeeded, want it refused")
		}

		if diff := cmp.Diff(inboxBefore, callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john})); diff != "" {
			t.Errorf("john's inbox changed after refused calls (-before +after):\n%s", diff)
		}
		if got := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar}); len(got.Replies) != 0 {
			t.Errorf("check_replies(umar) = %+v, want none: refused answers are not delivered", got.Replies)
		}
	})
}

// TestE2ERepliesCursor: paging check_replies with its cursor never skips or repeats a reply.
func TestE2ERepliesCursor(t *testing.T) {
	t.Parallel()
	withTeam(t, "", "ai-company", func(t *testing.T, w teamEnv) {
		e, cs, umar, john := w.env, w.anon, w.umar, w.john
		var ids []int64 // every question, in the order asked
		for i := range 50 {
			ids = append(ids, ask(t, cs, umar, "john", fmt.Sprintf("Question %d?", i+1)))
		}
		reply := func(cs *sdk.ClientSession, id int64) *sdk.CallToolResult {
			text := fmt.Sprintf("Answer to %d.", id)
			res := tryCall(t.Context(), cs, "propose_response", args{"auth_token": john, "message_id": id, "draft_text": text})
			if !res.IsError {
				res = tryCall(t.Context(), cs, "send_response", args{"auth_token": john, "message_id": id, "final_text": text})
			}
			return res
		}
		// pollAll pages from cursor until check_replies says there is no more.
		pollAll := func(cursor string) (pages [][]int64, last string) {
			t.Helper()
			for len(pages) < 10 {
				r := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar, "cursor": cursor})
				var page []int64
				for _, rep := range r.Replies {
					if want := fmt.Sprintf("Answer to %d.", rep.MessageID); rep.Answer != want {
						t.Errorf("reply to %d = %q, want %q", rep.MessageID, rep.Answer, want)
					}
					page = append(page, rep.MessageID)
				}
				pages, cursor = append(pages, page), r.Cursor
				if !r.More {
					return pages, cursor
				}
			}
			t.Fatalf("check_replies still says more after %d pages", len(pages))
			return nil, ""
		}
		check := func(what string, got, want []int64) {
			t.Helper()
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("check_replies %s: message ids mismatch (-want +got):\n%s", what, diff)
			}
		}

		// Answered out of order between polls: each poll shows exactly what is new.
		cursor := ""
		var order []int64
		for _, step := range [][]int64{{3, 1}, {5}, {}, {2, 4}} {
			for _, id := range step {
				reply(cs, id)
			}
			order = append(order, step...)
			pages, next := pollAll(cursor)
			check(fmt.Sprintf("after answering %v", step), slices.Concat(pages...), step)
			cursor = next
		}
		pages, _ := pollAll("")
		check("from the start", slices.Concat(pages...), order)

		// More than a page: 25 answers in a scrambled order come back 20, then 5.
		var scrambled []int64
		for i := range 25 {
			scrambled = append(scrambled, ids[5+(i*7)%25])
		}
		for _, id := range scrambled {
			reply(cs, id)
		}
		pages, cursor = pollAll(cursor)
		if len(pages) != 2 || len(pages[0]) != 20 {
			t.Errorf("25 new replies came in pages of %v, want 20 then 5", pages)
		}
		check("paged over 25 replies", slices.Concat(pages...), scrambled)

		// Four sessions commit the last 20 answers while the asker keeps polling.
		batch, from := ids[30:], cursor
		answerers := []*sdk.ClientSession{e.connect(t, ""), e.connect(t, ""), e.connect(t, ""), e.connect(t, "")}
		done := make(chan struct{})
		go func() {
			defer close(done)
			waitAll(len(answerers), func(w int) {
				for i := w; i < len(batch); i += len(answerers) {
					if res := reply(answerers[w], batch[i]); res.IsError {
						t.Errorf("answering %d: %q, want success", batch[i], resultText(res))
					}
				}
			})
		}()
		var seen []int64
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true // one more poll below picks up the last commits
			case <-time.After(10 * time.Millisecond):
			}
			pages, cursor = pollAll(cursor)
			seen = append(seen, slices.Concat(pages...)...)
		}
		pages, _ = pollAll(from)
		check("polled while answers committed, against one read afterwards", seen, slices.Concat(pages...))
		check("polled while answers committed, sorted", slices.Sorted(slices.Values(seen)), batch)
	})
}

// TestE2ERepliesLateCommit: a reply stamped before the asker's last poll but
// committed after it (a slow commit, or a replica whose clock lags) still
// arrives through the cursor, whatever since says.
func TestE2ERepliesLateCommit(t *testing.T) {
	t.Parallel()
	withTeam(t, "", "ai-company", func(t *testing.T, w teamEnv) {
		e, s, cs, umar, john := w.env, w.store, w.anon, w.umar, w.john
		first := ask(t, cs, umar, "john", seedQuestion)
		late := ask(t, cs, umar, "john", "Who owns the payments dashboards?")
		answer(t, cs, john, first, seedAnswer)
		polledAt := time.Now().UTC().Format(time.RFC3339Nano)
		r := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar})
		// The second answer goes through a replica whose clock is a minute behind,
		// so its answered_at is before the poll although it commits after it.
		lagging := mcp.Options{Logger: e.logger, Now: func() time.Time { return time.Now().Add(-time.Minute) }}
		answer(t, connectTo(t, serve(t, s, lagging, e.logger), "", ""), john, late, "Alice does.")

		got := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar, "cursor": r.Cursor, "since": polledAt})
		var gotIDs []int64
		for _, rep := range got.Replies {
			gotIDs = append(gotIDs, rep.MessageID)
		}
		if !slices.Equal(gotIDs, []int64{late}) {
			t.Errorf("check_replies(cursor after message %d, since the last poll) = messages %v, want [%d]: "+
				"the reply that committed after the last poll is missed", first, gotIDs, late)
		}
	})
}

// TestE2EToolsList: tools/list needs no token and shows the seed's 13 tools
// with honest read-only hints (tools added since are allowed, and need annotations too).
func TestE2EToolsList(t *testing.T) {
	t.Parallel()
	want := map[string]bool{
		"register_organization": false, "register_user": false, "login": false, "whoami": true,
		"list_users": true, "get_user_profile": true, "update_my_notes": false, "update_user_profile_notes": false,
		"ask_person": false, "check_inbox": true, "propose_response": false, "send_response": false,
		"check_replies": false, // it records which replies the caller has been shown
	}
	for _, proto := range []string{protocolSession, protocolStateless} {
		t.Run("protocol="+proto, func(t *testing.T) {
			t.Parallel()
			dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
				cs := connectTo(t, newEnv(t, s).url, "", proto)
				res, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatalf("tools/list without a token: %v", err)
				}
				got := map[string]bool{}
				for _, tool := range res.Tools {
					if tool.Annotations == nil || tool.Description == "" {
						t.Errorf("tool %s: annotations %v, description %q; want both", tool.Name, tool.Annotations, tool.Description)
						continue
					}
					if _, seed := want[tool.Name]; seed {
						got[tool.Name] = tool.Annotations.ReadOnlyHint
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("tools/list name → readOnlyHint mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}
