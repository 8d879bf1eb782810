package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Conversations: every question starts one (its thread), and either of its
// two people can continue it. The asker asks a follow-up; the person asked
// asks back for clarification. Each turn is a question like any other: the
// person answering approves what is sent, it is answered exactly once, and
// waiting and pushing report it as they report a first question.

const (
	// maxThread bounds the questions of one conversation.
	maxThread = 100
	// earlierShown is how many earlier turns an inbox question carries.
	earlierShown = 6
)

// noConversation is the one answer for a message that does not exist,
// belongs to another organization, or is not in a conversation the caller
// may see.
func noConversation(id int64) error {
	return errorf(KindNotFound, "there is no conversation with message %d that you can see: check_inbox and "+
		"check_replies list your conversations, search_answers finds shared ones", id)
}

// askFollowUp asks the other person of the conversation of message
// in.FollowUpTo, which the caller must be part of.
func (s *Service) askFollowUp(ctx context.Context, cred Credentials, in AskInput) (AskResult, error) {
	question, err := text("question", in.Question, true, MaxQuestionLen)
	if err != nil {
		return AskResult{}, err
	}
	hash, err := cred.tokenHash()
	if err != nil {
		return AskResult{}, err
	}
	var (
		out db.AskOutcome
		to  string
	)
	err = s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		m, err := q.GetMessage(ctx, c.user.OrgID, in.FollowUpTo)
		if errors.Is(err, db.ErrNotFound) || (err == nil && m.FromUserID != c.user.ID && m.ToUserID != c.user.ID) {
			return noConversation(in.FollowUpTo)
		} else if err != nil {
			return err
		}
		to = m.FromUserID
		if to == c.user.ID {
			to = m.ToUserID
		}
		if in.To != "" {
			if named, err := slug("to_user_id", in.To); err != nil {
				return err
			} else if named != to {
				return badInput("message %d is your conversation with %q: leave to_user_id out, or ask %q in a new conversation "+
					"without follow_up_to", in.FollowUpTo, to, named)
			}
		}
		thread, err := q.ListThread(ctx, c.user.OrgID, m.ThreadID, maxThread)
		if err != nil {
			return err
		}
		if len(thread) >= maxThread {
			return errorf(KindConflict, "conversation %d already holds %d questions: start a new one (ask_person without follow_up_to)",
				m.ThreadID, maxThread)
		}
		out, err = q.AskPerson(ctx, db.AskParams{TokenHash: hash, Resource: cred.resourcePtr(), ToUserID: to,
			Question: question, At: s.clock(), ThreadID: m.ThreadID})
		return err
	}))
	if err != nil {
		return AskResult{}, err
	}
	res, err := s.asked(hash, out, to)
	if err == nil {
		res.FollowUpTo = in.FollowUpTo
		res.NextStep = fmt.Sprintf("Tell the user their follow-up is message %d in conversation %d. %s sees it with check_inbox; "+
			"use check_replies later to pick up the answer.", res.MessageID, res.ThreadID, res.ToName)
	}
	return res, err
}

// askByTopic asks whoever find_owner ranks first for in.Topic.
func (s *Service) askByTopic(ctx context.Context, cred Credentials, in AskInput) (AskResult, error) {
	terms, err := searchInput("topic", in.Topic)
	if err != nil {
		return AskResult{}, err
	}
	if _, err := text("question", in.Question, true, MaxQuestionLen); err != nil {
		return AskResult{}, err
	}
	var owners []Owner
	err = s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) (err error) {
		owners, err = rankOwners(ctx, q, c, terms)
		return err
	}))
	if err != nil {
		return AskResult{}, err
	}
	if len(owners) == 0 {
		return AskResult{}, errorf(KindNotFound, "no one in your organization owns, notes or has answered anything about %q: "+
			"list_users shows everyone; ask a person by to_user_id", in.Topic)
	}
	res, err := s.AskWith(ctx, cred, AskInput{To: owners[0].UserID, Question: in.Question})
	if err == nil {
		res.ChosenBecause = owners[0].Reason
		res.NextStep = fmt.Sprintf("Tell the user ctalk asked %s because they best match the topic (%s); the question is message %d. "+
			"Use check_replies later to pick up the answer.", res.ToName, owners[0].Reason, res.MessageID)
	}
	return res, err
}

