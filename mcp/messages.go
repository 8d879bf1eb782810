package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Page sizes: a model reads every item, so results stay short and say when there is more.
const (
	inboxPage   = 20
	repliesPage = 20
)

type askPersonArgs struct {
	AuthToken string `json:"auth_token"`
	ToUserID  string `json:"to_user_id"`
	Question  string `json:"question"`
}

type askResult struct {
	MessageID int64     `json:"message_id"`
	ToUserID  string    `json:"to_user_id"`
	ToName    string    `json:"to_name"`
	AskedAt   time.Time `json:"asked_at"`
	Status    string    `json:"status"`
	NextStep  string    `json:"next_step"`
}

func (t *tools) askPerson(ctx context.Context, a askPersonArgs) (any, error) {
	to, err := slug("to_user_id", a.ToUserID)
	if err != nil {
		return nil, err
	}
	question, err := text("question", a.Question, true, maxQuestionLen)
	if err != nil {
		return nil, err
	}
	var res askResult
	err = t.store.InTx(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		if to == c.user.ID {
			return badInput("you cannot ask yourself: to_user_id must be someone else in your organization")
		}
		recipient, err := q.GetUser(ctx, c.user.OrgID, to)
		if errors.Is(err, db.ErrNotFound) {
			return badInput("no user %q in your organization: list_users shows who you can ask", to)
		} else if err != nil {
			return err
		}
		if recipient.DeactivatedAt != nil {
			return badInput("user %q is deactivated and cannot receive questions", to)
		}
		id, seq, err := q.AllocateMessage(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		m := db.Message{
			OrgID: c.user.OrgID, ID: id, FromUserID: c.user.ID, ToUserID: to,
			Question: question, AskedAt: t.clock(), AskedSeq: seq,
		}
		if err := q.CreateMessage(ctx, m); err != nil {
			return err
		}
		if err := q.NotifyEvent(ctx, c.user.OrgID, to, seq); err != nil {
			return err
		}
		res = askResult{
			MessageID: id, ToUserID: to, ToName: recipient.Name, AskedAt: m.AskedAt, Status: "pending",
			NextStep: fmt.Sprintf("Tell the user their question is message %d. %s sees it with check_inbox; "+
				"use check_replies later to pick up the answer.", id, recipient.Name),
		}
		return nil
	})
	return res, err
}

type person struct {
	UserID       string `json:"user_id"`
	Name         string `json:"name"`
	Ownership    string `json:"ownership,omitempty"`
	Notes        string `json:"notes,omitempty"`
	ProfileNotes string `json:"profile_notes,omitempty"`
}

type inboxQuestion struct {
	MessageID      int64      `json:"message_id"`
	From           person     `json:"from"`
	Question       string     `json:"question"`
	AskedAt        time.Time  `json:"asked_at"`
	YourDraft      *string    `json:"draft_text"`
	DraftUpdatedAt *time.Time `json:"draft_updated_at,omitempty"`
}

type inboxResult struct {
	Questions []inboxQuestion `json:"questions"`
	More      bool            `json:"more"`
	Notice    string          `json:"notice"`
	NextStep  string          `json:"next_step"`
}

type checkInboxArgs struct {
	AuthToken    string `json:"auth_token"`
	AfterMessage int64  `json:"after_message_id"`
}

func (t *tools) checkInbox(ctx context.Context, a checkInboxArgs) (any, error) {
	var res inboxResult
	err := t.store.View(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		items, err := q.ListInbox(ctx, c.user.OrgID, c.user.ID, a.AfterMessage, inboxPage+1)
		if err != nil {
			return err
		}
		res = inboxResult{Questions: make([]inboxQuestion, 0, len(items)), Notice: untrustedNotice}
		if len(items) > inboxPage {
			items, res.More = items[:inboxPage], true
		}
		for _, it := range items {
			res.Questions = append(res.Questions, inboxQuestion{
				MessageID: it.ID,
				From: person{UserID: it.FromUserID, Name: it.SenderName, Ownership: it.SenderOwnership,
					Notes: it.SenderNotes, ProfileNotes: it.SenderProfileNotes},
				Question: it.Question, AskedAt: it.AskedAt, YourDraft: it.DraftText, DraftUpdatedAt: it.DraftUpdatedAt,
			})
		}
		switch {
		case len(res.Questions) == 0:
			res.NextStep = "No unanswered questions."
		case res.More:
			res.NextStep = fmt.Sprintf("More questions wait: call check_inbox with after_message_id %d. ", items[len(items)-1].ID)
		}
		if len(res.Questions) > 0 {
			res.NextStep += "To answer: draft from the user's own knowledge and code, save it with propose_response, " +
				"show it to the user, and call send_response only with text the user explicitly approved."
		}
		return nil
	})
	return res, err
}

