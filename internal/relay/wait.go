package relay

import (
	"context"
	"errors"
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
// own beyond the request's: it sleeps until a callback (a wake-up from the
// store, its timeout, the drain, the end of its context) says to look
// again, and each wake-up costs one query. A call run with a Hold needs not
// even the request's goroutine: the holder is told when to run it again
// (Hold.Notify).

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
// its connection's buffers (40-50 KiB all told through the HTTP front's
// held waits; see BENCHMARKS.md): one token holding thousands
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
//
// When ctx carries a Hold (WithHold), Wait does not block: where it would,
// it leaves the wait in the hold and returns ErrHeld; the holder blocks
// (Hold.Block) and calls Wait again with the same hold to carry on.
func (s *Service) Wait(ctx context.Context, cred Credentials, cursor string, timeoutSeconds *float64) (WaitResult, error) {
	h, _ := ctx.Value(holdKey{}).(*Hold)
	if h != nil && h.held != nil { // carry on a held wait
		w := h.held
		h.held = nil
		w.takeEnd(ctx)
		return w.run(ctx, h)
	}
	timeout := time.Duration(DefaultWaitSeconds) * time.Second
	if timeoutSeconds != nil {
		timeout = time.Duration(min(*timeoutSeconds, MaxWaitSeconds) * float64(time.Second))
	}
	w := &openWait{s: s, cred: cred, timeout: timeout}
	switch c := strings.TrimSpace(cursor); {
	case c == "":
	case strings.EqualFold(c, latestCursor):
		w.latest = true
	default:
		var err error
		w.after, err = strconv.ParseInt(c, 10, 64)
		if err != nil || w.after < 0 {
			return WaitResult{}, badInput("cursor must be the cursor value from a previous wait_for_messages result, " +
				"\"latest\", or empty for every past message")
		}
	}

	// The first look needs no subscription: most calls after a wake-up find
	// something at once.
	res, err := s.lookForEvents(ctx, cred, &w.c, &w.after, &w.latest)
	if err != nil || len(res.Events) > 0 || timeout <= 0 {
		return res, err
	}
	if w.leave, err = s.waits.enter(w.c.user.OrgID + "/" + w.c.user.ID); err != nil {
		return WaitResult{}, err
	}
	if h != nil {
		h.open = w
		w.arm(h.ctx) // the subscription outlives this call
	} else {
		w.arm(ctx)
	}
	return w.run(ctx, h)
}

// Events of an open wait (openWait.pending), set by the callbacks arm registers.
const (
	evWoken uint8 = 1 << iota
	evDrained
	evTimedOut
	evCancelled
)

// arm subscribes an open wait and registers what ends its block as
// callbacks, not channels: a held wait has no goroutine of its own to
// receive on them. Each sets its event and tells whoever waits for it
// (await, or the holder's Hold.Notify). The subscription and the watch of
// ctx (the request's, for a held wait) last until the wait closes.
func (w *openWait) arm(ctx context.Context) {
	w.ready = make(chan struct{}, 1)
	w.unsubscribe = w.s.store.SubscribeFunc(ctx, w.c.user.OrgID, w.c.user.ID, func() { w.event(evWoken) })
	w.timer = time.AfterFunc(w.timeout, func() { w.event(evTimedOut) })
	w.stopCtx = context.AfterFunc(ctx, func() { w.event(evCancelled) })
	if w.s.drained != nil {
		w.stopDrain = context.AfterFunc(w.s.drained, func() { w.event(evDrained) })
	}
}

// event records ev and tells whoever waits for it: the function Notify
// left, if any, and await. It never blocks (a wake-up calls it with
// the store's subscription lock held).
func (w *openWait) event(ev uint8) {
	w.mu.Lock()
	if ev == evWoken && w.pending&evWoken == 0 {
		w.wokeAt = time.Now()
	}
	w.pending |= ev
	fn := w.notify
	w.notify = nil
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
	if fn != nil {
		fn()
	}
}

// takeEnd sets what ended the wait's block from its events, before it
// looks again, and takes the wake-up it looks for.
func (w *openWait) takeEnd(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch p := w.pending; {
	case p&evCancelled != 0 || ctx.Err() != nil:
		w.ended = endCancelled
	case p&evDrained != 0:
		w.ended = endDrained
	case p&evWoken != 0:
		w.ended, w.woke = endWoken, w.wokeAt
		w.pending &^= evWoken
	case p&evTimedOut != 0:
		w.ended = endTimedOut
	default: // run again without an event: look again, as after a wake-up
		w.ended, w.woke = endWoken, time.Time{}
	}
}

// openWait is a wait counted against the caps and subscribed to its
// caller's wake-ups, between its looks.
type openWait struct {
	s       *Service
	cred    Credentials
	c       caller
	after   int64
	latest  bool
	timeout time.Duration

	leave, unsubscribe func()
	timer              *time.Timer
	woke               time.Time // when the last wake-up came, to measure the response to it
	res                WaitResult
	ended              waitEnd // what ended the last block
	closed             bool

	// The wait's events (see arm), set by callbacks on other goroutines.
	stopCtx, stopDrain func() bool
	ready              chan struct{} // signalled at each event, for await
	mu                 sync.Mutex
	pending            uint8     // ev* not yet taken
	wokeAt             time.Time // when the first wake-up not yet taken came
	notify             func()    // Hold.Notify's, until an event calls it
}

// waitEnd is what ended a wait's block.
type waitEnd int

const (
	endNone waitEnd = iota
	endWoken
	endDrained
	endTimedOut
	endCancelled
)

// run looks for events and blocks until one comes, the timeout, the drain
// or the end of ctx; or, with a hold, leaves the wait in it instead of blocking.
func (w *openWait) run(ctx context.Context, h *Hold) (WaitResult, error) {
	for {
		switch w.ended {
		case endDrained:
			// The server is shutting down: end the wait now with its normal
			// empty result instead of holding the drain up to 55 s.
			w.close()
			res := w.res
			res.TimedOut = true
			res.NextStep = fmt.Sprintf("The relay is restarting. Call wait_for_messages again with cursor %q to keep waiting.", res.Cursor)
			return res, nil
		case endTimedOut:
			w.close()
			res := w.res
			res.TimedOut = true
			res.NextStep = fmt.Sprintf("Nothing new within %s. Call wait_for_messages again with cursor %q to keep waiting.",
				w.timeout.Round(time.Second), res.Cursor)
			return res, nil
		case endCancelled:
			w.close()
			return WaitResult{}, ctx.Err()
		}
		// Look again once subscribed (an event that committed between the
		// first look and the subscription woke nobody), and after each
		// wake-up. The look right after the first needs no new token check:
		// the first one made it a moment ago, in the same call.
		res, err := w.s.look(ctx, w.cred, &w.c, &w.after, &w.latest, w.ended == endNone)
		if err != nil || len(res.Events) > 0 {
			w.close()
			if err == nil && !w.woke.IsZero() {
				now := time.Now()
				w.s.metrics.WaitWoken(now.Sub(w.woke))
				for _, e := range res.Events {
					w.s.metrics.EventDelivered(now.Sub(e.At))
				}
			}
			return res, err
		}
		w.res = res
		if h != nil {
			h.held = w
			return WaitResult{}, ErrHeld
		}
		w.await(ctx)
		w.takeEnd(ctx)
	}
}

// close uncounts the wait and ends its subscription and timer, once.
func (w *openWait) close() {
	if w.closed {
		return
	}
	w.closed = true
	w.timer.Stop()
	w.unsubscribe()
	w.leave()
	if w.stopCtx != nil {
		w.stopCtx()
	}
	if w.stopDrain != nil {
		w.stopDrain()
	}
}

// ErrHeld is what Wait returns when it left the wait in the context's Hold.
var ErrHeld = errors.New("relay: the wait is held by the caller")

// A Hold lets the caller of Wait do the blocking itself: an HTTP front can
// then keep a long poll on a goroutine with a small stack, and run each look
// (authentication and a query) on a short-lived goroutine of its own.
// A Hold serves one wait, by one goroutine at a time.
type Hold struct {
	ctx  context.Context // the request's: the wait's subscription ends with it
	held *openWait       // set while Wait has left the wait here
	open *openWait       // the wait, until it is closed
}

type holdKey struct{}

// NewHold returns a hold for one wait of the request whose context is ctx.
func NewHold(ctx context.Context) *Hold { return &Hold{ctx: ctx} }

// WithHold returns a context in which Wait leaves the wait in h instead of blocking.
func WithHold(ctx context.Context, h *Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

// Held reports whether the last Wait left the wait in h: the caller should
// Block and then call Wait again with h.
func (h *Hold) Held() bool { return h.held != nil }

// Block waits, on the caller's goroutine, for what ends the held wait's
// block: a wake-up, the timeout, the drain, or the end of ctx (or of the
// context the hold was made with).
func (h *Hold) Block(ctx context.Context) {
	if h.held != nil {
		h.held.await(ctx)
	}
}

// await blocks until the wait has an event, or ctx ends.
func (w *openWait) await(ctx context.Context) {
	for {
		w.mu.Lock()
		pending := w.pending
		w.mu.Unlock()
		if pending != 0 || ctx.Err() != nil {
			return
		}
		select {
		case <-w.ready:
		case <-ctx.Done():
			return
		}
	}
}

// Notify arranges for fn to be called, once, when the held wait has
// something to do (what Block waits for, the end of the hold's context
// included): at once if it has, else from the goroutine of the event, which
// fn must not block (a wake-up calls it with the store's subscription lock
// held). Then the caller runs Wait again with h, as after Block. Between
// the two, nothing of the wait runs on any goroutine of its own.
func (h *Hold) Notify(fn func()) {
	w := h.held
	if w == nil {
		fn()
		return
	}
	w.mu.Lock()
	if w.pending != 0 {
		w.mu.Unlock()
		fn()
		return
	}
	w.notify = fn
	w.mu.Unlock()
}

// Close releases the wait if it is still open (after a panic, say): its
// place under the caps, its subscription and its timer.
func (h *Hold) Close() {
	if h.open != nil {
		h.open.close()
	}
}

// lookForEvents authenticates the caller (again: a token revoked mid-wait
// stops the wait) and reads one page of events after *after, resolving a
// "latest" cursor to the organization's current sequence number first.
func (s *Service) lookForEvents(ctx context.Context, cred Credentials, c *caller, after *int64, latest *bool) (WaitResult, error) {
	return s.look(ctx, cred, c, after, latest, false)
}

// look is lookForEvents; with authenticated, *c is the caller the same
// call authenticated a moment ago, and the token is not read again.
func (s *Service) look(ctx context.Context, cred Credentials, c *caller, after *int64, latest *bool, authenticated bool) (WaitResult, error) {
	select {
	case lookSlots <- struct{}{}:
		defer func() { <-lookSlots }()
	case <-ctx.Done():
		return WaitResult{}, ctx.Err()
	}
	var res WaitResult
	err := s.store.View(ctx, func(q db.Queries) error {
		if !authenticated {
			var err error
			if *c, err = s.authenticate(ctx, q, cred); err != nil {
				return err
			}
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
