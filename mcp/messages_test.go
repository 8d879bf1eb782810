package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
)

type inboxView struct {
	Questions []struct {
		MessageID int64   `json:"message_id"`
		Question  string  `json:"question"`
		DraftText *string `json:"draft_text"`
	} `json:"questions"`
}

func (h *harness) inbox(token string) inboxView {
	h.t.Helper()
	var res inboxView
	h.ok("check_inbox", map[string]any{"auth_token": token}, &res)
	return res
}

// TestOnlyRecipientAnswers: the asker (or anyone else) drafting or sending an
// answer is told exactly what a nonexistent message would tell them.
func TestOnlyRecipientAnswers(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{}, func(t *testing.T, h *harness, umar, john string) {
		h.org("other")
		h.user("other", "eve")
		eve := h.login("other", "eve")
		id := h.ask(umar, "john", "What is the retry logic in alpha-repo?")

		missing := id + 1000
		for _, tt := range []struct {
			who   string
			token string
			id    int64
		}{
			{"the asker", umar, id},
			{"nobody's message", john, missing},
			{"another organization", eve, id},
		} {
			want := fmt.Sprintf("there is no question %d in your inbox: check_inbox lists the questions you can answer", tt.id)
			h.wantFail("send_response", map[string]any{"auth_token": tt.token, "message_id": tt.id, "final_text": "Three attempts."}, want)
			h.wantFail("propose_response", map[string]any{"auth_token": tt.token, "message_id": tt.id, "draft_text": "Three attempts."}, want)
		}

		in := h.inbox(john)
		if len(in.Questions) != 1 || in.Questions[0].MessageID != id || in.Questions[0].DraftText != nil {
			t.Errorf("john's inbox = %+v, want question %d unanswered with no draft", in.Questions, id)
		}
		if r := h.replies(umar, nil); len(r.Replies) != 0 {
			t.Errorf("umar's replies = %+v, want none", r.Replies)
		}
	})
}

// TestAnswerIsFinal: a draft is never delivered; once sent, an answer cannot
// be redrafted or changed, and sending the same text again is harmless.
func TestAnswerIsFinal(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{}, func(t *testing.T, h *harness, umar, john string) {
		id := h.ask(umar, "john", "Which queue do payments use?")
		args := func(key, text string) map[string]any {
			return map[string]any{"auth_token": john, "message_id": id, key: text}
		}

		h.wantFail("propose_response", map[string]any{"auth_token": john, "message_id": "abc", "draft_text": "x"},
			"message_id must be a message number such as 12 (check_inbox lists them)")
		// A model may echo the id the way check_inbox's text shows it.
		h.ok("propose_response", map[string]any{"auth_token": john, "message_id": fmt.Sprintf("message %d", id),
			"draft_text": "The payments queue."}, nil)
		if r := h.replies(umar, nil); len(r.Replies) != 0 {
			t.Errorf("umar's replies after a draft = %+v, want none: a draft is never delivered", r.Replies)
		}
		h.ok("send_response", args("final_text", "The payments queue."), nil)

		h.wantFail("propose_response", args("draft_text", "Actually, the billing queue."),
			fmt.Sprintf("question %d was already answered; its answer cannot change", id))
		h.wantFail("send_response", args("final_text", "Actually, the billing queue."),
			fmt.Sprintf("question %d was already answered with different text; an answer is sent once and cannot change", id))
		var again struct {
			Status string `json:"status"`
		}
		h.ok("send_response", args("final_text", "The payments queue."), &again)
		if again.Status != "already sent" {
			t.Errorf("send_response with the sent text again: status %q, want %q", again.Status, "already sent")
		}

		got := h.replies(umar, nil).Replies
		if diff := cmp.Diff([]replyView{{MessageID: id, Answer: "The payments queue."}}, got); diff != "" {
			t.Errorf("umar's replies mismatch (-want +got):\n%s", diff)
		}
		if in := h.inbox(john); len(in.Questions) != 0 {
			t.Errorf("john's inbox after answering = %+v, want empty", in.Questions)
		}
	})
}

