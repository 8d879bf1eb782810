package relay

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestProposeRacingSend: propose_response racing send_response on fresh
// questions never fails with an internal error (which faces log as ERROR
// and show as "internal error"): the draft is saved, or the question was
// answered and propose says so; the send sends, or is refused because the
// draft changed. A bounded 50 rounds per backend.
func TestProposeRacingSend(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := umarAndJohn(t, s)
		ctx := t.Context()
		answeredFirst := 0
		for i := range 50 {
			q, err := f.s.Ask(ctx, umar, "john", fmt.Sprintf("Question %d?", i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.Propose(ctx, john, q.MessageID, "first draft"); err != nil {
				t.Fatal(err)
			}
			var (
				start               = make(chan struct{})
				wg                  sync.WaitGroup
				proposeErr, sendErr error
				sent                SendOutcome
			)
			wg.Go(func() {
				<-start
				_, proposeErr = f.s.Propose(ctx, john, q.MessageID, "second draft")
			})
			wg.Go(func() {
				<-start
				sent, sendErr = f.s.Send(ctx, john, q.MessageID, "first draft", Approval{})
			})
			close(start)
			wg.Wait()

			var re *Error
			answered := fmt.Sprintf("question %d was already answered; its answer cannot change", q.MessageID)
			if proposeErr != nil && (!errors.As(proposeErr, &re) || re.Kind != KindConflict || proposeErr.Error() != answered) {
				t.Fatalf("round %d: propose racing a send = %v (%T), want success or %q", i, proposeErr, proposeErr, answered)
			}
			if sendErr != nil && (!errors.As(sendErr, &re) || re.Kind != KindConflict) {
				t.Fatalf("round %d: send racing a propose = %v (%T), want success or a conflict", i, sendErr, sendErr)
			}
			if proposeErr != nil {
				answeredFirst++
				if sent.Sent == nil {
					t.Fatalf("round %d: propose says answered but the send = %+v, %v", i, sent, sendErr)
				}
			}
		}
		t.Logf("propose found the question answered in %d of 50 rounds", answeredFirst)
	})
}
