package server_test

// Live updates of the web pages (issue 13): GET /app/events streams the
// signed-in person's new questions and answers as server-sent events, fed
// by the same wake-ups as wait_for_messages, under the same caps, and ends
// when the session is revoked or the server drains. The questions are asked
// through MCP with the official SDK client. The browser side (live.js
// swapping the list in place) is test/acceptance/web.mjs.

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// sseEvent is one server-sent event.
type sseEvent struct{ event, id, data string }

// liveStream is an open GET /app/events; events closes when the stream ends.
type liveStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openLive opens the browser's event stream (lastID, if not "", as
// Last-Event-ID) and returns it with its response; a refused stream is
// returned with its body read and no events.
func (b *browser) openLive(t *testing.T, lastID string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/app/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	// No client timeout: the stream lives until the test ends it.
	c := &http.Client{Jar: b.c.Jar, CheckRedirect: b.c.CheckRedirect}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /app/events: %v", err)
	}
	l := &liveStream{resp: resp, events: make(chan sseEvent, 16), cancel: cancel}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		close(l.events)
		return l
	}
	go func() {
		defer close(l.events)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.event != "" || e.data != "" {
					l.events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				e.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return l
}

// next returns the stream's next event; ok is false when the stream ended.
func (l *liveStream) next(t *testing.T) (e sseEvent, ok bool) {
	t.Helper()
	select {
	case e, ok = <-l.events:
		return e, ok
	case <-t.Context().Done():
		t.Fatal("the test ended while waiting for an event")
		return sseEvent{}, false
	}
}

// ready reads the stream's first event and returns its id (the cursor).
func (l *liveStream) ready(t *testing.T, resumed bool) string {
	t.Helper()
	if l.resp.StatusCode != http.StatusOK || !strings.HasPrefix(l.resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /app/events = %d %q; want 200 text/event-stream", l.resp.StatusCode, l.resp.Header.Get("Content-Type"))
	}
	e, ok := l.next(t)
	want := `{"resumed":` + strconv.FormatBool(resumed) + `}`
	if !ok || e.event != "ready" || e.id == "" || e.data != want {
		t.Fatalf("first event = %+v (open %v); want ready with an id and %s", e, ok, want)
	}
	return e.id
}

// expect reads the next event and checks it names kind and message id.
func (l *liveStream) expect(t *testing.T, kind string, id int64) sseEvent {
	t.Helper()
	e, ok := l.next(t)
	if want := `{"message_id":` + strconv.FormatInt(id, 10) + `}`; !ok || e.event != kind || e.data != want || e.id == "" {
		t.Fatalf("event = %+v (open %v); want %s %s with an id", e, ok, kind, want)
	}
	return e
}

// liveServer serves ctalk with the web face and the given relay options.
func liveServer(t *testing.T, store db.Store, opts relay.Options) string {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	opts.HashConcurrency = 4
	rules := relay.New(store, opts)
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(nil, mcp.Options{Version: "e2e", Relay: rules, Logger: logger}), Relay: rules,
		Logger: logger, Version: "e2e",
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestWebLive: john's stream receives umar's question (asked through MCP),
// and only his; umar's receives john's answer; a stream resumed with
// Last-Event-ID loses nothing; a revoked session's stream ends without
// delivering what came after. Both backends.
func TestWebLive(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, _ := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		umar, john := team(t, cs, "acme")
		registerUser(t, cs, "acme", "ann", "Ann", "")

		// Signed out: the stream is the sign-in redirect, like any page.
		if p := newBrowser(base).get(t, "/app/events"); p.status != http.StatusSeeOther {
			t.Errorf("signed-out GET /app/events = %d, want 303 to the sign-in page", p.status)
		}

		jb := newBrowser(base)
		jb.signIn(t, "acme", "john", userPassword)
		ub := newBrowser(base)
		ub.signIn(t, "acme", "umar", userPassword)
		jl := jb.openLive(t, "")
		before := jl.ready(t, false)
		ul := ub.openLive(t, "")
		ul.ready(t, false)

		// Another person's question is not john's event: the first event
		// john's stream delivers is the question asked of him after it.
		ask(t, cs, umar, "ann", "for ann only")
		id := ask(t, cs, umar, "john", "live: do the payments retries cap at 5?")
		got := jl.expect(t, "question", id)

		// The asker's stream gets the answer.
		answer(t, cs, john, id, "Yes, 5, with backoff.")
		ul.expect(t, "answer", id)

		// Resuming from the cursor before the question replays it at once.
		resumed := jb.openLive(t, before)
		resumed.ready(t, true)
		resumed.expect(t, "question", id)
		resumed.cancel()
		// ...and from the question's own id, nothing old comes back: the
		// next event is the next question.
		after := jb.openLive(t, got.id)
		after.ready(t, true)
		id2 := ask(t, cs, umar, "john", "and the timeout?")
		after.expect(t, "question", id2)
		jl.expect(t, "question", id2)

		// Signing out revokes the session: the open stream ends at its next
		// wake-up with an end event, and never delivers the question that
		// woke it.
		signout := jb.post(t, "/app/signout", url.Values{"csrf_token": {csrf(t, jb.get(t, "/app/asked"))}})
		if signout.status != http.StatusSeeOther {
			t.Fatalf("sign out = %d, want 303", signout.status)
		}
		ask(t, cs, umar, "john", "after sign-out")
		for _, l := range []*liveStream{jl, after} {
			e, ok := l.next(t)
			if !ok || e.event != "end" || e.data != `{"reason":"signed-out"}` {
				t.Fatalf("after sign-out the stream sent %+v (open %v); want an end event", e, ok)
			}
			if e, ok := l.next(t); ok {
				t.Fatalf("after its end event the stream sent %+v; want it closed", e)
			}
		}
		// Umar's session still streams.
		callOK[askOut](t, cs, "ask_person", args{"auth_token": john, "to_user_id": "umar", "question": "still there?"})
		if e, ok := ul.next(t); !ok || e.event != "question" {
			t.Fatalf("umar's stream after john signed out: %+v (open %v); want his question", e, ok)
		}
	})
}

