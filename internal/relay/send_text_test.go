package relay

import (
	"strings"
	"testing"
)

// TestNotApproved: a declined answer says to ask the user what to change;
// a cancelled dialog also says that a scripted run cancels every dialog
// and what works instead, and that a draft does not.
func TestNotApproved(t *testing.T) {
	t.Parallel()
	decline := notApproved("decline")
	for _, want := range []string{"(decline)", "nothing was sent", "still unanswered", "what to change"} {
		if !strings.Contains(decline, want) {
			t.Errorf("notApproved(decline) = %q, want it to say %q", decline, want)
		}
	}
	cancel := notApproved("cancel")
	for _, want := range []string{"(cancel)", "nothing was sent", "still unanswered", "claude -p", "interactive Claude Code session",
		"SDK host", "propose_response does not help"} {
		if !strings.Contains(cancel, want) {
			t.Errorf("notApproved(cancel) = %q, want it to say %q", cancel, want)
		}
	}
}
