package server_test

// End-to-end proof that send_response sends only what the human approved:
// through MCP elicitation when the client offers it (an official-SDK client
// whose handler plays the human), through the saved draft when it does not;
// and that nothing shaped like a ctalk token is relayed. Every test runs on
// both backends and both protocol generations.

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// forEachProtocol runs fn in parallel subtests, one per protocol generation,
// with the version to ask for ("" is the SDK's default, 2026-07-28).
func forEachProtocol(t *testing.T, fn func(t *testing.T, protocol string)) {
	t.Helper()
	for name, version := range map[string]string{protocolSession: protocolSession, protocolStateless: ""} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, version)
		})
	}
}

// teamEnv is one fresh ctalk with the seed's team, umar and john,
// registered in an organization.
type teamEnv struct {
	*env
	store      db.Store
	protocol   string             // what its sessions ask for ("" is the SDK's default)
	anon       *sdk.ClientSession // a session that sends no token
	umar, john string             // the team's tokens
}

// withTeam runs fn on each backend over a fresh teamEnv whose sessions ask
// for protocol, with the team registered in orgID.
func withTeam(t *testing.T, protocol, orgID string, fn func(t *testing.T, w teamEnv)) {
	t.Helper()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		e := newEnv(t, s)
		anon := dial(t, e.url, protocol, nil, nil)
		umar, john := team(t, anon, orgID)
		fn(t, teamEnv{env: e, store: s, protocol: protocol, anon: anon, umar: umar, john: john})
	})
}

// dial opens another session to w's server, at w's protocol, sending hdr.
func (w teamEnv) dial(t *testing.T, hdr http.Header) *sdk.ClientSession {
	t.Helper()
	return dial(t, w.url, w.protocol, hdr, nil)
}

// forEachProtocolTeam runs withTeam for organization acme at each protocol generation.
func forEachProtocolTeam(t *testing.T, fn func(t *testing.T, w teamEnv)) {
	t.Helper()
	forEachProtocol(t, func(t *testing.T, protocol string) { withTeam(t, protocol, "acme", fn) })
}

// bearer is the header a client configured with token sends.
func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// dial opens an official-SDK session to url at protocol, sending hdr with
// every request and built with opts (an elicitation handler, say), and
// checks that the protocol asked for is the one spoken.
func dial(t *testing.T, url, protocol string, hdr http.Header, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	cs := openSession(t, url, protocol, hdr, opts)
	want := protocol
	if want == "" {
		want = protocolStateless
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("Connect(protocol %q) negotiated %q, want %q", protocol, got, want)
	}
	return cs
}

// human plays the person in front of an eliciting client: it answers every
// elicitation with action and remembers what it was shown.
type human struct {
	action string
	mu     sync.Mutex
	shown  []string
}

func (h *human) elicit(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shown = append(h.shown, req.Params.Message)
	res := &sdk.ElicitResult{Action: h.action}
	if h.action == "accept" {
		res.Content = map[string]any{}
	}
	return res, nil
}

func (h *human) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.shown...)
}

// client connects as token with h answering elicitations.
func (h *human) client(t *testing.T, url, protocol, token string) *sdk.ClientSession {
	t.Helper()
	return dial(t, url, protocol, bearer(token), &sdk.ClientOptions{ElicitationHandler: h.elicit})
}

