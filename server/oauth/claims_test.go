package oauth

// Tests that pin the numbers docs/oauth.md gives for Client ID Metadata
// Documents (O47, O48, O49): 5 s, 5 KiB, cached 10 minutes, or the
// document's max-age within 1 minute to 24 hours, failures 30 s. The tests
// in client_test.go compare the behaviour with the package's own constants,
// so a changed constant would not fail them; these use the documented
// literals, with the zero FetcherOptions production uses.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sizedDoc serves a valid metadata document of exactly size bytes.
func sizedDoc(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		doc := claudeLikeDoc()
		doc["client_id"] = "http://" + r.Host + r.URL.RequestURI()
		doc["padding"] = ""
		b, _ := json.Marshal(doc)
		doc["padding"] = strings.Repeat("x", size-len(b))
		b, _ = json.Marshal(doc)
		if len(b) != size {
			http.Error(w, "test bug: document size", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// TestClaimFetchWithin5KiB (O48): with the default options a document of
// 5 KiB (5,120 bytes) is read, one byte more is refused, whether or not the
// server declares the length.
func TestClaimFetchWithin5KiB(t *testing.T) {
	for _, c := range []struct {
		size    int
		chunked bool
		ok      bool
	}{
		{5 << 10, false, true}, {5 << 10, true, true},
		{5<<10 + 1, false, false}, {5<<10 + 1, true, false},
	} {
		serve := sizedDoc(c.size)
		s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
			if c.chunked {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush() // no Content-Length from here on
			}
			serve(w, r)
		})
		f, _ := newTestFetcher(t, FetcherOptions{}, s)
		_, err := f.Get(context.Background(), s.URL+"/client.json")
		if c.ok && err != nil {
			t.Errorf("a %d-byte document (chunked %v): %v, want it read (the limit is 5 KiB)", c.size, c.chunked, err)
		}
		if !c.ok {
			if err == nil {
				t.Errorf("a %d-byte document (chunked %v) was read, want it refused (the limit is 5 KiB)", c.size, c.chunked)
				continue
			}
			wantClientError(t, err, "invalid_client", "larger than 5120 bytes")
		}
	}
}

// TestClaimFetchWithin5s (O47): the default fetch timeout is 5 s, on the
// client that does the fetching and in the message a timeout gives. Driving
// a real 5 s timeout would make the test wait 5 s; the fetcher takes no
// clock for its network timeouts, so the effective settings are read.
func TestClaimFetchWithin5s(t *testing.T) {
	f, _ := newTestFetcher(t, FetcherOptions{})
	if f.client.Timeout != 5*time.Second {
		t.Errorf("the default fetch client's timeout = %s, want 5s", f.client.Timeout)
	}
	tr := f.client.Transport.(*http.Transport)
	if tr.ResponseHeaderTimeout != 5*time.Second || tr.TLSHandshakeTimeout != 5*time.Second {
		t.Errorf("default transport timeouts: headers %s, TLS %s; want 5s each", tr.ResponseHeaderTimeout, tr.TLSHandshakeTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	if msg := describeFetchError(ctx, context.DeadlineExceeded, f.opts.Timeout); msg != "no complete answer within 5s" {
		t.Errorf("timeout message = %q, want %q", msg, "no complete answer within 5s")
	}
}

// cacheSteps fetches id at each step's clock offset (cumulative) and checks
// how many requests the server has seen by then.
func cacheSteps(t *testing.T, name string, f *Fetcher, clock *fakeClock, s *docServer, id string, wantErr bool,
	steps []step) {
	t.Helper()
	for _, st := range steps {
		clock.Advance(st.advance)
		_, err := f.Get(context.Background(), id)
		if !wantErr && err != nil {
			t.Fatalf("%s: after +%s: %v", name, st.advance, err)
		}
		if wantErr && !errors.As(err, new(*ClientError)) {
			t.Fatalf("%s: after +%s: %v, want a *ClientError", name, st.advance, err)
		}
		if n := s.hits.Load(); n != st.hits {
			t.Errorf("%s: after +%s: %d requests, want %d", name, st.advance, n, st.hits)
		}
	}
}

type step = struct {
	advance time.Duration
	hits    int64
}

// TestClaimFetchCacheLifetimes (O49): a document is cached 10 minutes, or
// its max-age clamped to 1 minute to 24 hours; a failure is remembered 30 s.
func TestClaimFetchCacheLifetimes(t *testing.T) {
	for _, c := range []struct {
		name   string
		header http.Header
		steps  []step
	}{
		{"no Cache-Control: 10 minutes", nil,
			[]step{{0, 1}, {10*time.Minute - time.Second/2, 1}, {time.Second, 2}}},
		{"max-age=5: at least 1 minute", http.Header{"Cache-Control": {"max-age=5"}},
			[]step{{0, 1}, {time.Minute - time.Second/2, 1}, {time.Second, 2}}},
		{"no-store: 1 minute", http.Header{"Cache-Control": {"no-store"}},
			[]step{{0, 1}, {time.Minute - time.Second/2, 1}, {time.Second, 2}}},
		{"max-age of a year: at most 24 hours", http.Header{"Cache-Control": {"max-age=31536000"}},
			[]step{{0, 1}, {24*time.Hour - time.Second/2, 1}, {time.Second, 2}}},
	} {
		s := newDocServer(t, false, serveDoc(claudeLikeDoc(), c.header))
		f, clock := newTestFetcher(t, FetcherOptions{}, s)
		cacheSteps(t, c.name, f, clock, s, s.URL+"/client.json", false, c.steps)
	}

	var broken atomic.Bool
	broken.Store(true)
	good := serveDoc(claudeLikeDoc(), nil)
	s := newDocServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		good(w, r)
	})
	f, clock := newTestFetcher(t, FetcherOptions{}, s)
	cacheSteps(t, "a failure: 30 s", f, clock, s, s.URL+"/client.json", true,
		[]step{{0, 1}, {30*time.Second - time.Second/2, 1}})
	broken.Store(false)
	cacheSteps(t, "a failure: 30 s", f, clock, s, s.URL+"/client.json", false,
		[]step{{time.Second, 2}})
}