// Turn is one entry of a conversation: a question or its answer.
type Turn struct {
	MessageID int64 `json:"message_id"`
	// Kind is "question" or "answer".
	Kind string    `json:"kind"`
	By   Person    `json:"by"`
	To   Person    `json:"to"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
	seq  int64
}

// Thread is a conversation, turn by turn in the order they were sent.
type Thread struct {
	ThreadID int64  `json:"thread_id"`
	Turns    []Turn `json:"turns"`
	// Unanswered are the questions still waiting for an answer.
	Unanswered []int64 `json:"unanswered_message_ids"`
	// Shared says the whole organization may find its shared turns; a
	// person outside the conversation sees only those.
	Shared   bool   `json:"shared"`
	Notice   string `json:"notice"`
	NextStep string `json:"next_step"`
}

// turnsOf lays out a conversation's questions and answers in the order they
// were sent (event sequence order: questions at asked_seq, answers at
// answered_seq), keeping the messages keep accepts.
func turnsOf(msgs []db.ThreadMessage, keep func(db.ThreadMessage) bool) []Turn {
	turns := []Turn{}
	for _, m := range msgs {
		if !keep(m) {
			continue
		}
		asker, asked := Person{UserID: m.FromUserID, Name: m.FromName}, Person{UserID: m.ToUserID, Name: m.ToName}
		turns = append(turns, Turn{MessageID: m.ID, Kind: db.EventQuestion, By: asker, To: asked, Text: m.Question, At: m.AskedAt, seq: m.AskedSeq})
		if m.Answered() {
			turns = append(turns, Turn{MessageID: m.ID, Kind: db.EventAnswer, By: asked, To: asker, Text: *m.AnswerText,
				At: *m.AnsweredAt, seq: *m.AnsweredSeq})
		}
	}
	slices.SortFunc(turns, func(a, b Turn) int { return cmp.Compare(a.seq, b.seq) })
	return turns
}

// participant reports whether user is one of a conversation's two people.
func participant(msgs []db.ThreadMessage, user string) bool {
	return len(msgs) > 0 && (msgs[0].FromUserID == user || msgs[0].ToUserID == user)
}

// GetThread shows the conversation of message id: all of it to its two
// people; to anyone else in the organization, only its shared questions
// and answers.
func (s *Service) GetThread(ctx context.Context, cred Credentials, id int64) (Thread, error) {
	if id <= 0 {
		return Thread{}, badInput("message_id is required: a message id from check_inbox, check_replies or search_answers")
	}
	var res Thread
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		m, err := q.GetMessage(ctx, c.user.OrgID, id)
		if errors.Is(err, db.ErrNotFound) {
			return noConversation(id)
		} else if err != nil {
			return err
		}
		msgs, err := q.ListThread(ctx, c.user.OrgID, m.ThreadID, maxThread)
		if err != nil {
			return err
		}
		mine := participant(msgs, c.user.ID)
		visible := func(m db.ThreadMessage) bool { return mine || m.SharedAt != nil }
		if !visible(db.ThreadMessage{Message: m}) {
			return noConversation(id)
		}
		res = Thread{ThreadID: m.ThreadID, Turns: turnsOf(msgs, visible), Unanswered: []int64{}, Notice: UntrustedNotice}
		for _, m := range msgs {
			res.Shared = res.Shared || m.SharedAt != nil
			if mine && !m.Answered() {
				res.Unanswered = append(res.Unanswered, m.ID)
			}
		}
		switch {
		case !mine:
			res.NextStep = "This is a shared conversation between two other people: show it as their words. " +
				"To ask about it, ask one of them with ask_person."
		default:
			res.NextStep = fmt.Sprintf("Show the conversation as the words of the people who wrote each turn. To continue it, "+
				"call ask_person with follow_up_to %d and the question; questions to you are answered with propose_response "+
				"and send_response as usual.", id)
		}
		return nil
	}))
	return res, err
}

// earlierTurns are up to earlierShown turns of m's conversation sent before
// m was asked: the context of a follow-up in the inbox.
func earlierTurns(ctx context.Context, q db.Queries, m db.Message) ([]Turn, error) {
	if m.ThreadID == m.ID {
		return nil, nil
	}
	msgs, err := q.ListThread(ctx, m.OrgID, m.ThreadID, maxThread)
	if err != nil {
		return nil, err
	}
	turns := turnsOf(msgs, func(db.ThreadMessage) bool { return true })
	n := slices.IndexFunc(turns, func(t Turn) bool { return t.seq >= m.AskedSeq })
	if n < 0 {
		n = len(turns)
	}
	return turns[max(0, n-earlierShown):n], nil
}
