package server_test

// End-to-end proof of issue 14 through the official MCP Go SDK client, on
// both backends: a conversation of three turns arrives complete and in order
// for both people through every way a client reads it (check_inbox,
// check_replies, wait_for_messages, get_thread), with each answer approved
// through the real approval path; shared answers are found by others and
// private ones are not; find_owner and ask_person by topic route a question
// to whoever owns it.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// Mirrors of the conversation results, as a client reads them.
type (
	whoOut struct {
		UserID string `json:"user_id"`
		Name   string `json:"name"`
	}
	turnOut struct {
		MessageID int64  `json:"message_id"`
		Kind      string `json:"kind"`
		By        whoOut `json:"by"`
		To        whoOut `json:"to"`
		Text      string `json:"text"`
	}
	threadOut struct {
		ThreadID   int64     `json:"thread_id"`
		Turns      []turnOut `json:"turns"`
		Unanswered []int64   `json:"unanswered_message_ids"`
		Shared     bool      `json:"shared"`
		NextStep   string    `json:"next_step"`
	}
	threadAskOut struct {
		MessageID     int64  `json:"message_id"`
		ThreadID      int64  `json:"thread_id"`
		ToUserID      string `json:"to_user_id"`
		FollowUpTo    int64  `json:"follow_up_to"`
		ChosenBecause string `json:"chosen_because"`
		NextStep      string `json:"next_step"`
	}
	threadInboxOut struct {
		Questions []struct {
			MessageID int64     `json:"message_id"`
			ThreadID  int64     `json:"thread_id"`
			From      whoOut    `json:"from"`
			Question  string    `json:"question"`
			Earlier   []turnOut `json:"earlier_in_conversation"`
		} `json:"questions"`
		NextStep string `json:"next_step"`
	}
	threadRepliesOut struct {
		Replies []struct {
			MessageID  int64  `json:"message_id"`
			ThreadID   int64  `json:"thread_id"`
			AnsweredBy whoOut `json:"answered_by"`
			Question   string `json:"question"`
			Answer     string `json:"answer"`
		} `json:"replies"`
		Cursor string `json:"cursor"`
	}
	threadEventsOut struct {
		Events []struct {
			Kind            string `json:"kind"`
			Cursor          string `json:"cursor"`
			MessageID       int64  `json:"message_id"`
			ThreadID        int64  `json:"thread_id"`
			From            whoOut `json:"from"`
			Question        string `json:"question"`
			Answer          string `json:"answer"`
			AlreadyAnswered bool   `json:"already_answered"`
		} `json:"events"`
		Cursor   string `json:"cursor"`
		NextStep string `json:"next_step"`
	}
	sharedSentOut struct {
		MessageID int64  `json:"message_id"`
		Status    string `json:"status"`
		Shared    bool   `json:"shared"`
	}
	foundOut struct {
		MessageID  int64  `json:"message_id"`
		ThreadID   int64  `json:"thread_id"`
		AskedBy    whoOut `json:"asked_by"`
		AnsweredBy whoOut `json:"answered_by"`
		Question   string `json:"question"`
		Answer     string `json:"answer"`
		Shared     bool   `json:"shared"`
	}
	searchOut struct {
		Results []foundOut `json:"results"`
	}
	ownersOut struct {
		People []struct {
			UserID string `json:"user_id"`
			Reason string `json:"reason"`
		} `json:"people"`
		NextStep string `json:"next_step"`
	}
)

// The conversation of TestE2EThread, turn by turn.
const (
	threadQuestion = "How do refunds retry in payments-service?"
	threadBack     = "Do you mean card refunds or bank transfers?"
	threadClarify  = "Card refunds."
	threadAnswer   = "Card refunds retry three times with exponential backoff, then go to the dead-letter queue."
	threadFollowUp = "Who watches the dead-letter queue?"
	threadLast     = "The payments on-call; the runbook is in payments-service/docs/dlq.md."
)