func TestCheckRepliesSince(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{}, func(t *testing.T, h *harness, umar, john string) {
		q1 := h.ask(umar, "john", "one?")
		q2 := h.ask(umar, "john", "two?")
		h.clock.Advance(time.Minute)
		t1 := h.clock.Now()
		h.answer(john, q1, "one.")
		h.clock.Advance(time.Minute)
		t2 := h.clock.Now()
		h.answer(john, q2, "two.")

		both := []replyView{{MessageID: q1, Answer: "one."}, {MessageID: q2, Answer: "two."}}
		second := both[1:]
		for _, tt := range []struct {
			since string
			want  []replyView
		}{
			{"", both},
			{relay.DefaultSince, both},
			{t1.Format(time.RFC3339), both},
			{t1.Add(time.Second).Format(time.RFC3339), second},
			{t2.Format(time.RFC3339), second},                                      // at or after
			{t2.In(time.FixedZone("", 2*3600)).Format(time.RFC3339), second},       // any offset
			{t2.Add(-time.Microsecond).Format(time.RFC3339Nano), second},           // sub-second
			{t2.Add(time.Second).Format(time.RFC3339), []replyView{}},              // after both
			{t2.Add(24 * time.Hour).Format("2006-01-02T15:04:05Z"), []replyView{}}, // future
		} {
			got := h.replies(umar, map[string]any{"since": tt.since}).Replies
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("check_replies(since=%q) mismatch (-want +got):\n%s", tt.since, diff)
			}
		}
		if r := h.replies(john, nil); len(r.Replies) != 0 {
			t.Errorf("john's replies = %+v, want none: he asked nothing", r.Replies)
		}

		for _, since := range []string{"yesterday", "2026-03-01", "2026-03-01 09:00:00", "2026-03-01T09:00:00", "1700000000"} {
			got := h.fail("check_replies", map[string]any{"auth_token": umar, "since": since})
			if !strings.HasPrefix(got, "since must be an RFC 3339 time") {
				t.Errorf("check_replies(since=%q) error = %q, want it to explain since", since, got)
			}
		}
		for _, cursor := range []string{"abc", "-1", "1.5", "cursor 3"} {
			got := h.fail("check_replies", map[string]any{"auth_token": umar, "cursor": cursor})
			if !strings.HasPrefix(got, "cursor must be the cursor value") {
				t.Errorf("check_replies(cursor=%q) error = %q, want it to explain cursor", cursor, got)
			}
		}
	})
}

func TestCheckRepliesCursor(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{}, func(t *testing.T, h *harness, umar, john string) {
		q1 := h.ask(umar, "john", "one?")
		h.answer(john, q1, "one.")

		first := h.replies(umar, nil)
		if diff := cmp.Diff([]replyView{{MessageID: q1, Answer: "one."}}, first.Replies); diff != "" {
			t.Errorf("first check_replies mismatch (-want +got):\n%s", diff)
		}
		next := h.replies(umar, map[string]any{"cursor": first.Cursor})
		if len(next.Replies) != 0 || next.Cursor != first.Cursor {
			t.Errorf("check_replies(cursor=%s) = %+v, want no replies and the same cursor", first.Cursor, next)
		}
		q2 := h.ask(umar, "john", "two?")
		h.answer(john, q2, "two.")
		got := h.replies(umar, map[string]any{"cursor": first.Cursor}).Replies
		if diff := cmp.Diff([]replyView{{MessageID: q2, Answer: "two."}}, got); diff != "" {
			t.Errorf("check_replies(cursor=%s) after a new answer mismatch (-want +got):\n%s", first.Cursor, diff)
		}
	})
}

// gateStore holds the next write transaction open after its work is done and
// before it commits, to make a commit late.
type gateStore struct {
	db.Store
	mu   sync.Mutex
	hook func()
}

func (g *gateStore) holdNextCommit(hook func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hook = hook
}

