package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

type listUsersResult struct {
	OrgID  string       `json:"org_id"`
	Users  []userResult `json:"users"`
	Notice string       `json:"notice"`
}

func (t *tools) listUsers(ctx context.Context, a authArgs) (any, error) {
	var res listUsersResult
	err := t.store.View(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		users, err := q.ListUsers(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		res = listUsersResult{OrgID: c.user.OrgID, Users: make([]userResult, 0, len(users)), Notice: untrustedNotice}
		for _, u := range users {
			p := profileOf(u)
			p.Notes, p.ProfileNotes = "", "" // get_user_profile has the notes
			res.Users = append(res.Users, p)
		}
		return nil
	})
	return res, err
}

type getUserProfileArgs struct {
	AuthToken string `json:"auth_token"`
	UserID    string `json:"user_id"`
}

type interactionEvent struct {
	MessageID  int64      `json:"message_id"`
	FromUserID string     `json:"from_user_id"`
	ToUserID   string     `json:"to_user_id"`
	AskedAt    time.Time  `json:"asked_at"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

type interactions struct {
	QuestionsYouAsked  int64             `json:"questions_you_asked_them"`
	QuestionsTheyAsked int64             `json:"questions_they_asked_you"`
	LastQuestion       *interactionEvent `json:"last_question"`
	LastAnswer         *interactionEvent `json:"last_answer"`
}

type profileResult struct {
	User         userResult   `json:"user"`
	Interactions interactions `json:"interactions_with_you"`
	Notice       string       `json:"notice"`
}

func (t *tools) getUserProfile(ctx context.Context, a getUserProfileArgs) (any, error) {
	userID, err := slug("user_id", a.UserID)
	if err != nil {
		return nil, err
	}
	var res profileResult
	err = t.store.View(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		org, me := c.user.OrgID, c.user.ID
		u, err := q.GetUser(ctx, org, userID)
		if errors.Is(err, db.ErrNotFound) {
			return badInput("no user %q in your organization: list_users shows who is registered", userID)
		} else if err != nil {
			return err
		}
		res = profileResult{User: profileOf(u), Notice: untrustedNotice}
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
	})
	return res, err
}

// newest looks a message up in both directions between two people and returns
// the later one by key, or nil when there is none.
func newest(ctx context.Context, get func(ctx context.Context, org, from, to string) (db.Message, error),
	org, a, b string, key func(db.Message) int64) (*interactionEvent, error) {
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
	return &interactionEvent{
		MessageID: best.ID, FromUserID: best.FromUserID, ToUserID: best.ToUserID, AskedAt: best.AskedAt, AnsweredAt: best.AnsweredAt,
	}, nil
}

type updateMyNotesArgs struct {
	AuthToken string `json:"auth_token"`
	Notes     string `json:"notes"`
}

func (t *tools) updateMyNotes(ctx context.Context, a updateMyNotesArgs) (any, error) {
	notes, err := text("notes", a.Notes, false, maxNotesLen)
	if err != nil {
		return nil, err
	}
	var res userResult
	err = t.store.InTx(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		if err := q.UpdateUserNotes(ctx, c.user.OrgID, c.user.ID, notes); err != nil {
			return err
		}
		c.user.Notes = notes
		res = profileOf(c.user)
		return nil
	})
	return res, err
}
