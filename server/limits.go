package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/metrics"
)

// Defaults of the caps that keep what an unauthenticated stranger can make
// ctalk hold in memory bounded. Under a small Go memory limit (GOMEMLIMIT)
// the body budget and the request caps are smaller: see capsFor.
const (
	// DefaultMaxBodyBytesInFlight bounds the request body bytes held by
	// /mcp requests at once, summed over all of them. mcp-go's decoding
	// holds a few copies of each body, so the heap they take peaks at about
	// three times this (100 bodies of 1 MiB at once: about 30 MiB).
	DefaultMaxBodyBytesInFlight = 8 << 20
	// DefaultMaxConcurrentRequests bounds /mcp requests being served at
	// once, long waits (wait_for_messages, approvals) included. Every
	// connected agent keeps a wait open, so this sits well above the rules
	// layer's own cap on open waits; an unauthenticated request holds only
	// its body (bounded above) and a goroutine.
	DefaultMaxConcurrentRequests = 4096
	// DefaultMaxSessions bounds the sessions (2025-era clients that sent
	// initialize) whose client capabilities one replica remembers. A
	// session with the largest clientInfo accepted costs about 17 KiB of
	// heap, so 500 of them about 9 MiB.
	DefaultMaxSessions = 500
	// DefaultMaxRequestsPerAddress bounds the requests one client address
	// (one host, or one IPv6 /64) has in flight at once, so one stranger
	// cannot take every slot and what a flood from one address makes ctalk
	// hold stays an eighth of the whole. A team behind one NAT, each
	// agent with a wait open, still fits hundreds of people.
	DefaultMaxRequestsPerAddress = DefaultMaxConcurrentRequests / 8
)

// What mcp-go keeps of an initialize for the session's life, each bounded:
// far above what any real client sends.
const (
	maxClientInfoBytes   = 4 << 10
	maxCapabilitiesBytes = 8 << 10
)

// gate admits requests within the caps: a counting semaphore for requests,
// a share of it per client address, and a byte budget for their bodies,
// all refusing at once (503, Retry-After) rather than queueing, since a
// queue is memory too.
type gate struct {
	maxBody  int64 // one body
	budget   int64 // all bodies held at once
	inFlight atomic.Int64
	slots    chan struct{}

	key     func(*http.Request) string // the client address key (proxies.clientKey)
	perAddr int
	mu      sync.Mutex
	addrs   map[string]int // requests in flight per address key

	memory *memoryGuard // nil without a memory limit

	metrics *metrics.Metrics // counts the refusals; nil: none
}

func newGate(cfg Config, key func(*http.Request) string) *gate {
	return &gate{
		maxBody: cfg.MaxBodyBytes,
		// A body of the largest allowed size always fits an idle server.
		budget:  max(cfg.MaxBodyBytesInFlight, cfg.MaxBodyBytes+1),
		slots:   make(chan struct{}, cfg.MaxConcurrentRequests),
		key:     key,
		perAddr: min(cfg.MaxRequestsPerAddress, cfg.MaxConcurrentRequests),
		addrs:   map[string]int{},
		memory:  newMemoryGuard(cfg.MemoryLimit),
		metrics: cfg.Metrics,
	}
}

// enter counts a request of key in flight, if its address has room.
func (g *gate) enter(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addrs[key] >= g.perAddr {
		return false
	}
	g.addrs[key]++
	return true
}

func (g *gate) leave(key string) {
	g.mu.Lock()
	if g.addrs[key]--; g.addrs[key] <= 0 {
		delete(g.addrs, key)
	}
	g.mu.Unlock()
}

// busy answers that the server is full and when to retry, and counts why.
func (g *gate) busy(w http.ResponseWriter, why metrics.Refusal, what string) {
	g.metrics.Refused(why)
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, jsonRPCError(-32000,
		"server is busy ("+what+"): retry in 1 s"))
}

// admit serves at most cap(slots) requests at once, and at most perAddr
// of them from one client address.
func (g *gate) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := g.key(r)
		if !g.enter(key) {
			g.busy(w, metrics.RefusedAddress, "too many requests from your address at once")
			return
		}
		select {
		case g.slots <- struct{}{}:
			// A wait answered after its handler returned keeps its places until then.
			defer afterRequest(r.Context(), 0, func(int) {
				<-g.slots
				g.memory.check()
				g.leave(key)
			})
			next.ServeHTTP(w, r)
		default:
			g.busy(w, metrics.RefusedRequests, "too many requests at once")
			g.memory.check()
			g.leave(key)
		}
	})
}

