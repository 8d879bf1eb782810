package relay

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Waiting: a long poll over the caller's events (questions asked of them,
// answers to their questions) by sequence number. Delivery is
// at-least-once: the caller passes back the cursor of the last event it
// handled, and a call that is cut off mid-wait loses nothing.
//
// While waiting, a call holds no database connection and no goroutine of its
// own beyond the request's: it sleeps on the store's wake-up channel, and
// each wake-up costs one query.

// Wait limits, in seconds.
const (
	// DefaultWaitSeconds is how long a wait lasts when the caller does not say.
	DefaultWaitSeconds = 30
	// MaxWaitSeconds keeps a wait well inside the HTTP server's 90 s write
	// timeout and the 60 s idle limit of common proxies.
	MaxWaitSeconds = 55
	eventsPage     = 20
	// latestCursor asks for events after the call only.
	latestCursor = "latest"
)

// lookSlots bounds how many waits read the database at once, in this
// process. A thousand waiters woken together (a LISTEN reconnect, the
// fallback poll) would otherwise take every pooled connection, and on SQLite
// open one connection each, while interactive tools queue behind them.
var lookSlots = make(chan struct{}, 4)

// Caps on open waits. Each open wait holds a request, a subscription and
// its connection's buffers (~80 KiB all told): one token holding thousands
// would exhaust memory and file descriptors. A user needs a few (one per
// open conversation); the process cap keeps the total within the memory
// budget the README gives.
const (
	// DefaultMaxWaits bounds the waits open at once in one process.
	DefaultMaxWaits = 2000
	// DefaultMaxWaitsPerUser bounds the waits one user has open at once.
	DefaultMaxWaitsPerUser = 8
)

// waitCounter counts open waits, per user and in all.
type waitCounter struct {
	mu           sync.Mutex
	total        int
	perUser      map[string]int
	max, maxUser int
}

func newWaitCounter(maxTotal, maxUser int) *waitCounter {
	if maxTotal <= 0 {
		maxTotal = DefaultMaxWaits
	}
	if maxUser <= 0 {
		maxUser = DefaultMaxWaitsPerUser
	}
	return &waitCounter{perUser: map[string]int{}, max: maxTotal, maxUser: maxUser}
}

// enter counts one more open wait for user, or refuses it when a cap is
// reached; leave uncounts it.
func (w *waitCounter) enter(user string) (leave func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch n := w.perUser[user]; {
	case n >= w.maxUser:
		return nil, errorf(KindThrottled, "too many open waits for you: %d already wait; "+
			"close one or retry in a few seconds", n)
	case w.total >= w.max:
		return nil, errorf(KindThrottled, "ctalk has too many open waits (%d): retry in a few seconds", w.total)
	}
	w.perUser[user]++
	w.total++
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.total--
		if w.perUser[user]--; w.perUser[user] == 0 {
			delete(w.perUser, user)
		}
	}, nil
}

// open reports how many waits user has open, and how many are open in all.
func (w *waitCounter) open(user string) (mine, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perUser[user], w.total
}

// count is how many waits are open in all.
func (w *waitCounter) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.total)
}

// WaitEvent is a question asked of the caller or an answer to their question.
type WaitEvent struct {
	// Kind is "question" (asked of you) or "answer" (to a question you asked).
	Kind      string `json:"kind"`
	Cursor    string `json:"cursor"`
	MessageID int64  `json:"message_id"`
	// ThreadID is the conversation: another message's id when the question
	// continues a conversation.
	ThreadID int64 `json:"thread_id"`
	// From is who asked the question, or who answered it.
	From     Person    `json:"from"`
	Question string    `json:"question"`
	Answer   string    `json:"answer,omitempty"`
	At       time.Time `json:"at"`
	// AlreadyAnswered marks a question you have answered since it was asked.
	AlreadyAnswered bool `json:"already_answered,omitempty"`
}

// WaitResult is a page of events and the cursor after them.
type WaitResult struct {
	Events   []WaitEvent `json:"events"`
	Cursor   string      `json:"cursor"`
	More     bool        `json:"more"`
	TimedOut bool        `json:"timed_out"`
	Notice   string      `json:"notice"`
	NextStep string      `json:"next_step"`
}

