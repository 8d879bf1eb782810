package relay

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Live streams: the web pages' server-sent events (issue 13). A stream is
// a long-lived Wait: the same events, the same wake-ups, the same caller
// check at every look (a session revoked while the stream is open ends it
// at the next wake-up or heartbeat), and it counts against the same caps
// on open waits, for its whole life, so a browser tab cannot hold more
// than a wait_for_messages caller could.

// ErrLiveBusy refines a refused stream: the process (not the caller) is at
// its cap of open waits. errors.Is tells the web face to answer 503 rather
// than 429.
var ErrLiveBusy = errors.New("ctalk has too many open waits")

// LiveStream is an open stream of the caller's events. Close it when done.
type LiveStream struct {
	s       *Service
	cred    Credentials
	c       caller
	after   int64
	wake    <-chan struct{}
	closers []func()
}

// LiveBatch is what one Next returns.
type LiveBatch struct {
	// Events are new events, oldest first; empty on a heartbeat.
	Events []WaitEvent
	// Cursor is the cursor after Events (the stream's position).
	Cursor string
	// Draining is set when the server is shutting down: the stream should
	// end and the browser reconnect (to this or another replica) later.
	Draining bool
}

// OpenLive checks the caller, takes one of their open-wait slots and
// subscribes to their wake-ups. cursor is a cursor from an earlier stream
// (the SSE Last-Event-ID) or "" for only what arrives from now on. A
// refused stream is a KindThrottled error (errors.Is ErrLiveBusy when the
// whole process is full or shutting down); an invalid session is
// KindUnauthorized.
func (s *Service) OpenLive(ctx context.Context, cred Credentials, cursor string) (*LiveStream, error) {
	l := &LiveStream{s: s, cred: cred}
	latest := true
	if c := strings.TrimSpace(cursor); c != "" && !strings.EqualFold(c, latestCursor) {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			return nil, badInput("Last-Event-ID must be the id of an event of this stream")
		}
		l.after, latest = n, false
	}
	select {
	case <-s.draining:
		return nil, errors.Join(errorf(KindThrottled, "ctalk is restarting: reconnect in a few seconds"), ErrLiveBusy)
	default:
	}
	// The first look checks the caller and resolves "latest": no slot is
	// taken for a session that does not work.
	// Events already waiting after a resumed cursor are left for Next: the
	// look moves l.after only to resolve "latest".
	if _, err := s.lookForEvents(ctx, cred, &l.c, &l.after, &latest); err != nil {
		return nil, err
	}
	key := l.c.user.OrgID + "/" + l.c.user.ID
	leave, err := s.waits.enter(key)
	if err != nil {
		if mine, _ := s.waits.open(key); mine < s.waits.maxUser {
			return nil, errors.Join(err, ErrLiveBusy)
		}
		return nil, err
	}
	wake, unsubscribe := s.store.Subscribe(ctx, l.c.user.OrgID, l.c.user.ID)
	l.wake, l.closers = wake, []func(){unsubscribe, leave}
	return l, nil
}

// Cursor is the stream's position: the id of the last event it returned,
// or of the last event before it opened.
func (l *LiveStream) Cursor() string { return strconv.FormatInt(l.after, 10) }

// Close gives back the stream's slot and subscription.
func (l *LiveStream) Close() {
	for _, f := range l.closers {
		f()
	}
	l.closers = nil
}

// Next returns the next events, waiting up to heartbeat for one; it
// returns an empty batch at the heartbeat (after checking the caller
// again) and a Draining batch when the server shuts down. A revoked or
// expired session, a deactivated user: KindUnauthorized.
func (l *LiveStream) Next(ctx context.Context, heartbeat time.Duration) (LiveBatch, error) {
	timer := time.NewTimer(heartbeat)
	defer timer.Stop()
	latest := false
	for {
		res, err := l.s.lookForEvents(ctx, l.cred, &l.c, &l.after, &latest)
		if err != nil {
			return LiveBatch{}, err
		}
		if len(res.Events) > 0 {
			l.after, _ = strconv.ParseInt(res.Cursor, 10, 64)
			return LiveBatch{Events: res.Events, Cursor: res.Cursor}, nil
		}
		select {
		case <-l.wake:
		case <-l.s.draining:
			return LiveBatch{Cursor: l.Cursor(), Draining: true}, nil
		case <-timer.C:
			// Look once more: the look checks the session.
			if res, err = l.s.lookForEvents(ctx, l.cred, &l.c, &l.after, &latest); err != nil {
				return LiveBatch{}, err
			}
			if len(res.Events) > 0 {
				l.after, _ = strconv.ParseInt(res.Cursor, 10, 64)
			}
			return LiveBatch{Events: res.Events, Cursor: l.Cursor()}, nil
		case <-ctx.Done():
			return LiveBatch{}, ctx.Err()
		}
	}
}
