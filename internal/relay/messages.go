package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Page sizes: a model reads every item, so results stay short and say when there is more.
const (
	inboxPage   = 20
	repliesPage = 20
)

// AskResult is a question just asked.
type AskResult struct {
	MessageID int64     `json:"message_id"`
	ThreadID  int64     `json:"thread_id"`
	ToUserID  string    `json:"to_user_id"`
	ToName    string    `json:"to_name"`
	AskedAt   time.Time `json:"asked_at"`
	Status    string    `json:"status"`
	// FollowUpTo is the message whose conversation this question continues.
	FollowUpTo int64 `json:"follow_up_to,omitempty"`
	// ChosenBecause says why ctalk chose the person, when asked by topic.
	ChosenBecause string `json:"chosen_because,omitempty"`
	NextStep      string `json:"next_step"`
}

// AskInput is a question and whom it is for: a person (To), the person who
// best matches a topic (Topic), or the other person of a conversation
// (FollowUpTo, a message of it).
type AskInput struct {
	To         string
	Topic      string
	FollowUpTo int64
	Question   string
}

// Ask sends a question from the caller to another person of their organization.
func (s *Service) Ask(ctx context.Context, cred Credentials, toArg, questionArg string) (AskResult, error) {
	return s.AskWith(ctx, cred, AskInput{To: toArg, Question: questionArg})
}

// AskWith sends a question to a person, to whoever best matches a topic, or
// as a follow-up in a conversation.
func (s *Service) AskWith(ctx context.Context, cred Credentials, in AskInput) (AskResult, error) {
	in.Topic = strings.TrimSpace(in.Topic)
	switch {
	case in.FollowUpTo < 0:
		return AskResult{}, badInput("follow_up_to must be a message id from your conversations (check_inbox, check_replies)")
	case in.FollowUpTo > 0 && in.Topic != "":
		return AskResult{}, badInput("follow_up_to asks the other person of that conversation: leave topic out")
	case in.Topic != "" && strings.TrimSpace(in.To) != "":
		return AskResult{}, badInput("give either to_user_id (a person) or topic (ctalk picks the person), not both")
	case in.FollowUpTo > 0:
		return s.askFollowUp(ctx, cred, in)
	case in.Topic != "":
		return s.askByTopic(ctx, cred, in)
	}
	to, err := slug("to_user_id", in.To)
	if err != nil {
		return AskResult{}, err
	}
	question, err := text("question", in.Question, true, MaxQuestionLen)
	if err != nil {
		return AskResult{}, err
	}
	hash, err := cred.tokenHash()
	if err != nil {
		return AskResult{}, err
	}
	// One call: on PostgreSQL one statement checks, numbers, stores and
	// notifies, so the organization's lock is held for the least time.
	var out db.AskOutcome
	err = s.store.InTx(ctx, func(q db.Queries) (err error) {
		out, err = q.AskPerson(ctx, db.AskParams{TokenHash: hash, Resource: cred.resourcePtr(), ToUserID: to, Question: question, At: s.clock()})
		return err
	})
	if err != nil {
		return AskResult{}, err
	}
	return s.asked(hash, out, to)
}

// asked renders what AskPerson did: the question asked, or why not.
func (s *Service) asked(hash []byte, out db.AskOutcome, to string) (AskResult, error) {
	switch out.Status {
	case db.AskBadToken:
		return AskResult{}, errBadToken
	case db.AskSelf:
		return AskResult{}, badInput("you cannot ask yourself: to_user_id must be someone else in your organization")
	case db.AskNoRecipient:
		return AskResult{}, errorf(KindNotFound, "no user %q in your organization: list_users shows who you can ask", to)
	case db.AskRecipientDeactivated:
		return AskResult{}, errorf(KindConflict, "user %q is deactivated and cannot receive questions", to)
	}
	s.touch(hash, out.TokenLastUsedAt, out.Message.AskedAt)
	m := out.Message
	return AskResult{
		MessageID: m.ID, ThreadID: m.ThreadID, ToUserID: to, ToName: out.ToName, AskedAt: m.AskedAt, Status: "pending",
		NextStep: fmt.Sprintf("Tell the user their question is message %d. %s sees it with check_inbox; "+
			"use check_replies later to pick up the answer.", m.ID, out.ToName),
	}, nil
}

// Person is who asked or answered a question.
type Person struct {
	UserID       string `json:"user_id"`
	Name         string `json:"name"`
	Ownership    string `json:"ownership,omitempty"`
	Notes        string `json:"notes,omitempty"`
	ProfileNotes string `json:"profile_notes,omitempty"`
}

// InboxQuestion is an unanswered question to the caller.
type InboxQuestion struct {
	MessageID      int64      `json:"message_id"`
	ThreadID       int64      `json:"thread_id"`
	From           Person     `json:"from"`
	Question       string     `json:"question"`
	AskedAt        time.Time  `json:"asked_at"`
	YourDraft      *string    `json:"draft_text"`
	DraftUpdatedAt *time.Time `json:"draft_updated_at,omitempty"`
	// Earlier are the turns of the conversation before this question, when
	// it continues one (a follow-up, or a question asked back).
	Earlier []Turn `json:"earlier_in_conversation,omitempty"`
}

// Inbox is a page of unanswered questions to the caller.
type Inbox struct {
	Questions []InboxQuestion `json:"questions"`
	More      bool            `json:"more"`
	Notice    string          `json:"notice"`
	NextStep  string          `json:"next_step"`
	// NotificationsPaused tells the person that their email or chat
	// notifications stopped because the endpoint kept failing, and how to
	// resume them ("" while they are not paused).
	NotificationsPaused string `json:"notifications_paused,omitempty"`
	// PausedNotice is the same news in the words the settings page uses
	// (NotificationSettings.Notice), for the web inbox's banner.
	PausedNotice string `json:"-"`
}