// take reserves n more bytes of the budget for a body of total bytes, if
// they are free. A large body may not take the last smallBodyReserve bytes.
func (g *gate) take(n, total int64) bool {
	budget := g.budget
	if total > largeBody {
		budget = max(budget-smallBodyReserve, g.maxBody+1)
	}
	for {
		used := g.inFlight.Load()
		if used+n > budget {
			return false
		}
		if g.inFlight.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// readBody reads a POST body up front (mcp-go would read it without a
// limit), answering 413 with a clear JSON-RPC error when it is larger than
// one body may be and 503 when the bytes would exceed the budget. The
// bytes are reserved before they are read, as declared by Content-Length
// or as they arrive, and stay reserved until the request is done: mcp-go
// holds the body that long. It then refuses an initialize whose clientInfo
// or capabilities, kept for the session's life, are oversized.
func (g *gate) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > g.maxBody {
			tooLarge(w, g.maxBody)
			return
		}
		var held int64
		defer afterRequest(r.Context(), 0, func(int) { g.inFlight.Add(-held) })
		reserve := func(n int64) bool {
			if n <= held {
				return true
			}
			if !g.take(n-held, n) {
				return false
			}
			held = n
			return true
		}
		size := int64(4 << 10) // unknown length: grow as it arrives
		if r.ContentLength >= 0 {
			size = r.ContentLength + 1 // +1 to see the end without growing
		}
		if !reserve(size) {
			g.busy(w, metrics.RefusedBodyBytes, "too many request bytes at once")
			return
		}
		body := make([]byte, 0, size)
		in := http.MaxBytesReader(w, r.Body, g.maxBody)
		for {
			if len(body) == cap(body) {
				grown := min(2*int64(cap(body)), g.maxBody+1)
				if !reserve(grown) {
					g.busy(w, metrics.RefusedBodyBytes, "too many request bytes at once")
					return
				}
				body = append(make([]byte, 0, grown), body...)
			}
			n, err := in.Read(body[len(body):cap(body)])
			body = body[:len(body)+n]
			var tooBig *http.MaxBytesError
			switch {
			case errors.Is(err, io.EOF):
			case errors.As(err, &tooBig):
				tooLarge(w, g.maxBody)
				return
			case err != nil:
				writeJSON(w, http.StatusBadRequest, jsonRPCError(-32700, "could not read the request body"))
				return
			default:
				continue
			}
			break
		}
		if msg, id := oversizedInitialize(body); msg != "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "id": id,
				"error": map[string]any{"code": mcpgo.INVALID_PARAMS, "message": msg}})
			return
		}
		r.Body = &readBytes{Reader: bytes.NewReader(body), b: body}
		next.ServeHTTP(w, r)
	})
}

// readBytes is a body readBody read: the handlers after it may take its
// bytes (b) instead of reading a copy.
type readBytes struct {
	*bytes.Reader
	b []byte
}

func (*readBytes) Close() error { return nil }

func tooLarge(w http.ResponseWriter, limit int64) {
	writeJSON(w, http.StatusRequestEntityTooLarge, jsonRPCError(-32600,
		"request body is larger than the limit of "+strconv.FormatInt(limit, 10)+" bytes: send shorter text"))
}

// oversizedInitialize says why an initialize request must be refused before
// mcp-go stores its clientInfo and capabilities for the session's life.
// It decodes the body as mcp-go does (encoding/json, same field names), so
// both see the same method and the same params.
func oversizedInitialize(body []byte) (msg string, id json.RawMessage) {
	if len(body) <= min(maxClientInfoBytes, maxCapabilitiesBytes) {
		return "", nil // too short to hold an oversized field: skip the parse every call would pay
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &head) != nil || head.Method != string(mcpgo.MethodInitialize) {
		return "", nil
	}
	var init struct {
		Params struct {
			ClientInfo   json.RawMessage `json:"clientInfo"`
			Capabilities json.RawMessage `json:"capabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &init) != nil {
		return "", nil // mcp-go answers malformed params itself, storing nothing
	}
	switch {
	case len(init.Params.ClientInfo) > maxClientInfoBytes:
		return "clientInfo too large: at most " + strconv.Itoa(maxClientInfoBytes) + " bytes", head.ID
	case len(init.Params.Capabilities) > maxCapabilitiesBytes:
		return "capabilities too large: at most " + strconv.Itoa(maxCapabilitiesBytes) + " bytes", head.ID
	}
	return "", nil
}
