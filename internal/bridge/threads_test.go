package bridge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
)

// channelPeer starts a bridge for user and plays Claude Code on it until
// its channel runs.
func channelPeer(t *testing.T, endpoint string, team testkit.Team, user string) (*bridgeRun, *stdioPeer) {
	t.Helper()
	br := startBridge(t, endpoint, team, user)
	p := &stdioPeer{in: br.in, out: bufio.NewScanner(br.out)}
	p.out.Buffer(nil, 1<<20)
	p.call(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "0"}})
	p.call(t, "tools/list", map[string]any{})
	waitForChannel(t, endpoint, team, br)
	return br, p
}

// channelEvent reads the bridge's next channel event.
func (p *stdioPeer) channelEvent(t *testing.T) (content string, meta map[string]string) {
	t.Helper()
	for p.out.Scan() {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Content string            `json:"content"`
				Meta    map[string]string `json:"meta"`
			} `json:"params"`
		}
		if json.Unmarshal(p.out.Bytes(), &msg) == nil && msg.Method == channelMethod {
			return msg.Params.Content, msg.Params.Meta
		}
	}
	t.Fatalf("the bridge closed stdout without writing a channel event: %v", p.out.Err())
	return "", nil
}

// answerThrough answers message id through the bridge as its client would
// without elicitation: the draft, then the same text.
func (p *stdioPeer) answerThrough(t *testing.T, id int64, text string) {
	t.Helper()
	for _, step := range []struct{ tool, field string }{{"propose_response", "draft_text"}, {"send_response", "final_text"}} {
		if out, isErr := p.callTool(t, step.tool, map[string]any{"message_id": id, step.field: text}); isErr {
			t.Fatalf("%s(%d) through the bridge = %q, want success", step.tool, id, out)
		}
	}
}

// askIn asks, as c, a question continuing the conversation of message id.
func askIn(t *testing.T, c *relayclient.Client, id int64, question string) int64 {
	t.Helper()
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.Call(t.Context(), "ask_person", map[string]any{"follow_up_to": id, "question": question}, &res); err != nil {
		t.Fatalf("ask_person(follow_up_to %d): %v", id, err)
	}
	return res.MessageID
}

// TestBridgeConversation: the turns of a conversation reach each person's
// Claude Code as channel events that say which conversation they continue:
// the question John asks back reaches Umar's, Umar's follow-up reaches
// John's; each answers through the bridge.
func TestBridgeConversation(t *testing.T) {
	t.Parallel()
	team := testkit.Pair
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := serveRelay(t, s)
		clients := team.Seed(t, endpoint)
		umar, john := clients["umar"], clients["john"]
		check := func(what, content string, meta map[string]string, want string, wantMeta map[string]string) {
			t.Helper()
			if content != want {
				t.Errorf("%s: channel content = %q, want %q", what, content, want)
			}
			if diff := cmp.Diff(wantMeta, meta); diff != "" {
				t.Errorf("%s: channel meta mismatch (-want +got):\n%s", what, diff)
			}
		}

		br, p := channelPeer(t, endpoint, team, "umar")
		first := testkit.Ask(t, umar, "john", "How do refunds retry?")
		back := askIn(t, john, first, "Which service do you mean?")
		content, meta := p.channelEvent(t)
		check("john asks back", content, meta,
			fmt.Sprintf("John (john) asks a follow-up (message %d, continues conversation %d; get_thread %d shows the earlier turns): "+
				"Which service do you mean?", back, first, back),
			map[string]string{"message_id": fmt.Sprint(back), "from": "john", "kind": "question", "thread_id": fmt.Sprint(first)})
		p.answerThrough(t, back, "payments-service.")
		answerWith(t, john, first, "Three attempts, then the dead-letter queue.")
		content, meta = p.channelEvent(t)
		check("john's answer", content, meta,
			fmt.Sprintf(`John (john) answers your question (message %d, "How do refunds retry?"): Three attempts, then the dead-letter queue.`, first),
			map[string]string{"message_id": fmt.Sprint(first), "from": "john", "kind": "answer", "thread_id": fmt.Sprint(first)})
		br.stop(t)

		br, p = channelPeer(t, endpoint, team, "john")
		more := askIn(t, umar, first, "Is the delay between attempts fixed?")
		content, meta = p.channelEvent(t)
		check("umar's follow-up", content, meta,
			fmt.Sprintf("Umar (umar) asks a follow-up (message %d, continues conversation %d; get_thread %d shows the earlier turns): "+
				"Is the delay between attempts fixed?", more, first, more),
			map[string]string{"message_id": fmt.Sprint(more), "from": "umar", "kind": "question", "thread_id": fmt.Sprint(first)})
		p.answerThrough(t, more, "No: exponential backoff.")
		text, isErr := p.callTool(t, "get_thread", map[string]any{"message_id": more})
		var thread struct {
			Turns []struct {
				Kind string `json:"kind"`
				By   struct {
					UserID string `json:"user_id"`
				} `json:"by"`
				Text string `json:"text"`
			} `json:"turns"`
		}
		if err := json.Unmarshal([]byte(text), &thread); isErr || err != nil {
			t.Fatalf("get_thread through the bridge = %q (isError %v), want the conversation", text, isErr)
		}
		var got []string
		for _, turn := range thread.Turns {
			got = append(got, turn.By.UserID+" "+turn.Kind+": "+turn.Text)
		}
		want := []string{"umar question: How do refunds retry?", "john question: Which service do you mean?",
			"umar answer: payments-service.", "john answer: Three attempts, then the dead-letter queue.",
			"umar question: Is the delay between attempts fixed?", "john answer: No: exponential backoff."}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("get_thread through john's bridge (-want +got):\n%s", diff)
		}
		br.stop(t)
		if out := br.stderr.String(); strings.Contains(out, "exponential backoff") {
			t.Errorf("the bridge logged a message's text: %q", out)
		}
	})
}

// answerWith answers message id as c: the draft, then the same text.
func answerWith(t *testing.T, c *relayclient.Client, id int64, text string) {
	t.Helper()
	if err := c.Call(t.Context(), "propose_response", map[string]any{"message_id": id, "draft_text": text}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), "send_response", map[string]any{"message_id": id, "final_text": text}, nil); err != nil {
		t.Fatal(err)
	}
}
