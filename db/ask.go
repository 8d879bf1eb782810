package db

import "time"

// AskParams is a question to store on behalf of a token's owner.
type AskParams struct {
	TokenHash []byte
	ToUserID  string
	Question  string
	At        time.Time
	// Resource is the resource indicator the call came through: the token
	// must have been issued for it (nil: a login-tool token, which has none).
	// A token for another resource is AskBadToken.
	Resource *string
	// ThreadID continues a conversation (the rules checked the caller may);
	// 0 starts one.
	ThreadID int64
}

// AskStatus says whether a question was stored, or which check refused it first.
type AskStatus int

// The outcomes of AskPerson, in the order the checks run.
const (
	// Asked: the question is stored and its recipient's waiters will be woken.
	Asked AskStatus = iota
	// AskBadToken: no live token with that hash for the resource, or its
	// user is deactivated.
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
	// TokenLastUsedAt is the token's LastUsedAt, when the token was good.
	TokenLastUsedAt *time.Time
}

// askFacts are what AskPerson decides on, read by one query on SQLite.
type askFacts struct {
	orgID, userID       string
	expiresAt           time.Time
	revokedAt           *time.Time
	callerDeactivatedAt *time.Time
	toName              *string // nil: no such user in the organization
	toDeactivatedAt     *time.Time
}

// status applies AskPerson's checks in order, as PostgreSQL's statement does.
func (f askFacts) status(p AskParams) AskStatus {
	switch {
	case f.revokedAt != nil || !p.At.Before(f.expiresAt) || f.callerDeactivatedAt != nil:
		return AskBadToken
	case f.userID == p.ToUserID:
		return AskSelf
	case f.toName == nil:
		return AskNoRecipient
	case f.toDeactivatedAt != nil:
		return AskRecipientDeactivated
	}
	return Asked
}