// Wait returns the caller's events after cursor ("" for every past event,
// "latest" for only what arrives after the call), waiting up to
// timeoutSeconds (nil: DefaultWaitSeconds; at most MaxWaitSeconds) for one
// when there is none yet. A wait that times out is an empty result, not an error.
func (s *Service) Wait(ctx context.Context, cred Credentials, cursor string, timeoutSeconds *float64) (WaitResult, error) {
	timeout := time.Duration(DefaultWaitSeconds) * time.Second
	if timeoutSeconds != nil {
		timeout = time.Duration(min(*timeoutSeconds, MaxWaitSeconds) * float64(time.Second))
	}
	var after int64
	latest := false
	switch c := strings.TrimSpace(cursor); {
	case c == "":
	case strings.EqualFold(c, latestCursor):
		latest = true
	default:
		var err error
		after, err = strconv.ParseInt(c, 10, 64)
		if err != nil || after < 0 {
			return WaitResult{}, badInput("cursor must be the cursor value from a previous wait_for_messages result, " +
				"\"latest\", or empty for every past message")
		}
	}

	// The first look needs no subscription: most calls after a wake-up find
	// something at once.
	var c caller
	res, err := s.lookForEvents(ctx, cred, &c, &after, &latest)
	if err != nil || len(res.Events) > 0 || timeout <= 0 {
		return res, err
	}
	leave, err := s.waits.enter(c.user.OrgID + "/" + c.user.ID)
	if err != nil {
		return WaitResult{}, err
	}
	defer leave()
	wake, unsubscribe := s.store.Subscribe(ctx, c.user.OrgID, c.user.ID)
	defer unsubscribe()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var woke time.Time // when the last wake-up came, to measure the response to it
	for {
		// Look again once subscribed: an event that committed between the
		// first look and the subscription woke nobody.
		if res, err = s.lookForEvents(ctx, cred, &c, &after, &latest); err != nil || len(res.Events) > 0 {
			if err == nil && !woke.IsZero() {
				now := time.Now()
				s.metrics.WaitWoken(now.Sub(woke))
				for _, e := range res.Events {
					s.metrics.EventDelivered(now.Sub(e.At))
				}
			}
			return res, err
		}
		select {
		case <-wake:
			woke = time.Now()
		case <-s.draining:
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
			return WaitResult{}, ctx.Err()
		}
	}
}

// lookForEvents authenticates the caller (again: a token revoked mid-wait
// stops the wait) and reads one page of events after *after, resolving a
// "latest" cursor to the organization's current sequence number first.
func (s *Service) lookForEvents(ctx context.Context, cred Credentials, c *caller, after *int64, latest *bool) (WaitResult, error) {
	select {
	case lookSlots <- struct{}{}:
		defer func() { <-lookSlots }()
	case <-ctx.Done():
		return WaitResult{}, ctx.Err()
	}
	var res WaitResult
	err := s.store.View(ctx, func(q db.Queries) error {
		var err error
		if *c, err = s.authenticate(ctx, q, cred); err != nil {
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
func eventsResult(rows []db.Event, cursor int64) WaitResult {
	res := WaitResult{Events: make([]WaitEvent, 0, len(rows)), Notice: UntrustedNotice}
	if len(rows) > eventsPage {
		rows, res.More = rows[:eventsPage], true
	}
	questions, answers := 0, 0
	for _, r := range rows {
		e := WaitEvent{
			Kind: r.Kind, Cursor: strconv.FormatInt(r.Seq, 10), MessageID: r.MessageID, ThreadID: r.ThreadID, Question: r.Question,
		}
		switch r.Kind {
		case db.EventQuestion:
			questions++
			e.From = Person{UserID: r.FromUserID, Name: r.OtherName}
			e.At = r.AskedAt
			e.AlreadyAnswered = r.AnsweredAt != nil
		case db.EventAnswer:
			answers++
			e.From = Person{UserID: r.ToUserID, Name: r.OtherName}
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
	if slices.ContainsFunc(res.Events, func(e WaitEvent) bool { return e.ThreadID != e.MessageID }) {
		steps = append(steps, "An event whose thread_id differs from its message_id continues a conversation: "+
			"get_thread shows the whole conversation.")
	}
	if res.More {
		steps = append(steps, fmt.Sprintf("More events wait: call wait_for_messages with cursor %q and timeout_seconds 0.", res.Cursor))
	} else {
		steps = append(steps, fmt.Sprintf("To keep waiting, call wait_for_messages with cursor %q.", res.Cursor))
	}
	res.NextStep = strings.Join(steps, " ")
	return res
}
