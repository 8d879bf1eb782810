package server

import (
	"container/list"
	"context"
	"net/http"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// sessionIdleTTL is how long a replica remembers an idle session's client
// capabilities. A client whose session was forgotten carries on (any
// well-formed session id is accepted); only elicitation falls back to the
// draft rule until it initializes again.
const sessionIdleTTL = 30 * time.Minute

// sessions bounds the per-session state mcp-go keeps. mcp-go remembers each
// initialize (client capabilities and clientInfo, channels) until DELETE or
// its idle sweep, and every well-formed Mcp-Session-Id it is sent, even one
// it never minted, until the sweep. Here a replica remembers at most max
// sessions it initialized, forgetting the least recently used idle one
// first, and forgets an id it did not mint as soon as no request carrying
// it is in flight. Forgetting is a DELETE sent to mcp-go itself, which is
// how mcp-go drops all of a session's state.
type sessions struct {
	mcp http.Handler // the mcp-go handler that holds the state
	max int
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	known map[string]*session
	lru   list.List // of the ids minted here, most recently used first
}

type session struct {
	inFlight int
	last     time.Time
	minted   *list.Element // nil for an id this replica did not mint
}

// newSessions tracks up to max sessions; its mcp must be set before use.
func newSessions(max int) *sessions {
	return &sessions{max: max, ttl: sessionIdleTTL, now: time.Now, known: map[string]*session{}}
}

// lenientSessions mints session ids and accepts any request that carries
// one of ours or none at all: no request depends on per-session state, so
// a client that does not echo the id (or reaches another replica) still works.
type lenientSessions struct {
	mcpserver.StatelessGeneratingSessionIdManager
}

func (l *lenientSessions) Validate(id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	return l.StatelessGeneratingSessionIdManager.Validate(id)
}

// mintedKey carries, in a request's context, where the id minted for it goes.
type mintedKey struct{}

// recordingSessions are lenientSessions that note the id they mint for
// one request.
type recordingSessions struct {
	lenientSessions
	minted *string
}

func (m *recordingSessions) Generate() string {
	*m.minted = m.lenientSessions.Generate()
	return *m.minted
}

// ResolveSessionIdManager gives mcp-go, for each request, session ids that
// tell track which id an initialize minted: mcp-go registers the session
// then, whether or not its answer (JSON or SSE) carries the id.
func (s *sessions) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r != nil {
		if minted, ok := r.Context().Value(mintedKey{}).(*string); ok {
			return &recordingSessions{minted: minted}
		}
	}
	return &lenientSessions{} // mcp-go's idle sweep
}

// validID is the check mcp-go applies before it keeps anything for an id.
var validID = (&mcpserver.StatelessGeneratingSessionIdManager{}).Validate

// track wraps the mcp-go handler.
func (s *sessions) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(mcpserver.HeaderKeySessionID)
		if _, err := validID(id); id == "" || err != nil {
			id = "" // mcp-go keeps nothing for it
		} else {
			s.enter(id)
		}
		var minted string
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mintedKey{}, &minted)))
		if minted != "" {
			s.minted(minted)
		}
		if id != "" {
			s.leave(id)
		}
	})
}

// entry is id's record, made if new; the caller holds s.mu.
func (s *sessions) entry(id string) *session {
	e := s.known[id]
	if e == nil {
		e = &session{}
		s.known[id] = e
	}
	return e
}

func (s *sessions) enter(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(id)
	e.inFlight++
	if e.minted != nil {
		e.last = s.now()
		s.lru.MoveToFront(e.minted)
	}
}

func (s *sessions) leave(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.known[id]
	e.inFlight--
	if e.inFlight == 0 && e.minted == nil {
		s.forget(id)
	}
}

// minted records a session mcp-go has just registered, then forgets idle
// sessions beyond the cap or past the idle TTL, oldest first.
func (s *sessions) minted(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(id)
	e.last = s.now()
	if e.minted == nil {
		e.minted = s.lru.PushFront(id)
	} else {
		s.lru.MoveToFront(e.minted)
	}
	cutoff := s.now().Add(-s.ttl)
	for el := s.lru.Back(); el != nil; {
		prev := el.Prev()
		old := s.known[el.Value.(string)]
		if s.lru.Len() <= s.max && !old.last.Before(cutoff) {
			break // the rest are newer
		}
		if old.inFlight == 0 {
			s.lru.Remove(el)
			s.forget(el.Value.(string))
		} else {
			old.minted = nil // forgotten once its last request is done
			s.lru.Remove(el)
		}
		el = prev
	}
}

// forget drops id here and in mcp-go. The caller holds s.mu, so no request
// with id starts until mcp-go has dropped it.
func (s *sessions) forget(id string) {
	delete(s.known, id)
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", http.NoBody)
	r.Header.Set(mcpserver.HeaderKeySessionID, id)
	s.mcp.ServeHTTP(discard{header: http.Header{}}, r)
}

// live is how many sessions minted here are remembered.
func (s *sessions) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// discard is a ResponseWriter for the DELETEs sent to mcp-go.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}