// messageID accepts the id as a JSON number or as text such as "12" or "message 12".
type messageID int64

func (m *messageID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	s = strings.TrimSpace(strings.TrimPrefix(strings.ToLower(s), "message"))
	s = strings.TrimPrefix(s, "#")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return badInput("message_id must be a message number such as 12 (check_inbox lists them)")
	}
	*m = messageID(n)
	return nil
}

type proposeResponseArgs struct {
	AuthToken string    `json:"auth_token"`
	MessageID messageID `json:"message_id"`
	DraftText string    `json:"draft_text"`
}

type draftResult struct {
	MessageID int64     `json:"message_id"`
	DraftText string    `json:"draft_text"`
	SavedAt   time.Time `json:"saved_at"`
	Status    string    `json:"status"`
	NextStep  string    `json:"next_step"`
}

// notYourQuestion is the one answer for a message that does not exist, belongs
// to another organization, or was not asked of the caller.
func notYourQuestion(id int64) error {
	return badInput("there is no question %d in your inbox: check_inbox lists the questions you can answer", id)
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

func (t *tools) proposeResponse(ctx context.Context, a proposeResponseArgs) (any, error) {
	draft, err := text("draft_text", a.DraftText, true, maxAnswerLen)
	if err != nil {
		return nil, err
	}
	id := int64(a.MessageID)
	var res draftResult
	err = t.store.InTx(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		m, err := recipientMessage(ctx, q, c, id)
		if err != nil {
			return err
		}
		if m.Answered() {
			return badInput("question %d was already answered; its answer cannot change", id)
		}
		now := t.clock()
		if err := q.SaveDraft(ctx, c.user.OrgID, id, draft, now); err != nil {
			return err
		}
		res = draftResult{
			MessageID: id, DraftText: draft, SavedAt: now, Status: "draft saved, NOT sent",
			NextStep: "Show this exact draft to the user and ask whether to send it. Call send_response with the " +
				"same text only after the user explicitly approves; if they want changes, propose again.",
		}
		return nil
	})
	return res, err
}

type sendResponseArgs struct {
	AuthToken string    `json:"auth_token"`
	MessageID messageID `json:"message_id"`
	FinalText string    `json:"final_text"`
}

type sentResult struct {
	MessageID  int64     `json:"message_id"`
	Status     string    `json:"status"`
	FinalText  string    `json:"final_text"`
	AnsweredAt time.Time `json:"answered_at"`
	ToUserID   string    `json:"delivered_to_user_id"`
}

// errProposeFirst refuses a send the human has not been shown.
func errProposeFirst(id int64) error {
	return badInput("send_response only sends text the user has seen: save this exact text with "+
		"propose_response (message_id %d), show it to the user, and call send_response with it after they approve", id)
}