// TestE2EThread: Umar asks John; John asks back; Umar answers that; John
// answers the first question; Umar asks a follow-up; John answers it. Each
// person sees every turn complete and in order through check_inbox,
// check_replies, wait_for_messages and get_thread, on both protocol
// generations. Answers go through both approval paths: Umar's and John's
// last through the client's dialog (elicitation), John's first through the
// saved draft.
func TestE2EThread(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		cs, umar, john := w.anon, w.umar, w.john
		umarHuman, johnHuman := &human{action: "accept"}, &human{action: "accept"}
		umarUI, johnUI := umarHuman.client(t, w.url, w.protocol, umar), johnHuman.client(t, w.url, w.protocol, john)
		u, j := whoOut{"umar", "Umar"}, whoOut{"john", "John"}
		turn := func(id int64, kind string, by, to whoOut, text string) turnOut {
			return turnOut{MessageID: id, Kind: kind, By: by, To: to, Text: text}
		}

		// Umar asks John.
		first := callOK[threadAskOut](t, cs, "ask_person", args{"auth_token": umar, "to_user_id": "john", "question": threadQuestion})
		q1 := turn(first.MessageID, "question", u, j, threadQuestion)
		if first.ThreadID != first.MessageID || first.FollowUpTo != 0 {
			t.Errorf("a first question = %+v, want its own conversation (thread_id = message_id) and no follow_up_to", first)
		}
		id := first.MessageID
		inboxIs(t, cs, john, "john, asked", []inboxView{{id, id, u, threadQuestion, nil}})

		// John asks back for clarification before answering.
		back := callOK[threadAskOut](t, cs, "ask_person", args{"auth_token": john, "follow_up_to": id, "question": threadBack})
		if back.ThreadID != id || back.ToUserID != "umar" || back.FollowUpTo != id || !strings.Contains(back.NextStep, fmt.Sprint("conversation ", id)) {
			t.Errorf("john asking back = %+v, want a question to umar in conversation %d that says so", back, id)
		}
		q2 := turn(back.MessageID, "question", j, u, threadBack)
		inboxIs(t, cs, umar, "umar, asked back", []inboxView{{back.MessageID, id, j, threadBack, []turnOut{q1}}})
		inboxIs(t, cs, john, "john, waiting for umar", []inboxView{{id, id, u, threadQuestion, nil}})

		// Umar answers it in his client's dialog, which says only John will see it.
		sent := callOK[sharedSentOut](t, umarUI, "send_response", args{"message_id": back.MessageID, "final_text": threadClarify})
		if sent.Status != "sent" || sent.Shared {
			t.Errorf("umar's answer = %+v, want sent, not shared", sent)
		}
		if shown := umarHuman.asked(); len(shown) != 1 || !strings.Contains(shown[0], threadClarify) ||
			!strings.Contains(shown[0], "John only") || strings.Contains(shown[0], "SHARES") {
			t.Errorf("umar's approval dialog = %q, want one showing the answer and that only John sees it", shown)
		}
		a2 := turn(back.MessageID, "answer", u, j, threadClarify)
		johnReplies := callOK[threadRepliesOut](t, cs, "check_replies", args{"auth_token": john})
		repliesAre(t, "john's replies", johnReplies, []replyView{{back.MessageID, id, u, threadBack, threadClarify}})

		// John answers the first question, through the saved draft (no dialog on this session).
		answer(t, cs, john, id, threadAnswer)
		a1 := turn(id, "answer", j, u, threadAnswer)
		umarReplies := callOK[threadRepliesOut](t, cs, "check_replies", args{"auth_token": umar})
		repliesAre(t, "umar's replies", umarReplies, []replyView{{id, id, j, threadQuestion, threadAnswer}})
		inboxIs(t, cs, john, "john, all answered", nil)

		// John waits; Umar's follow-up wakes him, as part of the conversation.
		johnAt := callOK[threadEventsOut](t, cs, "wait_for_messages", args{"auth_token": john, "timeout_seconds": 0, "cursor": "latest"}).Cursor
		woke := make(chan threadEventsOut, 1)
		go func() {
			var out threadEventsOut
			res := tryCall(t.Context(), cs, "wait_for_messages", args{"auth_token": john, "timeout_seconds": 30, "cursor": johnAt})
			if err := decode(res.StructuredContent, &out); res.IsError || err != nil {
				t.Errorf("john's wait = %q, %v; want events", resultText(res), err)
			}
			woke <- out
		}()
		more := callOK[threadAskOut](t, cs, "ask_person", args{"auth_token": umar, "follow_up_to": id, "question": threadFollowUp})
		if more.ThreadID != id || more.ToUserID != "john" {
			t.Errorf("umar's follow-up = %+v, want a question to john in conversation %d", more, id)
		}
		q3 := turn(more.MessageID, "question", u, j, threadFollowUp)
		got := <-woke
		if len(got.Events) != 1 || got.Events[0].MessageID != more.MessageID || got.Events[0].ThreadID != id ||
			got.Events[0].Question != threadFollowUp || !strings.Contains(got.NextStep, "get_thread") {
			t.Errorf("john's wait when the follow-up came = %+v, want the follow-up %d in conversation %d and a pointer to get_thread",
				got, more.MessageID, id)
		}
		inboxIs(t, cs, john, "john, followed up", []inboxView{{more.MessageID, id, u, threadFollowUp, []turnOut{q1, q2, a2, a1}}})

		// John answers the follow-up in his dialog, sharing it with the organization.
		shared := callOK[sharedSentOut](t, johnUI, "send_response", args{"message_id": more.MessageID, "final_text": threadLast, "share": true})
		if shared.Status != "sent" || !shared.Shared {
			t.Errorf("john's shared answer = %+v, want sent and shared", shared)
		}
		if shown := johnHuman.asked(); len(shown) != 1 || !strings.Contains(shown[0], threadLast) || !strings.Contains(shown[0], "SHARES") {
			t.Errorf("john's approval dialog = %q, want one showing the answer and that it is shared", shown)
		}
		a3 := turn(more.MessageID, "answer", j, u, threadLast)
		repliesAre(t, "umar's replies after his last poll",
			callOK[threadRepliesOut](t, cs, "check_replies", args{"auth_token": umar, "cursor": umarReplies.Cursor}),
			[]replyView{{more.MessageID, id, j, threadFollowUp, threadLast}})

		// Everything each person was told, from the start, in commit order.
		eventsAre(t, cs, umar, "umar", []eventView{
			{"question", back.MessageID, id, "john", threadBack, "", true},
			{"answer", id, id, "john", threadQuestion, threadAnswer, false},
			{"answer", more.MessageID, id, "john", threadFollowUp, threadLast, false},
		})
		eventsAre(t, cs, john, "john", []eventView{
			{"question", id, id, "umar", threadQuestion, "", true},
			{"answer", back.MessageID, id, "umar", threadBack, threadClarify, false},
			{"question", more.MessageID, id, "umar", threadFollowUp, "", true},
		})

		// The whole conversation, the same for both, from any of its messages.
		want := threadOut{ThreadID: id, Turns: []turnOut{q1, q2, a2, a1, q3, a3}, Unanswered: []int64{}, Shared: true}
		for _, who := range []string{umar, john} {
			for _, m := range []int64{id, back.MessageID, more.MessageID} {
				got := callOK[threadOut](t, cs, "get_thread", args{"auth_token": who, "message_id": m})
				if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(threadOut{}, "NextStep")); diff != "" {
					t.Errorf("get_thread(%d) mismatch (-want +got):\n%s", m, diff)
				}
			}
		}
		// Someone else in the organization sees only the shared turns.
		registerUser(t, cs, "acme", "alice", "Alice", "infra")
		alice := login(t, cs, "acme", "alice")
		seen := callOK[threadOut](t, cs, "get_thread", args{"auth_token": alice, "message_id": more.MessageID})
		if diff := cmp.Diff([]turnOut{q3, a3}, seen.Turns); diff != "" {
			t.Errorf("get_thread for a third person mismatch (-want +got):\n%s", diff)
		}
		if msg := callErr(t, cs, "get_thread", args{"auth_token": alice, "message_id": id}); !strings.Contains(msg, "no conversation") {
			t.Errorf("get_thread(a private turn) for a third person = %q, want the no-conversation answer", msg)
		}
		if msg := callErr(t, cs, "ask_person", args{"auth_token": alice, "follow_up_to": id, "question": "Me too?"}); !strings.Contains(msg, "no conversation") {
			t.Errorf("a third person following up someone else's conversation = %q, want it refused", msg)
		}
		// An answer sent privately stays private: sending it again with share changes nothing.
		again := callOK[sharedSentOut](t, cs, "send_response", args{"auth_token": umar, "message_id": back.MessageID,
			"final_text": threadClarify, "share": true})
		if again.Status != "already sent" || again.Shared {
			t.Errorf("send_response(the same private answer, share) = %+v, want already sent, not shared", again)
		}
		if msg := callErr(t, cs, "get_thread", args{"auth_token": alice, "message_id": back.MessageID}); !strings.Contains(msg, "no conversation") {
			t.Errorf("get_thread(a private answer sent again with share) for a third person = %q, want the no-conversation answer", msg)
		}
	})
}