// TestWebLiveCaps: a stream counts as an open wait for its whole life, so a
// browser cannot hold more than wait_for_messages could: over the per-user
// cap 429, over the process cap 503, both with Retry-After; closing one lets
// another open. A draining server ends its streams and refuses new ones.
// Both backends.
func TestWebLiveCaps(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		draining := make(chan struct{})
		base := liveServer(t, dbtest.Open(t, cfg), relay.Options{MaxWaits: 3, MaxWaitsPerUser: 2, Draining: draining})
		cs := connectTo(t, base+"/mcp", "", "")
		_, john := team(t, cs, "acme")
		jb := newBrowser(base)
		jb.signIn(t, "acme", "john", userPassword)
		ub := newBrowser(base)
		ub.signIn(t, "acme", "umar", userPassword)

		j1, j2 := jb.openLive(t, ""), jb.openLive(t, "")
		j1.ready(t, false)
		j2.ready(t, false)
		refused := func(l *liveStream, status int, why string) {
			t.Helper()
			if l.resp.StatusCode != status || l.resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s: GET /app/events = %d, Retry-After %q; want %d with Retry-After",
					why, l.resp.StatusCode, l.resp.Header.Get("Retry-After"), status)
			}
		}
		refused(jb.openLive(t, ""), http.StatusTooManyRequests, "john's third stream")
		// The streams hold john's wait slots: wait_for_messages is refused too.
		if msg := callErr(t, cs, "wait_for_messages", args{"auth_token": john, "cursor": "latest", "timeout_seconds": 1}); !strings.Contains(msg, "too many open waits for you") {
			t.Errorf("wait_for_messages with two streams open: %q; want the per-user cap", msg)
		}
		u1 := ub.openLive(t, "")
		u1.ready(t, false)
		refused(ub.openLive(t, ""), http.StatusServiceUnavailable, "a stream over the process cap")

		// Closing a stream gives its slot back.
		j2.cancel()
		for range j2.events {
		}
		var j3 *liveStream
		for range 200 { // the server notices the closed stream soon after
			if j3 = jb.openLive(t, ""); j3.resp.StatusCode == http.StatusOK {
				break
			}
		}
		j3.ready(t, false)

		// Draining ends every stream (the browser reconnects later) and
		// refuses new ones.
		close(draining)
		for _, l := range []*liveStream{j1, j3, u1} {
			if e, ok := l.next(t); ok {
				t.Errorf("draining: the stream sent %+v; want it closed", e)
			}
		}
		refused(ub.openLive(t, ""), http.StatusServiceUnavailable, "a stream while draining")
	})
}

// TestWebLiveScript: the inbox and Asked pages load the script, and only
// they allow a script (this site's); it is served with a long cache.
func TestWebLiveScript(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, _ := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		team(t, cs, "acme")
		b := newBrowser(base)
		b.signIn(t, "acme", "john", userPassword)
		var src string
		for path, live := range map[string]bool{"/app": true, "/app/asked": true, "/app/people": false, "/app/people/umar": false} {
			p := b.get(t, path)
			csp := p.resp.Header.Get("Content-Security-Policy")
			m := scriptTag.FindStringSubmatch(p.body)
			if (m != nil) != live || strings.Contains(csp, "script-src") != live || strings.Contains(csp, "unsafe") {
				t.Errorf("%s: script tag %q, CSP %q; want the script and script-src 'self' only on the inbox and Asked", path, m, csp)
			}
			if live && !strings.Contains(csp, "script-src 'self'; connect-src 'self';") {
				t.Errorf("%s: CSP %q; want script-src 'self'; connect-src 'self'", path, csp)
			}
			if m != nil {
				src = m[1]
			}
		}
		if src == "" {
			t.Fatal("no script tag on the inbox")
		}
		js := newBrowser(base).get(t, src) // a static file: no session needed
		if js.status != http.StatusOK || !strings.HasPrefix(js.resp.Header.Get("Content-Type"), "text/javascript") ||
			js.resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.Contains(js.body, "new EventSource('/app/events')") {
			t.Errorf("GET %s = %d %q %q; want the script, cached for a year", src, js.status,
				js.resp.Header.Get("Content-Type"), js.resp.Header.Get("Cache-Control"))
		}
	})
}

var scriptTag = regexp.MustCompile(`<script src="(/app/static/live\.js\?v=[0-9a-f]+)" defer></script>`)
