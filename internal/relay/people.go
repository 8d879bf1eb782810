package relay

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

// asCaller wraps fn, the body of a transaction on the caller's behalf, so it
// first authenticates cred in that same transaction: a token revoked or
// expired a moment ago is refused, whatever fn would read or write.
func (s *Service) asCaller(ctx context.Context, cred Credentials, fn func(q db.Queries, c caller) error) func(db.Queries) error {
	return func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		return fn(q, c)
	}
}

// UserList is the people of the caller's organization.
type UserList struct {
	OrgID  string    `json:"org_id"`
	Users  []Profile `json:"users"`
	Notice string    `json:"notice"`
}

// ListUsers lists the people in the caller's organization, without their
// notes (GetUserProfile has them).
func (s *Service) ListUsers(ctx context.Context, cred Credentials) (UserList, error) {
	var res UserList
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		users, err := q.ListUsers(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		res = UserList{OrgID: c.user.OrgID, Users: make([]Profile, 0, len(users)), Notice: UntrustedNotice}
		for _, u := range users {
			p := profileOf(u)
			p.Notes, p.ProfileNotes = "", ""
			res.Users = append(res.Users, p)
		}
		return nil
	}))
	return res, err
}

// Interaction is one question between the caller and another person.
type Interaction struct {
	MessageID  int64      `json:"message_id"`
	FromUserID string     `json:"from_user_id"`
	ToUserID   string     `json:"to_user_id"`
	AskedAt    time.Time  `json:"asked_at"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

// Interactions sums up the questions between the caller and another person.
type Interactions struct {
	QuestionsYouAsked  int64        `json:"questions_you_asked_them"`
	QuestionsTheyAsked int64        `json:"questions_they_asked_you"`
	LastQuestion       *Interaction `json:"last_question"`
	LastAnswer         *Interaction `json:"last_answer"`
}

// UserProfile is a person's profile as the caller sees it.
type UserProfile struct {
	User         Profile      `json:"user"`
	Interactions Interactions `json:"interactions_with_you"`
	Notice       string       `json:"notice"`
}

// GetUserProfile shows a person of the caller's organization and the
// caller's interactions with them.
func (s *Service) GetUserProfile(ctx context.Context, cred Credentials, userIDArg string) (UserProfile, error) {
	userID, err := slug("user_id", userIDArg)
	if err != nil {
		return UserProfile{}, err
	}
	var res UserProfile
	err = s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		org, me := c.user.OrgID, c.user.ID
		u, err := q.GetUser(ctx, org, userID)
		if errors.Is(err, db.ErrNotFound) {
			return errorf(KindNotFound, "no user %q in your organization: list_users shows who is registered", userID)
		} else if err != nil {
			return err
		}
		res = UserProfile{User: profileOf(u), Notice: UntrustedNotice}
		in := &res.Interactions
		if in.QuestionsYouAsked, err = q.CountQuestions(ctx, org, me, userID); err != nil {
			return err
		}
		if in.QuestionsTheyAsked, err = q.CountQuestions(ctx, org, userID, me); err != nil {
			return err
		}
		if in.LastQuestion, err = newest(ctx, q.LastQuestion, org, me, userID, func(m db.Message) int64 { return m.ID }); err != nil {
			return err
		}
		in.LastAnswer, err = newest(ctx, q.LastAnswer, org, me, userID, func(m db.Message) int64 { return *m.AnsweredSeq })
		return err
	}))
	return res, err
}

// newest looks a message up in both directions between two people and returns
// the later one by key, or nil when there is none.
func newest(ctx context.Context, get func(ctx context.Context, org, from, to string) (db.Message, error),
	org, a, b string, key func(db.Message) int64) (*Interaction, error) {
	var best *db.Message
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		m, err := get(ctx, org, pair[0], pair[1])
		if errors.Is(err, db.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		if best == nil || key(m) > key(*best) {
			best = &m
		}
	}
	if best == nil {
		return nil, nil
	}
	return &Interaction{
		MessageID: best.ID, FromUserID: best.FromUserID, ToUserID: best.ToUserID, AskedAt: best.AskedAt, AnsweredAt: best.AnsweredAt,
	}, nil
}

// UpdateMyNotes replaces the caller's own notes.
func (s *Service) UpdateMyNotes(ctx context.Context, cred Credentials, notesArg string) (Profile, error) {
	notes, err := text("notes", notesArg, false, MaxNotesLen)
	if err != nil {
		return Profile{}, err
	}
	var res Profile
	err = s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		if err := q.UpdateUserNotes(ctx, c.user.OrgID, c.user.ID, notes); err != nil {
			return err
		}
		c.user.Notes = notes
		res = profileOf(c.user)
		return nil
	}))
	return res, err
}
