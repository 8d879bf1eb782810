package mcp

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

// Hold lets the HTTP front keep a wait_for_messages call open on a goroutine
// of its own with a small stack. Through a context from WithHold, the tool's
// handler (argument binding, the rules, error mapping, rendering) runs as
// always, but where the wait would block it returns at once and leaves the
// wait in the hold: the caller blocks (Block) and runs the same call again
// with the same context to carry on. The call is counted in the metrics
// once, when it ends, with its whole duration.
type Hold struct {
	relay *relay.Hold
	start time.Time // when the call's first run began
}

type holdKey struct{}

// NewHold returns a hold for one call of the request whose context is ctx
// (the wait's subscription ends with it). Close it when the call is done.
func NewHold(ctx context.Context) *Hold { return &Hold{relay: relay.NewHold(ctx)} }

// WithHold returns ctx for the runs of a held call.
func WithHold(ctx context.Context, h *Hold) context.Context {
	return relay.WithHold(context.WithValue(ctx, holdKey{}, h), h.relay)
}

// Held reports whether the last run left the call waiting in the hold.
func (h *Hold) Held() bool { return h.relay.Held() }

// Block waits until the held call has something to do: a wake-up, its
// timeout, the server's drain or the end of ctx.
func (h *Hold) Block(ctx context.Context) { h.relay.Block(ctx) }

// Notify arranges for fn to be called, once, when the held call has
// something to do, instead of a goroutine blocking in Block (see
// relay.Hold.Notify: fn must not block). Then the caller runs the call again.
func (h *Hold) Notify(fn func()) { h.relay.Notify(fn) }

// Close releases what a call still holds (its place under the wait caps,
// its subscription), if a run ended without doing so.
func (h *Hold) Close() { h.relay.Close() }

// heldStart is when the held call in ctx began, starting its clock on its first run.
func heldStart(ctx context.Context, now time.Time) time.Time {
	h, _ := ctx.Value(holdKey{}).(*Hold)
	if h == nil {
		return now
	}
	if h.start.IsZero() {
		h.start = now
	}
	return h.start
}