func (g *gateStore) InTx(ctx context.Context, fn func(q db.Queries) error) error {
	return g.Store.InTx(ctx, func(q db.Queries) error {
		if err := fn(q); err != nil {
			return err
		}
		g.mu.Lock()
		hook := g.hook
		g.hook = nil
		g.mu.Unlock()
		if hook != nil {
			hook()
		}
		return nil
	})
}

// TestCheckRepliesLateCommit: an answer stamped before a poll but committed
// after it must still reach the asker at their next poll, through the cursor
// and through since (DESIGN: "check_replies never misses a reply that
// committed late, whatever since says"). Each way of polling gets a scenario
// of its own, since the first poll that shows the reply records it as seen.
func TestCheckRepliesLateCommit(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"cursor", "since", "since+cursor"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
				gate := &gateStore{Store: s}
				h := newHarness(t, gate, Options{})
				umar, john := h.team()
				id := h.ask(umar, "john", "slow one?")
				h.ok("propose_response", map[string]any{"auth_token": john, "message_id": id, "draft_text": "slow."}, nil)

				inTx, commit := make(chan struct{}), make(chan struct{})
				release := sync.OnceFunc(func() { close(commit) })
				t.Cleanup(release) // never leave the transaction open: closing the store would wait for it
				gate.holdNextCommit(func() { close(inTx); <-commit })
				sent := make(chan *mcpgo.CallToolResult, 1)
				go func() {
					req := mcpgo.CallToolRequest{}
					req.Params.Name = "send_response"
					req.Params.Arguments = map[string]any{"auth_token": john, "message_id": id, "final_text": "slow."}
					res, err := h.client.CallTool(t.Context(), req)
					if err != nil {
						res = mcpgo.NewToolResultError(err.Error())
					}
					sent <- res
				}()
				<-inTx // the answer is stamped with the current time but not committed

				h.clock.Advance(10 * time.Second)
				pollAt := h.clock.Now().Format(time.RFC3339)
				before := h.replies(umar, nil)
				if len(before.Replies) != 0 {
					t.Fatalf("check_replies saw an uncommitted answer: %+v", before.Replies)
				}
				release()
				if res := <-sent; res.IsError {
					t.Fatalf("send_response = error %q", resultText(t, res))
				}

				extra := map[string]map[string]any{
					"cursor":       {"cursor": before.Cursor},
					"since":        {"since": pollAt},
					"since+cursor": {"since": pollAt, "cursor": before.Cursor},
				}[variant]
				want := []replyView{{MessageID: id, Answer: "slow."}}
				got := h.replies(umar, extra).Replies
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("check_replies(%v) after a poll at %s missed the late answer (-want +got):\n%s", extra, pollAt, diff)
				}
			})
		})
	}
}

// TestCheckRepliesClockSkew: two replicas whose clocks differ by two seconds
// share one database. An answer sent through the slow replica after the asker
// has seen a later-stamped one must still come back when the asker polls with
// since = the newest answered_at it has seen (the seed's way to poll).
func TestCheckRepliesClockSkew(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		slow := newHarness(t, s, Options{})
		fast := newHarness(t, s, Options{})
		fast.clock.Advance(2 * time.Second)
		umar, john := slow.team()
		q1 := slow.ask(umar, "john", "one?")
		q2 := slow.ask(umar, "john", "two?")

		fast.answer(john, q1, "one.")
		var seen struct {
			Replies []struct {
				AnsweredAt time.Time `json:"answered_at"`
			} `json:"replies"`
		}
		slow.ok("check_replies", map[string]any{"auth_token": umar}, &seen)
		if len(seen.Replies) != 1 {
			t.Fatalf("first check_replies = %+v, want one reply", seen.Replies)
		}
		since := seen.Replies[0].AnsweredAt.Format(time.RFC3339Nano)

		slow.answer(john, q2, "two.")
		got := slow.replies(umar, map[string]any{"since": since}).Replies
		want := []replyView{{MessageID: q1, Answer: "one."}, {MessageID: q2, Answer: "two."}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("check_replies(since=%s) missed an answer sent after the last poll (-want +got):\n%s", since, diff)
		}
	})
}
