package relay

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Web sessions. A signed-in browser holds an ordinary ctalk token in a
// cookie: stored hashed in auth_tokens, so it is revoked on every replica
// by sign-out, change_password, reset_user_password and deactivate_user
// (RevokeUserTokens) like any other token. Its resource is WebResource, so
// the audience rule of authenticate keeps it out of the MCP endpoints, and
// keeps MCP tokens out of the web pages.
const (
	// WebResource is the resource of web session tokens: the web face passes
	// it in Credentials.Resource.
	WebResource = "ctalk:web"
	// WebScope is the scope recorded on web session tokens.
	WebScope = "web"
	// WebSessionMaxAge is a session's absolute lifetime.
	WebSessionMaxAge = 7 * 24 * time.Hour
	// WebSessionIdle is how long a session lives without use.
	WebSessionIdle = 12 * time.Hour
	// webSlideEvery bounds how often use moves the idle expiry forward (a write).
	webSlideEvery = 5 * time.Minute
	// askedPage is how many of my questions one page of "Asked" shows.
	askedPage = 50
)

// WebSession is a new browser session: Token goes in the cookie.
type WebSession struct {
	Token     string
	ExpiresAt time.Time
}

// webExpiry is a session's expiry when last used at now.
func webExpiry(created, now time.Time) time.Time {
	idle, abs := now.Add(WebSessionIdle), created.Add(WebSessionMaxAge)
	if abs.Before(idle) {
		return abs
	}
	return idle
}

// SignInWeb checks a person's password exactly as login does (same
// throttle, hash queue and answer for every failure) and starts a browser
// session.
func (s *Service) SignInWeb(ctx context.Context, orgIDArg, userIDArg, pass string) (WebSession, error) {
	u, err := s.verifyLogin(ctx, orgIDArg, userIDArg, pass)
	if err != nil {
		return WebSession{}, err
	}
	token, hash := newToken()
	now := s.clock()
	resource, scope := WebResource, WebScope
	tok := db.Token{TokenHash: hash, OrgID: u.OrgID, UserID: u.ID, CreatedAt: now, ExpiresAt: webExpiry(now, now),
		Resource: &resource, Scope: &scope}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := stillVerified(ctx, q, u, errBadLogin); err != nil {
			return err
		}
		if err := q.CreateToken(ctx, tok); err != nil {
			return err
		}
		if _, err := q.PruneTokens(ctx, now.Add(-oauthKeep)); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, u.ID, AuditSignIn, u.ID, "web")
	})
	if err != nil {
		return WebSession{}, err
	}
	return WebSession{Token: token, ExpiresAt: tok.ExpiresAt}, nil
}

// SignOutWeb revokes a browser session. A session that no longer works is
// already signed out: that is no error.
func (s *Service) SignOutWeb(ctx context.Context, cred Credentials) error {
	err := s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		if err := q.RevokeToken(ctx, c.token.TokenHash, s.clock()); err != nil {
			return ignoreNotFound(err)
		}
		return s.auditRevoke(ctx, q, c, TokenKindWeb, "")
	}))
	var re *Error
	if errors.As(err, &re) && re.Kind == KindUnauthorized {
		return nil
	}
	return err
}

// WebMe is the signed-in person of a web request.
type WebMe struct {
	Profile
	OrgName          string
	SessionExpiresAt time.Time
	// Admin: the person holds the organization's admin role.
	Admin bool
}

// WebSessionUser checks a browser session and returns its person. It also
// moves the session's idle expiry forward, at most every few minutes, never
// past its absolute expiry.
func (s *Service) WebSessionUser(ctx context.Context, cred Credentials) (WebMe, error) {
	var (
		me WebMe
		c  caller
	)
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		if c, err = s.authenticate(ctx, q, cred); err != nil {
			return err
		}
		org, err := q.GetOrganization(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		me = WebMe{Profile: profileOf(c.user), OrgName: org.Name, SessionExpiresAt: c.token.ExpiresAt, Admin: c.user.AdminSince != nil}
		return nil
	})
	if err != nil {
		return WebMe{}, err
	}
	next := webExpiry(c.token.CreatedAt, s.clock())
	if next.Sub(c.token.ExpiresAt) < webSlideEvery {
		return me, nil
	}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		return ignoreNotFound(q.ExtendToken(ctx, c.token.TokenHash, next))
	})
	if err != nil {
		return WebMe{}, err
	}
	me.SessionExpiresAt = next
	return me, nil
}

// Question is one question in the caller's inbox, answered or not, as the
// web page shows it.
type Question struct {
	MessageID      int64
	From           Person
	Question       string
	AskedAt        time.Time
	Draft          *string
	DraftUpdatedAt *time.Time
	Answer         *string
	AnsweredAt     *time.Time
	// ThreadID is the question's conversation; Earlier are its turns sent
	// before the question (none for a first question).
	ThreadID int64
	Earlier  []Turn
	// Shared: the answer was sent shared with the organization.
	Shared bool
}

// GetQuestion returns a question asked of the caller. A missing message,
// another organization's and one asked of someone else give the same
// KindNotFound error.
func (s *Service) GetQuestion(ctx context.Context, cred Credentials, id int64) (Question, error) {
	var out Question
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		if id <= 0 {
			return notYourQuestion(id)
		}
		m, err := recipientMessage(ctx, q, c, id)
		if err != nil {
			return err
		}
		asker, err := q.GetUser(ctx, c.user.OrgID, m.FromUserID)
		if err != nil {
			return err
		}
		out = Question{
			MessageID: m.ID, From: Person{UserID: asker.ID, Name: asker.Name, Ownership: asker.Ownership},
			Question: m.Question, AskedAt: m.AskedAt, Draft: m.DraftText, DraftUpdatedAt: m.DraftUpdatedAt,
			Answer: m.AnswerText, AnsweredAt: m.AnsweredAt, ThreadID: m.ThreadID, Shared: m.SharedAt != nil,
		}
		out.Earlier, err = earlierTurns(ctx, q, m)
		return err
	}))
	return out, err
}

// MyQuestion is a question the caller asked, answered or waiting.
type MyQuestion struct {
	MessageID int64
	// ThreadID is the conversation's first question (MessageID for a first question).
	ThreadID   int64
	To         Person
	Question   string
	AskedAt    time.Time
	Answer     *string
	AnsweredAt *time.Time
}

// MyQuestions is a page of the caller's questions, newest first.
type MyQuestions struct {
	Questions []MyQuestion
	// More is set when older questions remain: pass the last MessageID as
	// beforeID for the next page.
	More bool
}

// ListMyQuestions lists the questions the caller asked with an id below
// beforeID (0: from the newest), newest first. It does not mark replies
// as seen: check_replies still returns them.
func (s *Service) ListMyQuestions(ctx context.Context, cred Credentials, beforeID int64) (MyQuestions, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	var out MyQuestions
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		rows, err := q.ListAsked(ctx, c.user.OrgID, c.user.ID, beforeID, askedPage+1)
		if err != nil {
			return err
		}
		out.Questions, out.More = onePage(rows, askedPage, func(r db.AskedQuestion) MyQuestion {
			return MyQuestion{
				MessageID: r.ID, ThreadID: r.ThreadID, To: Person{UserID: r.ToUserID, Name: r.RecipientName}, Question: r.Question,
				AskedAt: r.AskedAt, Answer: r.AnswerText, AnsweredAt: r.AnsweredAt,
			}
		})
		return nil
	}))
	return out, err
}
