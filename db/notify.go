package db

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Events: what happened to a user, and how a waiter learns of it without
// holding a database connection.
//
// A transaction that asks or answers a question calls Queries.NotifyEvent for
// the user the event is for. After it commits, the Store's notifier wakes that
// user's subscribers: on PostgreSQL through NOTIFY, which every replica's one
// LISTEN connection receives; on SQLite in process. A wake-up only means "look
// again": waiters read their events with ListEvents, by sequence number, so a
// duplicate or spurious wake-up costs one query and a missed one costs delay,
// never an event. Two things bound that delay:
//
//   - when the LISTEN connection is (re)established, every subscriber wakes,
//     since notifications sent while it was down are gone;
//   - every fallbackPoll, one read of the watched organizations' event
//     sequence numbers (one query per organization with waiters, not per
//     waiter) wakes an organization's subscribers when its sequence moved
//     past what notifications explained: a writer that did not notify (an
//     older replica mid-deploy, another process on the same SQLite file) or
//     a notification lost on a silently dead connection.

// Event kinds, as Event.Kind spells them.
const (
	EventQuestion = "question" // a question asked of the user, at its AskedSeq
	EventAnswer   = "answer"   // an answer to the user's question, at its AnsweredSeq
)

// Event is something that happened to a user: a question asked of them or an
// answer to a question they asked. Seq orders a user's events in commit order
// (it is the question's AskedSeq or the answer's AnsweredSeq).
type Event struct {
	Kind       string
	Seq        int64
	MessageID  int64
	FromUserID string
	ToUserID   string
	Question   string
	AskedAt    time.Time
	AnswerText *string
	AnsweredAt *time.Time
	// OtherName is the name of who asked the question (EventQuestion) or who
	// answered it (EventAnswer).
	OtherName string
	// ThreadID is the conversation the question belongs to.
	ThreadID int64
}

// fallbackPoll is how often the notifier checks the watched organizations'
// sequence numbers for events no notification announced.
const fallbackPoll = 5 * time.Second

type userKey struct{ org, user string }

// subscriber is one waiter's wake-up channel, or its function (SubscribeFunc).
type subscriber struct {
	key    userKey
	wake   chan struct{} // buffered: wake-ups coalesce and never block the sender
	onWake func()        // instead of wake: called with the notifier's lock held, never blocks
}

func (s *subscriber) signal() {
	if s.onWake != nil {
		s.onWake()
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// watchedOrg is an organization with subscribers.
type watchedOrg struct {
	subs map[*subscriber]struct{}
	// known is the highest event sequence number a notification or a poll
	// has reported, valid once seen is set.
	known int64
	seen  bool
}

// notifier fans wake-ups out to the subscribers of one Store. Its zero value
// is ready: background work (the poll, and the LISTEN loop on PostgreSQL)
// starts with the first subscription and stops at close.
type notifier struct {
	mu      sync.Mutex
	users   map[userKey]map[*subscriber]struct{}
	orgs    map[string]*watchedOrg
	started bool
	closed  bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// subscribe registers a subscriber, starting each background function in its
// own goroutine on the first call.
func (n *notifier) subscribe(ctx context.Context, orgID, userID string, background ...func(context.Context)) (<-chan struct{}, func()) {
	s := &subscriber{key: userKey{orgID, userID}, wake: make(chan struct{}, 1)}
	return s.wake, n.add(ctx, s, background)
}

// subscribeFunc is subscribe, calling onWake for each wake-up instead.
func (n *notifier) subscribeFunc(ctx context.Context, orgID, userID string, onWake func(), background ...func(context.Context)) func() {
	return n.add(ctx, &subscriber{key: userKey{orgID, userID}, onWake: onWake}, background)
}

// add registers s and returns what ends its subscription.
func (n *notifier) add(ctx context.Context, s *subscriber, background []func(context.Context)) func() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		s.signal() // look again, and find the store closed
		return func() {}
	}
	if !n.started {
		n.started = true
		bg, cancel := context.WithCancel(context.Background())
		n.cancel = cancel
		for _, f := range background {
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				f(bg)
			}()
		}
	}
	if n.users == nil {
		n.users = map[userKey]map[*subscriber]struct{}{}
		n.orgs = map[string]*watchedOrg{}
	}
	if n.users[s.key] == nil {
		n.users[s.key] = map[*subscriber]struct{}{}
	}
	n.users[s.key][s] = struct{}{}
	org := n.orgs[s.key.org]
	if org == nil {
		org = &watchedOrg{subs: map[*subscriber]struct{}{}}
		n.orgs[s.key.org] = org
	}
	org.subs[s] = struct{}{}
	n.mu.Unlock()

	// No goroutine waits on ctx: AfterFunc only registers a callback.
	stop := context.AfterFunc(ctx, func() { n.remove(s) })
	return func() {
		stop()
		n.remove(s)
	}
}

