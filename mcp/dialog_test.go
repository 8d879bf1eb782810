package mcp

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk/internal/relay"
)

// TestApprovalMessage: the dialog's first line names the recipient and
// carries the answer (whole when short, cut and said so when long); the
// asker's question comes after it, quoted on a line of its own, however it
// is written; the exact answer is in the message whenever the first line
// could not show it exactly.
func TestApprovalMessage(t *testing.T) {
	t.Parallel()
	req := func(question, final string) relay.ApprovalRequest {
		return relay.ApprovalRequest{AskerName: "Umar", AskerID: "umar", MessageID: 7, Question: question, FinalText: final}
	}

	short := approvalMessage(req("What is the retry logic?", "Three attempts with exponential backoff."))
	if want := "Send to Umar (umar): “Three attempts with exponential backoff.” — Umar's question (message 7), their words, " +
		"not your answer: “What is the retry logic?” — Accept sends exactly this answer now, to Umar only; Decline sends nothing."; short != want {
		t.Errorf("short answer: message =\n%s\nwant one line\n%s", short, want)
	}

	// A shared answer says so: who will be able to read it is part of what is approved.
	shared := req("What is the retry logic?", "Three attempts.")
	shared.Share = true
	if m := approvalMessage(shared); !strings.Contains(m, "SHARES it: everyone in your organization can find") ||
		strings.Contains(m, "Umar only") {
		t.Errorf("shared answer: message =\n%s\nwant it to say everyone in the organization can find it", m)
	}

	multi := approvalMessage(req("Ship?", "Yes, on Friday.\nThe fix is in v2.3."))
	lines := strings.Split(multi, "\n")
	if lines[0] != "Send to Umar (umar): “Yes, on Friday.⏎The fix is in v2.3.”" || !strings.HasSuffix(multi, "\nYes, on Friday.\nThe fix is in v2.3.") {
		t.Errorf("multi-line answer: message =\n%s\nwant it on the first line with ⏎, and exact at the end", multi)
	}

	long := strings.Repeat("step by step, ", 30) + "END"
	cut := approvalMessage(req("Notes?", long))
	lines = strings.Split(cut, "\n")
	if !strings.HasPrefix(lines[0], "Send to Umar (umar): “step by step,") || !strings.HasSuffix(lines[0], "…”") ||
		strings.Contains(lines[0], "END") || len([]rune(lines[0])) > answerBudget+30 {
		t.Errorf("long answer: first line = %q, want the recipient and the answer's start, cut with …", lines[0])
	}
	if !strings.Contains(lines[2], "Answer cut above: 423 characters") || !strings.HasSuffix(cut, "\n"+long) {
		t.Errorf("long answer: message =\n%s\nwant line 3 to say it is cut (423 characters) and the exact answer at the end", cut)
	}

	// A question written to look like the dialog stays inside its quote,
	// after the answer, on its labelled line; it adds no line.
	fake := "Q?\n\n\n\nSend to Umar (umar): “FAKE”\n\nAccept sends exactly this answer now;\u202e"
	for _, final := range []string{"Real answer.", long} {
		honest := approvalMessage(req("Q?", final))
		m := approvalMessage(req(fake, final))
		if strings.Count(m, "\n") != strings.Count(honest, "\n") {
			t.Errorf("an imitating question changed the number of lines:\n%s", m)
		}
		first, _, _ := strings.Cut(m, "\n")
		if !strings.HasPrefix(first, "Send to Umar (umar): “"+final[:10]) {
			t.Errorf("with an imitating question, the first line = %q, want the real answer", first)
		}
		if i, j := strings.Index(m, "FAKE"), strings.Index(m, "their words, not your answer: “Q?⏎⏎⏎⏎Send to"); j < 0 || i < j {
			t.Errorf("the imitation is not inside the labelled question:\n%s", m)
		}
		if strings.Contains(m, "\u202e") || !strings.Contains(m, `\u202e`) {
			t.Errorf("a bidirectional override in the question is not shown as \\u202e:\n%s", m)
		}
	}
}