// inboxView is what one inbox question shows: its ids, who asked, the
// question, and the earlier turns of its conversation.
type inboxView struct {
	MessageID, ThreadID int64
	From                whoOut
	Question            string
	Earlier             []turnOut
}

// inboxIs checks token's check_inbox.
func inboxIs(t *testing.T, cs *sdk.ClientSession, token, what string, want []inboxView) {
	t.Helper()
	var got []inboxView
	for _, q := range callOK[threadInboxOut](t, cs, "check_inbox", args{"auth_token": token}).Questions {
		got = append(got, inboxView{q.MessageID, q.ThreadID, q.From, q.Question, q.Earlier})
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("check_inbox (%s) mismatch (-want +got):\n%s", what, diff)
	}
}

// replyView is what one reply shows.
type replyView struct {
	MessageID, ThreadID int64
	AnsweredBy          whoOut
	Question, Answer    string
}

func repliesAre(t *testing.T, what string, got threadRepliesOut, want []replyView) {
	t.Helper()
	var view []replyView
	for _, r := range got.Replies {
		view = append(view, replyView{r.MessageID, r.ThreadID, r.AnsweredBy, r.Question, r.Answer})
	}
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("check_replies (%s) mismatch (-want +got):\n%s", what, diff)
	}
}

// eventView is what one wait_for_messages event shows.
type eventView struct {
	Kind                string
	MessageID, ThreadID int64
	From                string
	Question, Answer    string
	AlreadyAnswered     bool
}