// remove unsubscribes s; removing it twice is harmless.
func (n *notifier) remove(s *subscriber) {
	n.mu.Lock()
	defer n.mu.Unlock()
	subs := n.users[s.key]
	if _, ok := subs[s]; !ok {
		return
	}
	delete(subs, s)
	if len(subs) == 0 {
		delete(n.users, s.key)
	}
	if org := n.orgs[s.key.org]; org != nil {
		delete(org.subs, s)
		if len(org.subs) == 0 {
			delete(n.orgs, s.key.org) // forget its sequence: nobody waits there
		}
	}
}

// publish wakes the subscribers of one user after an event committed.
func (n *notifier) publish(orgID, userID string, seq int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if org := n.orgs[orgID]; org != nil && (!org.seen || seq > org.known) {
		org.known, org.seen = seq, true
	}
	for s := range n.users[userKey{orgID, userID}] {
		s.signal()
	}
	for s := range n.users[userKey{}] { // Subscribe(ctx, "", ""): every event
		s.signal()
	}
}

// wakeAll wakes every subscriber: events may have been missed.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, subs := range n.users {
		for s := range subs {
			s.signal()
		}
	}
}

// watched returns the ids of the organizations with subscribers.
func (n *notifier) watched() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids := make([]string, 0, len(n.orgs))
	for id := range n.orgs {
		ids = append(ids, id)
	}
	return ids
}

// observe records organizations' current sequence numbers, waking the
// subscribers of each one whose sequence moved past what was known (or that
// was not observed before).
func (n *notifier) observe(seqs map[string]int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, seq := range seqs {
		org := n.orgs[id]
		if org == nil || (org.seen && seq <= org.known) {
			continue
		}
		org.known, org.seen = seq, true
		for s := range org.subs {
			s.signal()
		}
	}
}

// poll runs the fallback poll until ctx ends.
func (n *notifier) poll(ctx context.Context, store Store) {
	t := time.NewTicker(fallbackPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids := n.watched()
		if len(ids) == 0 {
			continue
		}
		readCtx, cancel := context.WithTimeout(ctx, fallbackPoll)
		seqs, err := orgSeqs(readCtx, store, ids)
		cancel()
		if err == nil {
			n.observe(seqs)
		}
		// On error the next tick tries again; waiters still time out and
		// look for themselves.
	}
}

// orgSeqs reads the event sequence numbers of organizations in one read-only
// transaction.
func orgSeqs(ctx context.Context, store Store, ids []string) (map[string]int64, error) {
	seqs := make(map[string]int64, len(ids))
	err := store.View(ctx, func(q Queries) error {
		for _, id := range ids {
			o, err := q.GetOrganization(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			seqs[id] = o.LastEventSeq
		}
		return nil
	})
	return seqs, err
}

// close stops the background work and wakes every subscriber, which then
// finds the store closed.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	cancel := n.cancel
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	n.wg.Wait()
	n.wakeAll()
}
