package db

import (
	"context"
	"errors"
	"time"
)

// AskParams is a question to store on behalf of a token's owner.
type AskParams struct {
	TokenHash []byte
	ToUserID  string
	Question  string
	At        time.Time
}

// AskStatus says whether a question was stored, or which check refused it first.
type AskStatus int

// The outcomes of AskPerson, in the order the checks run.
const (
	// Asked: the question is stored and its recipient's waiters will be woken.
	Asked AskStatus = iota
	// AskBadToken: no live token with that hash, or its user is deactivated.
	AskBadToken
	// AskSelf: the token's owner is the recipient.
	AskSelf
	// AskNoRecipient: the recipient is not in the token owner's organization.
	AskNoRecipient
	// AskRecipientDeactivated: the recipient cannot receive questions.
	AskRecipientDeactivated
)

// AskOutcome is what AskPerson did.
type AskOutcome struct {
	Status AskStatus
	// Message is the stored question (when Status is Asked); OrgID and
	// FromUserID are set whenever the token was good.
	Message Message
	// ToName is the recipient's display name, when there is a recipient.
	ToName string
}

// askInSteps is AskPerson as a sequence of queries in the caller's
// transaction, for a backend without data-modifying CTEs.
func askInSteps(ctx context.Context, q Queries, p AskParams) (AskOutcome, error) {
	tok, u, err := q.GetTokenUser(ctx, p.TokenHash)
	if errors.Is(err, ErrNotFound) {
		return AskOutcome{Status: AskBadToken}, nil
	} else if err != nil {
		return AskOutcome{}, err
	}
	if tok.RevokedAt != nil || !p.At.Before(tok.ExpiresAt) || u.DeactivatedAt != nil {
		return AskOutcome{Status: AskBadToken}, nil
	}
	out := AskOutcome{Message: Message{OrgID: u.OrgID, FromUserID: u.ID, ToUserID: p.ToUserID, Question: p.Question, AskedAt: p.At}}
	if p.ToUserID == u.ID {
		out.Status = AskSelf
		return out, nil
	}
	recipient, err := q.GetUser(ctx, u.OrgID, p.ToUserID)
	if errors.Is(err, ErrNotFound) {
		out.Status = AskNoRecipient
		return out, nil
	} else if err != nil {
		return AskOutcome{}, err
	}
	out.ToName = recipient.Name
	if recipient.DeactivatedAt != nil {
		out.Status = AskRecipientDeactivated
		return out, nil
	}
	if out.Message.ID, out.Message.AskedSeq, err = q.AllocateMessage(ctx, u.OrgID); err != nil {
		return AskOutcome{}, err
	}
	if err := q.CreateMessage(ctx, out.Message); err != nil {
		return AskOutcome{}, err
	}
	return out, q.NotifyEvent(ctx, u.OrgID, p.ToUserID, out.Message.AskedSeq)
}
