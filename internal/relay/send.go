package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Human approval of an answer is enforced here, not asked of a model. A face
// that can show the human a confirmation (MCP elicitation, a web form) asks
// about the exact text and passes the answer in; the only accepted approval
// is one given for this caller, message and text. A face that cannot falls
// back to the draft rule: only the draft saved with Propose, which the human
// was shown, is sent.

// Approval is what a face knows about the human's consent to one send.
type Approval struct {
	// CanAsk says the face can show the human a confirmation. Without it
	// the draft rule applies and the other fields are ignored.
	CanAsk bool
	// Key is the key of the ApprovalRequest the human answered, or "".
	Key string
	// Accepted is the human's answer to that request.
	Accepted bool
	// Action names the answer for the record ("decline", "cancel").
	Action string
	// Share asks to let the whole organization find the question and this
	// answer (search_answers, find_owner); the human approves it with the
	// text, and an approval given for one choice does not send the other.
	Share bool
}

// ApprovalRequest asks the face to show the human exactly what would be sent
// and call Send again with their answer under Key.
type ApprovalRequest struct {
	Key       string
	AskerID   string
	AskerName string
	MessageID int64
	Question  string
	FinalText string
	// Share is whether the answer would be shared with the organization.
	Share bool
}

// SentResult is an answer delivered (now or by an earlier identical call).
type SentResult struct {
	MessageID  int64     `json:"message_id"`
	Status     string    `json:"status"`
	FinalText  string    `json:"final_text"`
	AnsweredAt time.Time `json:"answered_at"`
	ToUserID   string    `json:"delivered_to_user_id"`
	// Shared says the whole organization can find the question and answer.
	Shared bool `json:"shared"`
}

// NotSentResult is an answer the human refused to send.
type NotSentResult struct {
	MessageID int64  `json:"message_id"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

// SendOutcome is exactly one of: sent, not sent, or a request for approval.
type SendOutcome struct {
	Sent    *SentResult
	NotSent *NotSentResult
	Ask     *ApprovalRequest
}

// approvalKey binds an approval to one caller, message, exact text and
// sharing choice: an "accept" given for other text, or for a private
// answer, does not send this one.
func approvalKey(c caller, id int64, final string, share bool) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%t\x00%s", c.user.OrgID, c.user.ID, id, share, final))
	return "send:" + hex.EncodeToString(sum[:16])
}

// notApproved says why an answer the human did not accept was not sent,
// and what works instead. A cancelled dialog may have had no person behind
// it: `claude -p` and other scripted runs declare they can show dialogs and
// then cancel each one at once, so no answer can ever be sent from them,
// and the draft rule does not apply to a client that can show dialogs.
func notApproved(action string) string {
	if action == "decline" {
		return "the user declined this answer in the approval dialog (decline), so nothing was sent and the question " +
			"is still unanswered; ask the user what to change, then call send_response with the new text"
	}
	return fmt.Sprintf("the approval dialog was dismissed (%s), so nothing was sent and the question is still unanswered. "+
		"If the user did not see a dialog (a scripted run such as `claude -p` cancels every dialog at once), "+
		"no answer can be sent from this session: answer it from an interactive Claude Code session, or from an "+
		"SDK host that shows the user the dialog and returns their choice. Saving a draft with propose_response "+
		"does not help: only the user's Accept in the dialog sends", action)
}

// errProposeFirst refuses a send the human has not been shown.
func errProposeFirst(id int64) error {
	return errorf(KindConflict, "send_response only sends text the user has seen: save this exact text with "+
		"propose_response (message_id %d), show it to the user, and call send_response with it after they approve", id)
}

// Send delivers the caller's final answer to a question in their inbox,
// exactly once: the same text again is the same success, other text is
// refused, and concurrent sends of one answer deliver it once.
func (s *Service) Send(ctx context.Context, cred Credentials, id int64, finalArg string, approval Approval) (SendOutcome, error) {
	final, err := text("final_text", finalArg, true, MaxAnswerLen)
	if err != nil {
		return SendOutcome{}, err
	}
	// Read first: the human is asked about a question that exists and is
	// still unanswered, before anything is locked.
	var (
		c     caller
		m     db.Message
		asker db.User
		res   *SentResult
	)
	err = s.store.View(ctx, func(q db.Queries) error {
		if c, err = s.authenticate(ctx, q, cred); err != nil {
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
		return SendOutcome{Sent: res}, err
	}
	if approval.CanAsk {
		key := approvalKey(c, id, final, approval.Share)
		switch {
		case approval.Key != key:
			return SendOutcome{Ask: &ApprovalRequest{Key: key, AskerID: asker.ID, AskerName: asker.Name,
				MessageID: id, Question: m.Question, FinalText: final, Share: approval.Share}}, nil
		case !approval.Accepted:
			return SendOutcome{NotSent: &NotSentResult{MessageID: id, Status: "not sent", Reason: notApproved(approval.Action)}}, nil
		}
	} else if err := draftRule(m, final, approval.Share); err != nil {
		return SendOutcome{}, err
	}
	err = s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
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
		if !approval.CanAsk {
			if err := draftRule(m, final, approval.Share); err != nil {
				return err // the draft changed meanwhile
			}
		}
		now := s.clock()
		var sharedAt *time.Time
		if approval.Share {
			sharedAt = &now
		}
		if err := q.AnswerMessage(ctx, c.user.OrgID, id, final, now, seq, sharedAt); err != nil {
			return err
		}
		if err := q.NotifyEvent(ctx, c.user.OrgID, m.FromUserID, seq); err != nil {
			return err
		}
		res = &SentResult{MessageID: id, Status: "sent", FinalText: final, AnsweredAt: now, ToUserID: m.FromUserID, Shared: approval.Share}
		return nil
	}))
	if err != nil {
		return SendOutcome{}, err
	}
	return SendOutcome{Sent: res}, nil
}

// draftRule is the approval of a client without dialogs: only the saved
// draft the person was shown is sent, shared with the organization as it
// was saved.
func draftRule(m db.Message, final string, share bool) error {
	switch {
	case m.DraftText == nil || *m.DraftText != final:
		return errProposeFirst(m.ID)
	case m.DraftShare != share:
		return errorf(KindConflict, "the saved draft of message %d was proposed with share %t; the user approved who can "+
			"read it with the draft: call propose_response with share %t and this text, show the user, and send after "+
			"they approve", m.ID, m.DraftShare, share)
	}
	return nil
}

// alreadySent handles a question that has its answer: the same text again is
// the same success, other text is refused.
func alreadySent(m db.Message, final string) (*SentResult, error) {
	if !m.Answered() {
		return nil, nil
	}
	if *m.AnswerText != final {
		return nil, errorf(KindConflict, "question %d was already answered with different text; an answer is sent once and cannot change", m.ID)
	}
	return &SentResult{MessageID: m.ID, Status: "already sent", FinalText: final, AnsweredAt: *m.AnsweredAt, ToUserID: m.FromUserID,
		Shared: m.SharedAt != nil}, nil
}
