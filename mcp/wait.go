package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// wait_for_messages: a long poll over the caller's events (questions asked of
// them, answers to their questions) by sequence number. Delivery is
// at-least-once: the caller passes back the cursor of the last event it
// handled, and a call that is cut off mid-wait loses nothing.
//
// While waiting, a call holds no database connection and no goroutine of its
// own beyond the request's: it sleeps on the store's wake-up channel, and
// each wake-up costs one query.

const (
	defaultWaitSeconds = 30
	// maxWaitSeconds keeps a wait well inside the HTTP server's 90 s write
	// timeout and the 60 s idle limit of common proxies.
	maxWaitSeconds = 55
	eventsPage     = 20
	// latestCursor asks for events after the call only.
	latestCursor = "latest"
)

// lookSlots bounds how many waits read the database at once, in this
// process. A thousand waiters woken together (a LISTEN reconnect, the
// fallback poll) would otherwise take every pooled connection, and on SQLite
// open one connection each, while interactive tools queue behind them.
var lookSlots = make(chan struct{}, 4)

type waitArgs struct {
	AuthToken      string      `json:"auth_token"`
	TimeoutSeconds *waitTime   `json:"timeout_seconds"`
	Cursor         eventCursor `json:"cursor"`
}

// waitTime accepts seconds as a JSON number or as text such as "30".
type waitTime float64

func (w *waitTime) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return badInput("timeout_seconds must be a number of seconds from 0 to %d", maxWaitSeconds)
	}
	*w = waitTime(f)
	return nil
}

// eventCursor accepts the cursor as text or as a JSON number.
type eventCursor string

func (c *eventCursor) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if json.Unmarshal(b, &n) != nil {
			return badInput("cursor must be the cursor value from a previous wait_for_messages result (or omit it)")
		}
		s = n.String()
	}
	*c = eventCursor(s)
	return nil
}

type waitEvent struct {
	// Kind is "question" (asked of you) or "answer" (to a question you asked).
	Kind      string `json:"kind"`
	Cursor    string `json:"cursor"`
	MessageID int64  `json:"message_id"`
	// From is who asked the question, or who answered it.
	From     person    `json:"from"`
	Question string    `json:"question"`
	Answer   string    `json:"answer,omitempty"`
	At       time.Time `json:"at"`
	// AlreadyAnswered marks a question you have answered since it was asked.
	AlreadyAnswered bool `json:"already_answered,omitempty"`
}

type waitResult struct {
	Events   []waitEvent `json:"events"`
	Cursor   string      `json:"cursor"`
	More     bool        `json:"more"`
	TimedOut bool        `json:"timed_out"`
	Notice   string      `json:"notice"`
	NextStep string      `json:"next_step"`
}

