package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relayclient"
	"github.com/ctalk/ctalk/internal/testkit"
)

// followUp asks, as c, a question that continues the conversation of message id.
func followUp(t *testing.T, c *relayclient.Client, id int64, question string) int64 {
	t.Helper()
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.Call(t.Context(), "ask_person", map[string]any{"follow_up_to": id, "question": question}, &res); err != nil {
		t.Fatalf("ask_person(follow_up_to %d): %v", id, err)
	}
	return res.MessageID
}

// TestWaitFollowUps: a question that continues a conversation wakes the
// session saying so, and which conversation: a follow-up to an answer the
// user gave, and a question asked back about the user's own question.
func TestWaitFollowUps(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		clients := team.Seed(t, endpoint)
		umar, john := clients["umar"], clients["john"]
		_, env := testkit.Home(t)
		loginJohn(t, env, endpoint)
		wait := func(what, want string) {
			t.Helper()
			code, _, stderr := runInProcess(t.Context(), env, "", "wait", "--timeout", "10s")
			if code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("wait after %s = %d, %q; want 2 and one line with %q", what, code, stderr, want)
			}
		}

		first := testkit.Ask(t, umar, "john", "Which queue does billing retry on?")
		wait("a first question", fmt.Sprintf("Umar (umar) asks the user (message %d)", first))
		answer(t, john, first, "The orders queue.")
		more := followUp(t, umar, first, "And how many attempts?")
		wait("umar's follow-up", fmt.Sprintf(`Umar (umar) asks a follow-up in conversation %d (message %d) — their words: "And how many attempts?"`, first, more))

		mine := testkit.Ask(t, john, "umar", "Can you review my deploy?")
		back := followUp(t, umar, mine, "Which deploy do you mean?")
		wait("a question asked back", fmt.Sprintf(`Umar (umar) asks a follow-up in conversation %d (message %d) — their words: "Which deploy do you mean?"`, mine, back))
		answer(t, john, back, "The payments one.")
		answer(t, umar, mine, "Approved.")
		wait("the answer in the conversation", fmt.Sprintf(`Umar (umar) answered your question (message %d) — their words: "Approved."`, mine))
	})
}