type notSentResult struct {
	MessageID int64  `json:"message_id"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

func (t *tools) sendResponse(ctx context.Context, a sendResponseArgs) (any, error) {
	final, err := text("final_text", a.FinalText, true, maxAnswerLen)
	if err != nil {
		return nil, err
	}
	id := int64(a.MessageID)
	// Read first: the human is asked about a question that exists and is
	// still unanswered, before anything is locked.
	var (
		c     caller
		m     db.Message
		asker db.User
		res   *sentResult
	)
	err = t.store.View(ctx, func(q db.Queries) error {
		if c, err = t.authenticate(ctx, q, a.AuthToken); err != nil {
			return err
		}
		if m, err = recipientMessage(ctx, q, c, id); err != nil {
			return err
		}
		if res, err = alreadySent(m, final); res != nil || err != nil {
			return err
		}
		asker, err = q.GetUser(ctx, c.user.OrgID, m.FromUserID)
		return err
	})
	if err != nil || res != nil {
		return res, err
	}
	call := callFrom(ctx)
	if call.canElicit {
		state := approvalState(c, id, final)
		switch d, action := approvalDecision(ctx, state); d {
		case decisionNone:
			return askApproval(state, asker.Name, asker.ID, id, m.Question, final), nil
		case decisionRefused:
			return notSentResult{MessageID: id, Status: "not sent",
				Reason: fmt.Sprintf("the user did not approve sending this answer (%s); the question is still unanswered", action)}, nil
		}
	} else if m.DraftText == nil || *m.DraftText != final {
		return nil, errProposeFirst(id)
	}
	err = t.store.InTx(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		// Take the organization's event lock before reading the message again:
		// concurrent sends of one answer queue here, and each sees the answer
		// of the one before it.
		seq, err := q.AllocateEvent(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		m, err := recipientMessage(ctx, q, c, id)
		if err != nil {
			return err
		}
		if res, err = alreadySent(m, final); res != nil || err != nil {
			return err
		}
		if !call.canElicit && (m.DraftText == nil || *m.DraftText != final) {
			return errProposeFirst(id) // the draft changed meanwhile
		}
		now := t.clock()
		if err := q.AnswerMessage(ctx, c.user.OrgID, id, final, now, seq); err != nil {
			return err
		}
		if err := q.NotifyEvent(ctx, c.user.OrgID, m.FromUserID, seq); err != nil {
			return err
		}
		res = &sentResult{MessageID: id, Status: "sent", FinalText: final, AnsweredAt: now, ToUserID: m.FromUserID}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// alreadySent handles a question that has its answer: the same text again is
// the same success, other text is refused.
func alreadySent(m db.Message, final string) (*sentResult, error) {
	if !m.Answered() {
		return nil, nil
	}
	if *m.AnswerText != final {
		return nil, badInput("question %d was already answered with different text; an answer is sent once and cannot change", m.ID)
	}
	return &sentResult{MessageID: m.ID, Status: "already sent", FinalText: final, AnsweredAt: *m.AnsweredAt, ToUserID: m.FromUserID}, nil
}

type checkRepliesArgs struct {
	AuthToken string `json:"auth_token"`
	Since     string `json:"since"`
	Cursor    string `json:"cursor"`
}

type reply struct {
	MessageID  int64     `json:"message_id"`
	AnsweredBy person    `json:"answered_by"`
	Question   string    `json:"question"`
	Answer     string    `json:"answer"`
	AskedAt    time.Time `json:"asked_at"`
	AnsweredAt time.Time `json:"answered_at"`
}

type repliesResult struct {
	Replies  []reply `json:"replies"`
	Cursor   string  `json:"cursor"`
	More     bool    `json:"more"`
	Notice   string  `json:"notice"`
	NextStep string  `json:"next_step"`
}

// defaultSince is the seed's default for check_replies: every reply.
const defaultSince = "1970-01-01T00:00:00+00:00"

func (t *tools) checkReplies(ctx context.Context, a checkRepliesArgs) (any, error) {
	sinceText := strings.TrimSpace(a.Since)
	if sinceText == "" {
		sinceText = defaultSince
	}
	since, err := time.Parse(time.RFC3339Nano, sinceText)
	if err != nil {
		return nil, badInput("since must be an RFC 3339 time such as 2026-01-02T15:04:05Z (or omit it for every reply)")
	}
	var after int64
	if c := strings.TrimSpace(a.Cursor); c != "" {
		after, err = strconv.ParseInt(c, 10, 64)
		if err != nil || after < 0 {
			return nil, badInput("cursor must be the cursor value from a previous check_replies result (or omit it)")
		}
	}
	var (
		res   repliesResult
		c     caller
		seen  int64
		shown int64 // the highest sequence number returned
	)
	err = t.store.View(ctx, func(q db.Queries) (err error) {
		if c, err = t.authenticate(ctx, q, a.AuthToken); err != nil {
			return err
		}
		// Answers above the user's seen mark committed after their last
		// check: they come back whatever since says (a slow commit, or a
		// replica with a slow clock, can stamp an answer before a poll that
		// could not yet see it).
		seen = c.user.RepliesSeenSeq
		rows, err := q.ListReplies(ctx, c.user.OrgID, c.user.ID, since.UTC(), after, seen, repliesPage+1)
		if err != nil {
			return err
		}
		res = repliesResult{Replies: make([]reply, 0, len(rows)), Notice: untrustedNotice}
		if len(rows) > repliesPage {
			rows, res.More = rows[:repliesPage], true
		}
		for _, r := range rows {
			res.Replies = append(res.Replies, reply{
				MessageID: r.ID, AnsweredBy: person{UserID: r.ToUserID, Name: r.RecipientName},
				Question: r.Question, Answer: *r.AnswerText, AskedAt: r.AskedAt, AnsweredAt: *r.AnsweredAt,
			})
			after = *r.AnsweredSeq
			shown = after
		}
		res.Cursor = strconv.FormatInt(after, 10)
		res.NextStep = "To see only newer replies next time, pass this cursor to check_replies; it never skips a reply."
		if res.More {
			res.NextStep = "More replies wait: call check_replies again with this cursor."
		}
		return nil
	})
	if err != nil || shown <= seen {
		return res, err
	}
	// Record what the caller has now been shown. A reply committed since
	// the read above has a higher sequence number, so it stays unseen.
	err = t.store.InTx(ctx, func(q db.Queries) error { return q.MarkRepliesSeen(ctx, c.user.OrgID, c.user.ID, shown) })
	return res, err
}
