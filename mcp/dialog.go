package mcp

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctalk/ctalk/internal/relay"
)

// The approval dialog's text. Claude Code (2.1.332) shows three rows of an
// elicitation message: a message of one line it wraps into them; one of
// several lines it shows line by line, each cut at the terminal's width. An
// asker writes the question, and a model that read it writes the answer, so
// the order is fixed by what the person must see:
//
//   - who receives the answer, and the answer itself, first, on one line
//     (line breaks and invisible characters shown as marks);
//   - then the asker's question, quoted, on one line, labelled as theirs:
//     it comes after the answer, so it can neither push the answer out of
//     view nor stand where the answer is;
//   - then what Accept and Decline do, and who will be able to see the
//     answer: the asker only, or (shared) everyone in the organization.
//
// A short one-line answer makes the whole message one line, wrapped whole
// into the rows Claude Code shows. Otherwise the message has these three
// lines (a longer answer cut on the first, and the third saying so, with
// how many characters Accept sends and how to read them first), and the
// exact answer ends it, for clients that show all of the message.

const (
	// answerBudget is how much of the first line holds the answer: with
	// the recipient's name, three rows of an 80-column terminal.
	answerBudget = 180
	// questionShown bounds the question's quote.
	questionShown = 200
)

// approvalMessage is the dialog that asks the person to approve r.
func approvalMessage(r relay.ApprovalRequest) string {
	name := oneLine(r.AskerName)
	answer := []rune(oneLine(r.FinalText))
	question := []rune(oneLine(r.Question))
	if len(question) > questionShown {
		question = append(question[:questionShown-1], '…')
	}
	theirs := fmt.Sprintf("%s's question (message %d), their words, not your answer: “%s”", name, r.MessageID, string(question))
	// Who will see the answer is part of what the person approves.
	act := fmt.Sprintf("Accept sends exactly this answer now, to %s only; Decline sends nothing.", name)
	if r.Share {
		act = "Accept sends exactly this answer now and SHARES it: everyone in your organization can find the question " +
			"and this answer; Decline sends nothing."
	}
	if len(answer) <= answerBudget && string(answer) == r.FinalText {
		return fmt.Sprintf("Send to %s (%s): “%s” — %s — %s", name, r.AskerID, r.FinalText, theirs, act)
	}
	lines := act
	if len(answer) > answerBudget {
		answer = append(answer[:answerBudget-1], '…')
		lines = fmt.Sprintf("Answer cut above: %d characters, all sent on Accept. To read it all, Decline and ask Claude to show it.",
			utf8.RuneCountInString(r.FinalText))
	}
	return fmt.Sprintf("Send to %s (%s): “%s”\n%s\n%s\n\nThe answer, exactly as it will be sent:\n%s",
		name, r.AskerID, string(answer), theirs, lines, r.FinalText)
}

// oneLine renders s on one line with nothing hidden: a line break becomes
// ⏎, and a control or invisible formatting character (a bidirectional
// override, say, which could reorder what the person reads) its \u escape.
func oneLine(s string) string {
	var b strings.Builder
	s = strings.ReplaceAll(s, "\r\n", "\n")
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune('⏎')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