type notSentOut struct {
	MessageID int64  `json:"message_id"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

// checkUndelivered fails unless question id still waits in john's inbox and
// umar has no reply.
func checkUndelivered(t *testing.T, cs *sdk.ClientSession, umar, john string, id int64) {
	t.Helper()
	inbox := callOK[inboxOut](t, cs, "check_inbox", args{"auth_token": john})
	found := false
	for _, q := range inbox.Questions {
		found = found || q.MessageID == id
	}
	if !found {
		t.Errorf("check_inbox(john) = %+v, want question %d still there", inbox.Questions, id)
	}
	if got := callOK[repliesOut](t, cs, "check_replies", args{"auth_token": umar}); len(got.Replies) != 0 {
		t.Errorf("check_replies(umar) = %+v, want no reply", got.Replies)
	}
}

// TestApprovalElicitation: the human's answer in the client's dialog decides;
// no draft is needed.
func TestApprovalElicitation(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		e, protocol, anon, umar, john := w.env, w.protocol, w.anon, w.umar, w.john
		const final = "Yes, ship it on Friday.\nThe retry fix is in v2.3."

		for _, action := range []string{"decline", "cancel"} {
			h := &human{action: action}
			id := ask(t, anon, umar, "john", "Can we ship on Friday? ("+action+")")
			res := call(t, h.client(t, e.url, protocol, john), "send_response", args{"message_id": id, "final_text": final})
			var got notSentOut
			if err := decode(res.StructuredContent, &got); res.IsError || err != nil {
				t.Fatalf("send_response answered %q = isError %v %q, want a result saying it was not sent", action, res.IsError, resultText(res))
			}
			if got.MessageID != id || got.Status != "not sent" || !strings.Contains(got.Reason, action) {
				t.Errorf("send_response answered %q = %+v, want message %d, status \"not sent\", a reason naming %q", action, got, id, action)
			}
			if n := len(h.asked()); n != 1 {
				t.Errorf("send_response answered %q: the human was asked %d times, want 1", action, n)
			}
			checkUndelivered(t, anon, umar, john, id)
		}

		h := &human{action: "accept"}
		question := "What is the release plan for v2.3?"
		id := ask(t, anon, umar, "john", question)
		sent := callOK[sentOut](t, h.client(t, e.url, protocol, john), "send_response", args{"message_id": id, "final_text": final})
		if diff := cmp.Diff(sentOut{MessageID: id, Status: "sent", FinalText: final, ToUserID: "umar"}, sent); diff != "" {
			t.Errorf("send_response accepted mismatch (-want +got):\n%s", diff)
		}
		asked := h.asked()
		if len(asked) != 1 {
			t.Fatalf("send_response accepted: the human was asked %d times, want 1", len(asked))
		}
		for _, want := range []string{question, "Umar", final} {
			if !strings.Contains(asked[0], want) {
				t.Errorf("elicitation message = %q, want it to show %q", asked[0], want)
			}
		}
		replies := callOK[repliesOut](t, anon, "check_replies", args{"auth_token": umar})
		want := []replyOut{{MessageID: id, AnsweredBy: personOut{UserID: "john", Name: "John"}, Question: question, Answer: final}}
		if diff := cmp.Diff(want, replies.Replies); diff != "" {
			t.Errorf("check_replies(umar) after accept mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestApprovalDraftRule: without elicitation, only the saved draft is sent.
func TestApprovalDraftRule(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		anon, umar, john := w.anon, w.umar, w.john
		cs := w.dial(t, bearer(john))
		id := ask(t, anon, umar, "john", seedQuestion)
		refused := func(what, final string) {
			t.Helper()
			msg := callErr(t, cs, "send_response", args{"message_id": id, "final_text": final})
			if !strings.Contains(msg, "propose_response") || !strings.Contains(msg, "this exact text") {
				t.Errorf("send_response(%s) = %q, want it to say to save this exact text with propose_response first", what, msg)
			}
			checkUndelivered(t, anon, umar, john, id)
		}
		refused("no draft", seedAnswer)
		callOK[draftOut](t, cs, "propose_response", args{"message_id": id, "draft_text": seedAnswer})
		refused("text other than the draft", seedAnswer+" Also, ignore the draft.")

		sent := callOK[sentOut](t, cs, "send_response", args{"message_id": id, "final_text": seedAnswer})
		if diff := cmp.Diff(sentOut{MessageID: id, Status: "sent", FinalText: seedAnswer, ToUserID: "umar"}, sent); diff != "" {
			t.Errorf("send_response(the draft) mismatch (-want +got):\n%s", diff)
		}
		replies := callOK[repliesOut](t, anon, "check_replies", args{"auth_token": umar})
		if len(replies.Replies) != 1 || replies.Replies[0].Answer != seedAnswer {
			t.Errorf("check_replies(umar) = %+v, want the draft %q", replies.Replies, seedAnswer)
		}
	})
}

// TestApprovalNotReplayable: an "accept" the human gave for one text, sent
// back with other text, sends nothing: the human is asked about that text.
func TestApprovalNotReplayable(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		e, protocol, anon, umar, john := w.env, w.protocol, w.anon, w.umar, w.john
		id := ask(t, anon, umar, "john", seedQuestion)
		const shown, swapped = "Three attempts, exponential backoff.", "Retries are disabled; delete the queue."

		// A 2026-07-28 client that handles input requests itself sees the
		// request for the text it was shown, and the state to echo.
		raw := dial(t, e.url, "", bearer(john), &sdk.ClientOptions{
			ElicitationHandler: (&human{action: "decline"}).elicit,
			MultiRoundTrip:     &sdk.MultiRoundTripOptions{Disabled: true},
		})
		first := call(t, raw, "send_response", args{"message_id": id, "final_text": shown})
		req, _ := first.InputRequests["approve_send"].(*sdk.ElicitParams)
		if !first.NeedsInput() || first.RequestState == "" || req == nil || !strings.Contains(req.Message, shown) {
			t.Fatalf("send_response = %+v, want an input request showing %q, with request state", first, shown)
		}

		h := &human{action: "decline"}
		res, err := h.client(t, e.url, protocol, john).CallTool(t.Context(), &sdk.CallToolParams{
			Name:           "send_response",
			Arguments:      args{"message_id": id, "final_text": swapped},
			InputResponses: sdk.InputResponseMap{"approve_send": &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}},
			RequestState:   first.RequestState,
		})
		if err != nil {
			t.Fatalf("send_response replaying an accept: %v", err)
		}
		if res.IsError || !strings.Contains(resultText(res), "not sent") {
			t.Errorf("send_response replaying an accept for other text = %q, want a result saying it was not sent", resultText(res))
		}
		asked := h.asked()
		if len(asked) != 1 || !strings.Contains(asked[0], swapped) {
			t.Errorf("replayed accept: the human was shown %q, want one request showing %q", asked, swapped)
		}
		checkUndelivered(t, anon, umar, john, id)
	})
}

// TestCredentialRefused: text shaped like a ctalk token is never relayed or
// stored, and a page on another site cannot spend a token.
func TestCredentialRefused(t *testing.T) {
	t.Parallel()
	forEachProtocolTeam(t, func(t *testing.T, w teamEnv) {
		e, anon, umar, john := w.env, w.anon, w.umar, w.john
		id := ask(t, anon, umar, "john", seedQuestion)
		fake := "ctalk_" + strings.Repeat("Ab9-_", 8) + "xYz"
		for _, secret := range []string{fake, umar} {
			for _, tc := range []struct {
				tool string
				a    args
			}{
				{"ask_person", args{"auth_token": umar, "to_user_id": "john", "question": "Use my login: " + secret + ", thanks"}},
				{"ask_person", args{"auth_token": umar, "to_user_id": "john", "question": "x" + secret + "y"}},
				{"update_my_notes", args{"auth_token": umar, "notes": "token " + secret}},
				{"propose_response", args{"auth_token": john, "message_id": id, "draft_text": "Try " + secret}},
				{"send_response", args{"auth_token": john, "message_id": id, "final_text": secret}},
				{"update_user_profile_notes", args{"org_id": "acme", "admin_password": adminPassword, "user_id": "john", "profile_notes": secret}},
				{"register_user", args{"org_id": "acme", "admin_password": adminPassword, "user_id": "eve", "name": "Eve",
					"password": userPassword, "ownership": "x", "notes": secret}},
			} {
				msg := callErr(t, anon, tc.tool, tc.a)
				if !strings.Contains(msg, "looks like a credential") || strings.Contains(msg, secret) {
					t.Errorf("%s with a token in its text = %q, want \"looks like a credential\" without the token", tc.tool, msg)
				}
			}
		}

		// A browser page on another site, holding umar's token, is refused before any tool runs.
		body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask_person",` +
			`"arguments":{"to_user_id":"john","question":"cross-site"}}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, strings.NewReader(body))
		req.Header = bearer(umar)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("cross-origin POST: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /mcp with Origin https://evil.example = %d, want 403", resp.StatusCode)
		}

		inbox := callOK[inboxOut](t, anon, "check_inbox", args{"auth_token": john})
		want := []inboxItemOut{{MessageID: id, Question: seedQuestion, From: personOut{UserID: "umar", Name: "Umar", Ownership: "platform tooling"}}}
		if diff := cmp.Diff(want, inbox.Questions); diff != "" {
			t.Errorf("check_inbox(john) after refused calls mismatch (-want +got):\n%s", diff)
		}
		if got := callOK[userOut](t, anon, "whoami", args{"auth_token": umar}); got.Notes != "" {
			t.Errorf("whoami(umar).notes = %q, want empty", got.Notes)
		}
		p := callOK[profileOut](t, anon, "get_user_profile", args{"auth_token": umar, "user_id": "john"})
		if p.User.ProfileNotes != "" {
			t.Errorf("john's profile_notes = %q, want empty", p.User.ProfileNotes)
		}
		users := callOK[usersOut](t, anon, "list_users", args{"auth_token": umar})
		if len(users.Users) != 2 {
			t.Errorf("list_users = %+v, want only umar and john", users.Users)
		}
		checkUndelivered(t, anon, umar, john, id)
	})
}
