package server

import (
	"context"
	"net/http"
	"sync"
)

// A request may outlive its handler: a wait_for_messages held after its
// connection was taken over (heldWaits) answers long after ServeHTTP
// returned, so that no goroutine with a deep stack stays blocked for it.
// What the middlewares do when a request is done (give back its place
// under the caps and its body bytes, log its line) must then wait for that
// answer. Each of them hands it to afterRequest, which runs it at once for
// a request that ends with its handler, and when its answer is written for
// one that was detached.
type detachable struct {
	mu       sync.Mutex
	detached bool
	ends     []func(status int) // in the order the middlewares returned
	// The answer may be written before the middlewares have returned and
	// handed over their ends: whichever of the two comes last runs them.
	returned, answered bool
	status             int
}

type detachKey struct{}

// withDetach lets the requests through next be detached (see detachable).
func withDetach(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := &detachable{}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), detachKey{}, d)))
		d.mu.Lock()
		d.returned = true
		ends := d.take()
		d.mu.Unlock()
		for _, end := range ends {
			end(d.status)
		}
	})
}

// take returns the ends to run now: those handed over, once the request
// was answered and every middleware has returned. d.mu is held.
func (d *detachable) take() []func(status int) {
	if !d.detached || !d.returned || !d.answered {
		return nil
	}
	ends := d.ends
	d.ends = nil
	return ends
}

// afterRequest runs end with the response's status when the request of ctx
// is done: now, unless its handler detached it.
func afterRequest(ctx context.Context, status int, end func(status int)) {
	d, _ := ctx.Value(detachKey{}).(*detachable)
	if d != nil {
		d.mu.Lock()
		if d.detached {
			d.ends = append(d.ends, end)
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
	end(status)
}

// detach marks the request of ctx as outliving its handler and returns
// what to call, once, when its answer has been written (or the client has
// gone): it runs the middlewares' ends. It returns nil when the request
// cannot be detached (a handler used outside withDetach).
func detach(ctx context.Context) func(status int) {
	d, _ := ctx.Value(detachKey{}).(*detachable)
	if d == nil {
		return nil
	}
	d.mu.Lock()
	d.detached = true
	d.mu.Unlock()
	return func(status int) {
		d.mu.Lock()
		if d.answered {
			d.mu.Unlock()
			return
		}
		d.answered, d.status = true, status
		ends := d.take()
		d.mu.Unlock()
		for _, end := range ends {
			end(status)
		}
	}
}

// canDetach reports whether the request of ctx may be detached.
func canDetach(ctx context.Context) bool {
	d, _ := ctx.Value(detachKey{}).(*detachable)
	return d != nil
}
