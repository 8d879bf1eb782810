package web

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ctalk/ctalk/internal/relay"
)

// Live updates (issue 13): GET /app/events is a server-sent-events stream
// of the signed-in person's events, fed by the same wake-ups as
// wait_for_messages (relay.OpenLive). An event names only its kind and
// message id: the page fetches itself again to show it, so other people's
// text reaches the browser only through the escaped templates. The inbox
// and Asked pages load /app/static/live.js, which listens and swaps the
// list in place; without JavaScript they keep their reload links.

const (
	// liveHeartbeat is how often an idle stream sends a comment (so proxies
	// keep it open) and checks the session again.
	liveHeartbeat = 20 * time.Second
	// liveMaxAge ends a stream after a while: the browser reconnects with
	// Last-Event-ID, losing nothing, and the session's idle expiry slides.
	liveMaxAge = 30 * time.Minute
	// liveRetry is the reconnection delay the stream asks browsers for, ms.
	liveRetry = 3000
	// liveRefusedRetry is the Retry-After of a refused stream, seconds.
	liveRefusedRetry = 30
)

//go:embed static/live.js
var liveJS []byte

// liveHash versions the script's URL, so it can be cached for a year.
var liveHash = func() string {
	sum := sha256.Sum256(liveJS)
	return hex.EncodeToString(sum[:6])
}()

// LiveScript is the URL pages load the script from.
var LiveScript = Prefix + "/static/live.js?v=" + liveHash

// liveScript serves the embedded script: cached for a year when asked for
// by its versioned URL, briefly otherwise.
func (f *Face) liveScript(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == liveHash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	w.Write(liveJS) //nolint:errcheck // the client went away
}

// events streams the person's events until the session ends, the server
// drains, the browser goes away or liveMaxAge passes.
func (f *Face) events(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	stream, err := f.cfg.Relay.OpenLive(ctx, s.cred, r.Header.Get("Last-Event-ID"))
	var re *relay.Error
	switch {
	case err == nil:
	case errors.As(err, &re) && re.Kind == relay.KindThrottled:
		status := http.StatusTooManyRequests
		if errors.Is(err, relay.ErrLiveBusy) {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Retry-After", strconv.Itoa(liveRefusedRetry))
		http.Error(w, "Live updates are not available just now ("+re.Error()+"). Reload the page to see new messages.", status)
		return
	case errors.As(err, &re):
		http.Error(w, re.Error(), statusOf(re))
		return
	default:
		if ctx.Err() == nil {
			f.cfg.Logger.ErrorContext(r.Context(), "web live stream", "err", err)
		}
		http.Error(w, "ctalk could not open live updates just now. Reload the page in a moment.", http.StatusServiceUnavailable)
		return
	}
	defer stream.Close()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rc := http.NewResponseController(w)
	send := func(format string, args ...any) bool {
		// The server's write timeout would cut the stream: each write gets
		// its own deadline.
		rc.SetWriteDeadline(time.Now().Add(liveHeartbeat + 30*time.Second)) //nolint:errcheck // best effort
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	resumed := r.Header.Get("Last-Event-ID") != ""
	if !send("retry: %d\nid: %s\nevent: ready\ndata: {\"resumed\":%t}\n\n", liveRetry, stream.Cursor(), resumed) {
		return
	}
	end := time.Now().Add(liveMaxAge)
	for {
		wait := min(liveHeartbeat, time.Until(end))
		if wait <= 0 {
			return // the browser reconnects with Last-Event-ID
		}
		b, err := stream.Next(ctx, wait)
		switch {
		case errors.As(err, &re) && re.Kind == relay.KindUnauthorized:
			// Signed out, password changed or reset, deactivated: the page
			// stops listening (a reconnect would only meet the sign-in page).
			send("event: end\ndata: {\"reason\":\"signed-out\"}\n\n")
			return
		case err != nil:
			if ctx.Err() == nil {
				f.cfg.Logger.ErrorContext(r.Context(), "web live stream", "err", err)
			}
			return
		case b.Draining:
			// Closing lets the browser reconnect, to this replica once it is
			// back or to another one.
			return
		}
		if len(b.Events) == 0 {
			if !send(": heartbeat\n\n") {
				return
			}
			continue
		}
		for _, e := range b.Events {
			if !send("id: %s\nevent: %s\ndata: {\"message_id\":%d}\n\n", e.Cursor, e.Kind, e.MessageID) {
				return
			}
		}
	}
}