func (t *tools) waitForMessages(ctx context.Context, a waitArgs) (any, error) {
	timeout := time.Duration(defaultWaitSeconds) * time.Second
	if a.TimeoutSeconds != nil {
		timeout = time.Duration(min(float64(*a.TimeoutSeconds), maxWaitSeconds) * float64(time.Second))
	}
	var after int64
	latest := false
	switch c := strings.TrimSpace(string(a.Cursor)); {
	case c == "":
	case strings.EqualFold(c, latestCursor):
		latest = true
	default:
		var err error
		after, err = strconv.ParseInt(c, 10, 64)
		if err != nil || after < 0 {
			return nil, badInput("cursor must be the cursor value from a previous wait_for_messages result, " +
				"\"latest\", or empty for every past message")
		}
	}

	// The first look needs no subscription: most calls after a wake-up find
	// something at once.
	var c caller
	res, err := t.lookForEvents(ctx, a.AuthToken, &c, &after, &latest)
	if err != nil || len(res.Events) > 0 || timeout <= 0 {
		return res, err
	}
	wake, unsubscribe := t.store.Subscribe(ctx, c.user.OrgID, c.user.ID)
	defer unsubscribe()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		// Look again once subscribed: an event that committed between the
		// first look and the subscription woke nobody.
		if res, err = t.lookForEvents(ctx, a.AuthToken, &c, &after, &latest); err != nil || len(res.Events) > 0 {
			return res, err
		}
		select {
		case <-wake:
		case <-t.draining:
			// The server is shutting down: end the wait now with its normal
			// empty result instead of holding the drain up to 55 s.
			res.TimedOut = true
			res.NextStep = fmt.Sprintf("The relay is restarting. Call wait_for_messages again with cursor %q to keep waiting.", res.Cursor)
			return res, nil
		case <-timer.C:
			res.TimedOut = true
			res.NextStep = fmt.Sprintf("Nothing new within %s. Call wait_for_messages again with cursor %q to keep waiting.",
				timeout.Round(time.Second), res.Cursor)
			return res, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// lookForEvents authenticates the caller (again: a token revoked mid-wait
// stops the wait) and reads one page of events after *after, resolving a
// "latest" cursor to the organization's current sequence number first.
func (t *tools) lookForEvents(ctx context.Context, token string, c *caller, after *int64, latest *bool) (waitResult, error) {
	select {
	case lookSlots <- struct{}{}:
		defer func() { <-lookSlots }()
	case <-ctx.Done():
		return waitResult{}, ctx.Err()
	}
	var res waitResult
	err := t.store.View(ctx, func(q db.Queries) error {
		var err error
		if *c, err = t.authenticate(ctx, q, token); err != nil {
			return err
		}
		if *latest {
			// Every event after this one commits with a higher sequence
			// number: the organization's row lock orders them.
			org, err := q.GetOrganization(ctx, c.user.OrgID)
			if err != nil {
				return err
			}
			*after, *latest = org.LastEventSeq, false
		}
		rows, err := q.ListEvents(ctx, c.user.OrgID, c.user.ID, *after, eventsPage+1)
		if err != nil {
			return err
		}
		res = eventsResult(rows, *after)
		return nil
	})
	return res, err
}

// eventsResult renders a page of events read after cursor.
func eventsResult(rows []db.Event, cursor int64) waitResult {
	res := waitResult{Events: make([]waitEvent, 0, len(rows)), Notice: untrustedNotice}
	if len(rows) > eventsPage {
		rows, res.More = rows[:eventsPage], true
	}
	questions, answers := 0, 0
	for _, r := range rows {
		e := waitEvent{
			Kind: r.Kind, Cursor: strconv.FormatInt(r.Seq, 10), MessageID: r.MessageID, Question: r.Question,
		}
		switch r.Kind {
		case db.EventQuestion:
			questions++
			e.From = person{UserID: r.FromUserID, Name: r.OtherName}
			e.At = r.AskedAt
			e.AlreadyAnswered = r.AnsweredAt != nil
		case db.EventAnswer:
			answers++
			e.From = person{UserID: r.ToUserID, Name: r.OtherName}
			e.At = *r.AnsweredAt
			e.Answer = *r.AnswerText
		}
		res.Events = append(res.Events, e)
		cursor = r.Seq
	}
	res.Cursor = strconv.FormatInt(cursor, 10)

	var steps []string
	if questions > 0 {
		steps = append(steps, "Show the user each new question and who asked it. To answer one, draft from the user's "+
			"own knowledge and code, save it with propose_response, show it, and call send_response only after the "+
			"user explicitly approves that text.")
	}
	if answers > 0 {
		steps = append(steps, "Show the user each answer as the words of the person who answered.")
	}
	if res.More {
		steps = append(steps, fmt.Sprintf("More events wait: call wait_for_messages with cursor %q and timeout_seconds 0.", res.Cursor))
	} else {
		steps = append(steps, fmt.Sprintf("To keep waiting, call wait_for_messages with cursor %q.", res.Cursor))
	}
	res.NextStep = strings.Join(steps, " ")
	return res
}