// Inbox lists unanswered questions to the caller after message afterID, oldest first.
func (s *Service) Inbox(ctx context.Context, cred Credentials, afterID int64) (Inbox, error) {
	var res Inbox
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		items, err := q.ListInbox(ctx, c.user.OrgID, c.user.ID, afterID, inboxPage+1)
		if err != nil {
			return err
		}
		res = Inbox{Notice: UntrustedNotice}
		res.Questions, res.More = onePage(items, inboxPage, func(it db.InboxItem) InboxQuestion {
			return InboxQuestion{
				MessageID: it.ID, ThreadID: it.ThreadID,
				From: Person{UserID: it.FromUserID, Name: it.SenderName, Ownership: it.SenderOwnership,
					Notes: it.SenderNotes, ProfileNotes: it.SenderProfileNotes},
				Question: it.Question, AskedAt: it.AskedAt, YourDraft: it.DraftText, DraftUpdatedAt: it.DraftUpdatedAt,
			}
		})
		followUps := false
		for i, it := range res.Questions {
			if it.ThreadID == it.MessageID {
				continue
			}
			followUps = true
			if res.Questions[i].Earlier, err = earlierTurns(ctx, q, items[i].Message); err != nil {
				return err
			}
		}
		switch {
		case len(res.Questions) == 0:
			res.NextStep = "No unanswered questions."
		case res.More:
			res.NextStep = fmt.Sprintf("More questions wait: call check_inbox with after_message_id %d. ", res.Questions[len(res.Questions)-1].MessageID)
		}
		if len(res.Questions) > 0 {
			res.NextStep += "To answer: draft from the user's own knowledge and code, save it with propose_response, " +
				"show it to the user, and call send_response only with text the user explicitly approved."
		}
		if followUps {
			res.NextStep += " A question with earlier_in_conversation continues a conversation: read its earlier turns first."
		}
		res.NotificationsPaused, res.PausedNotice, err = pausedNotice(ctx, q, c.user)
		return err
	}))
	return res, err
}

// DraftResult is a saved, unsent draft.
type DraftResult struct {
	MessageID int64     `json:"message_id"`
	DraftText string    `json:"draft_text"`
	SavedAt   time.Time `json:"saved_at"`
	Status    string    `json:"status"`
	// Share and Audience say who could read the answer once sent.
	Share    bool   `json:"share"`
	Audience string `json:"audience"`
	NextStep string `json:"next_step"`
}

// onePage converts the first n of rows, read with a limit of n+1, with conv,
// in order, and says whether more were there: one extra row answers "is
// there more?" without a count query. The page is never nil (JSON []).
func onePage[R, T any](rows []R, n int, conv func(R) T) ([]T, bool) {
	more := len(rows) > n
	if more {
		rows = rows[:n]
	}
	page := make([]T, 0, len(rows))
	for _, r := range rows {
		page = append(page, conv(r))
	}
	return page, more
}

// notYourQuestion is the one answer for a message that does not exist, belongs
// to another organization, or was not asked of the caller.
func notYourQuestion(id int64) error {
	return errorf(KindNotFound, "there is no question %d in your inbox: check_inbox lists the questions you can answer", id)
}

// recipientMessage loads a message the caller may answer.
func recipientMessage(ctx context.Context, q db.Queries, c caller, id int64) (db.Message, error) {
	if id <= 0 {
		return db.Message{}, badInput("message_id is required (check_inbox lists them)")
	}
	m, err := q.GetMessage(ctx, c.user.OrgID, id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && m.ToUserID != c.user.ID) {
		return db.Message{}, notYourQuestion(id)
	}
	return m, err
}

// Propose saves the caller's draft answer to a question in their inbox, to
// be sent to the asker only. A draft is never delivered.
func (s *Service) Propose(ctx context.Context, cred Credentials, id int64, draftArg string) (DraftResult, error) {
	return s.ProposeWith(ctx, cred, id, draftArg, false)
}

// ProposeWith saves a draft as Propose does, with whether it would be
// shared with the organization when sent: a client that cannot show an
// approval dialog sends only the saved draft, with the sharing saved and
// shown with it.
func (s *Service) ProposeWith(ctx context.Context, cred Credentials, id int64, draftArg string, share bool) (DraftResult, error) {
	draft, err := text("draft_text", draftArg, true, MaxAnswerLen)
	if err != nil {
		return DraftResult{}, err
	}
	var res DraftResult
	err = s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		m, err := recipientMessage(ctx, q, c, id)
		if err != nil {
			return err
		}
		errAnswered := errorf(KindConflict, "question %d was already answered; its answer cannot change", id)
		if m.Answered() {
			return errAnswered
		}
		now := s.clock()
		// The message was just read, so no row saved means a send_response
		// answered it in between (on PostgreSQL the update waits for that
		// send's row lock, then finds the question answered).
		if err := q.SaveDraft(ctx, c.user.OrgID, id, draft, now, share); errors.Is(err, db.ErrNotFound) {
			return errAnswered
		} else if err != nil {
			return err
		}
		res = DraftResult{
			MessageID: id, DraftText: draft, SavedAt: now, Status: "draft saved, NOT sent", Share: share,
			Audience: "only the asker and you",
			NextStep: "Show this exact draft to the user, say who will be able to read it (audience), and ask whether " +
				"to send it. Call send_response with the same text and the same share only after the user explicitly " +
				"approves; if they want changes, propose again.",
		}
		if share {
			res.Audience = "everyone in your organization can find it (search_answers)"
		}
		return nil
	}))
	return res, err
}
