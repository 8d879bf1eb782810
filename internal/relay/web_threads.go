package relay

import (
	"context"

	"github.com/ctalk/ctalk/db"
)

// QuestionThread is what the web's question page shows of a question's
// conversation beyond GetQuestion: where it belongs, what was said before
// it, and whether its answer was shared.
type QuestionThread struct {
	ThreadID int64
	// Earlier are the turns sent before the question (empty for a first question).
	Earlier []Turn
	// Shared: the answer was sent shared with the organization.
	Shared bool
}

// GetQuestionThread returns the conversation context of a question asked of
// the caller. A missing message, another organization's and one asked of
// someone else give the same KindNotFound error as GetQuestion.
func (s *Service) GetQuestionThread(ctx context.Context, cred Credentials, id int64) (QuestionThread, error) {
	var out QuestionThread
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		if id <= 0 {
			return notYourQuestion(id)
		}
		m, err := recipientMessage(ctx, q, c, id)
		if err != nil {
			return err
		}
		out = QuestionThread{ThreadID: m.ThreadID, Shared: m.SharedAt != nil}
		out.Earlier, err = earlierTurns(ctx, q, m)
		return err
	}))
	return out, err
}