// eventsAre checks every event token's wait_for_messages returns from the
// start, and that their cursors rise (commit order).
func eventsAre(t *testing.T, cs *sdk.ClientSession, token, who string, want []eventView) {
	t.Helper()
	res := callOK[threadEventsOut](t, cs, "wait_for_messages", args{"auth_token": token, "timeout_seconds": 0, "cursor": ""})
	var got []eventView
	var cursors []int64
	for _, e := range res.Events {
		got = append(got, eventView{e.Kind, e.MessageID, e.ThreadID, e.From.UserID, e.Question, e.Answer, e.AlreadyAnswered})
		c, err := strconv.ParseInt(e.Cursor, 10, 64)
		if err != nil {
			t.Errorf("%s's event cursor %q is not a number", who, e.Cursor)
		}
		cursors = append(cursors, c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s's events mismatch (-want +got):\n%s", who, diff)
	}
	if !slices.IsSorted(cursors) || len(slices.Compact(slices.Clone(cursors))) != len(cursors) {
		t.Errorf("%s's event cursors = %v, want them rising (commit order)", who, cursors)
	}
}

// TestE2ESearchAndRouting: a shared answer is found by a third person with
// other forms of its words; a private one is found only by its two people;
// another organization's never, even word for word. find_owner and
// ask_person by topic route "refund retries in payments" to the owner of
// payments-service, past the owner of alpha-repo (who wrote about retries),
// a deactivated owner, and another organization's.
func TestE2ESearchAndRouting(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		cs := newEnv(t, s).connect(t, "")
		registerOrg(t, cs, "shop", "Shop")
		for _, u := range []struct{ id, name, owns string }{
			{"umar", "Umar", "platform tooling"}, {"alex", "Alex", "alpha-repo"}, {"priya", "Priya", "payments-service"},
			{"pat", "Pat", "payments-service refunds"},
		} {
			registerUser(t, cs, "shop", u.id, u.name, u.owns)
		}
		umar := login(t, cs, "shop", "umar")
		alex, priya := login(t, cs, "shop", "alex"), login(t, cs, "shop", "priya")
		callOK[userOut](t, cs, "update_my_notes", args{"auth_token": alex, "notes": "Ask me about retries and backoff."})
		callOK[userOut](t, cs, "deactivate_user", args{"org_id": "shop", "admin_password": adminPassword, "user_id": "pat"})

		// Alex shares one answer and keeps one between Umar and himself.
		const sharedQ, sharedA = "What is the retry logic in alpha-repo?", "Each job may retry three times with exponential backoff."
		const privateQ, privateA = "What is the retry budget for Project Falcon?", "Retry twice; Falcon is confidential until March."
		shared := ask(t, cs, umar, "alex", sharedQ)
		callOK[draftOut](t, cs, "propose_response", args{"auth_token": alex, "message_id": shared, "draft_text": sharedA, "share": true})
		if got := callOK[sharedSentOut](t, cs, "send_response", args{"auth_token": alex, "message_id": shared, "final_text": sharedA, "share": true}); !got.Shared {
			t.Fatalf("send_response(share) = %+v, want shared", got)
		}
		private := ask(t, cs, umar, "alex", privateQ)
		answer(t, cs, alex, private, privateA)

		// Another organization holds the same texts, word for word, all shared.
		registerOrg(t, cs, "rival", "Rival")
		registerUser(t, cs, "rival", "umar", "Umar Rival", "platform")
		registerUser(t, cs, "rival", "alex", "Alex Rival", "payments-service refunds retries")
		rUmar, rAlex := login(t, cs, "rival", "umar"), login(t, cs, "rival", "alex")
		for _, qa := range [][2]string{{sharedQ, sharedA}, {privateQ, privateA}} {
			id := ask(t, cs, rUmar, "alex", qa[0])
			callOK[draftOut](t, cs, "propose_response", args{"auth_token": rAlex, "message_id": id, "draft_text": qa[1], "share": true})
			callOK[sharedSentOut](t, cs, "send_response", args{"auth_token": rAlex, "message_id": id, "final_text": qa[1], "share": true})
		}

		search := func(token, query string) (ids []int64, text string) {
			t.Helper()
			res := call(t, cs, "search_answers", args{"auth_token": token, "query": query})
			var out searchOut
			if err := decode(res.StructuredContent, &out); res.IsError || err != nil {
				t.Fatalf("search_answers(%q) = %q, want results", query, resultText(res))
			}
			for _, f := range out.Results {
				ids = append(ids, f.MessageID)
			}
			return ids, resultText(res)
		}
		a, x := whoOut{"alex", "Alex"}, whoOut{"umar", "Umar"}
		// A third person finds the shared answer by other forms of its words, with who answered.
		for _, query := range []string{"retries", "retrying jobs", "backoffs alpha-repo"} {
			res := callOK[searchOut](t, cs, "search_answers", args{"auth_token": priya, "query": query})
			want := []foundOut{{MessageID: shared, ThreadID: shared, AskedBy: x, AnsweredBy: a, Question: sharedQ, Answer: sharedA, Shared: true}}
			if diff := cmp.Diff(want, res.Results); diff != "" {
				t.Errorf("priya's search_answers(%q) mismatch (-want +got):\n%s", query, diff)
			}
		}
		// The private answer: not for priya, not even its rare words; its two people find it.
		for _, query := range []string{"Falcon", "confidential", privateQ} {
			if ids, text := search(priya, query); len(ids) != 0 || strings.Contains(text, "Falcon") || strings.Contains(text, "March") {
				t.Errorf("priya's search_answers(%q) = %v %q, want nothing: the answer is private to umar and alex", query, ids, text)
			}
		}
		for _, token := range []string{umar, alex} {
			if ids, _ := search(token, "retries"); !cmp.Equal(ids, []int64{private, shared}) && !cmp.Equal(ids, []int64{shared, private}) {
				t.Errorf("search_answers(retries) by one of its two people = %v, want both %d and %d", ids, shared, private)
			}
		}
		// Another organization's answers never, even for their exact words; and the other way round.
		for _, query := range []string{sharedQ, sharedA, privateA} {
			ids, text := search(priya, query)
			if slices.ContainsFunc(ids, func(id int64) bool { return id != shared }) || strings.Contains(text, "Rival") || strings.Contains(text, "Falcon") {
				t.Errorf("priya's search_answers(%q) = %v %q, want at most shop's shared message %d", query, ids, text, shared)
			}
		}
		if _, text := search(rUmar, "retries"); strings.Contains(text, `"Alex"`) || strings.Count(text, `"message_id"`) != 2 {
			t.Errorf("rival's search_answers(retries) = %q, want rival's two answers only", text)
		}

		// Routing: the payments-service owner first; alex (notes and a shared answer about retries) after;
		// never pat (deactivated), the caller, or rival's alex.
		owners := callOK[ownersOut](t, cs, "find_owner", args{"auth_token": umar, "topic": "refund retries in payments"})
		var ranked []string
		for _, p := range owners.People {
			ranked = append(ranked, p.UserID)
		}
		if diff := cmp.Diff([]string{"priya", "alex"}, ranked); diff != "" {
			t.Errorf("find_owner(refund retries in payments) ranking mismatch (-want +got):\n%s", diff)
		}
		if len(owners.People) > 0 && !strings.Contains(owners.People[0].Reason, "payments-service") {
			t.Errorf("find_owner: priya's reason = %q, want it to name payments-service", owners.People[0].Reason)
		}
		if len(owners.People) > 1 && !strings.Contains(owners.People[1].Reason, "answered 1 shared question") {
			t.Errorf("find_owner: alex's reason = %q, want it to name the shared answer", owners.People[1].Reason)
		}
		const routed = "Why do some refunds retry twice?"
		asked := callOK[threadAskOut](t, cs, "ask_person", args{"auth_token": umar, "topic": "refund retries in payments", "question": routed})
		if asked.ToUserID != "priya" || !strings.Contains(asked.ChosenBecause, "payments-service") || !strings.Contains(asked.NextStep, "Priya") {
			t.Errorf("ask_person(topic) = %+v, want it to reach priya and say why", asked)
		}
		inbox := callOK[threadInboxOut](t, cs, "check_inbox", args{"auth_token": priya})
		if len(inbox.Questions) != 1 || inbox.Questions[0].Question != routed || inbox.Questions[0].From.UserID != "umar" {
			t.Errorf("priya's inbox = %+v, want umar's routed question", inbox.Questions)
		}
		if msg := callErr(t, cs, "ask_person", args{"auth_token": umar, "topic": "kubernetes ingress", "question": "Who runs ingress?"}); !strings.Contains(msg, "list_users") {
			t.Errorf("ask_person(topic nobody owns) = %q, want it to say to pick a person from list_users", msg)
		}
	})
}
