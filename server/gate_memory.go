package server

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The caps' defaults fit a process with memory to spare. Under a Go memory
// limit (GOMEMLIMIT) they shrink with it, so that what a flood can make a
// small instance hold fits under the limit with the rest of the process
// beside it. The binary's pages and SQLite's memory are outside the limit
// and add 17–21 MiB to the resident size, so a 64 MiB instance with
// GOMEMLIMIT=48MiB must keep the Go runtime well below its limit.
const (
	// bodyBudgetShare: the body bytes in flight are at most 1/16 of the
	// limit (3 MiB at 48 MiB). mcp-go holds about four copies of a body
	// while it decodes it, so the bodies cost up to a quarter of the limit.
	bodyBudgetShare = 16
	// requestCost: requests in flight may take half the limit, and a
	// parked one (an open wait) costs 40–50 KiB of resident memory when
	// the front holds it, and 75–92 KiB through mcp-go (a client with a
	// 2025-11-25 session), so the
	// request cap is at most the limit over 192 KiB (256 at 48 MiB, 32 of
	// them per address), and never below 64.
	requestCost = 192 << 10
	minRequests = 64
	// largeBody is the size above which a body is large: no tool call
	// needs one (the longest text, 16,000 characters, is at most 192 KB
	// even fully \u-escaped). Large bodies may not take the last
	// smallBodyReserve bytes of the budget, so a flood of them cannot keep
	// an ordinary call out.
	largeBody        = 256 << 10
	smallBodyReserve = 512 << 10
)

// memoryLimit is the process's Go memory limit, math.MaxInt64 when none.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// capsFor fills the caps cfg leaves at 0 with their defaults, shrunk to
// fit a memory limit of limit bytes (none if 0 or less).
func capsFor(cfg *Config, limit int64) {
	if limit <= 0 {
		limit = math.MaxInt64
	}
	if cfg.MaxBodyBytesInFlight <= 0 {
		cfg.MaxBodyBytesInFlight = min(DefaultMaxBodyBytesInFlight, limit/bodyBudgetShare)
	}
	requests := int(min(DefaultMaxConcurrentRequests, max(limit/requestCost, minRequests)))
	if cfg.MaxRequestsPerAddress <= 0 {
		// An operator who sets the request cap chose it for their clients
		// (a team behind one NAT shares one address): one address may then
		// use it up to the default share, as without a limit.
		cfg.MaxRequestsPerAddress = DefaultMaxRequestsPerAddress
		if cfg.MaxConcurrentRequests <= 0 {
			cfg.MaxRequestsPerAddress = requests / (DefaultMaxConcurrentRequests / DefaultMaxRequestsPerAddress)
		}
	}
	if cfg.MaxConcurrentRequests <= 0 {
		cfg.MaxConcurrentRequests = requests
	}
}

// memoryGuard returns the heap's free memory to the system when the Go
// runtime holds more than high bytes, slack of them garbage or free. Left
// alone, the runtime keeps what it freed (an argon2id hash's 9 MiB, a
// burst's buffers) until it nears its limit, so a flood right after a few
// logins would start with the process already near the limit, and the
// limit plus the memory outside it is more than a small instance has.
type memoryGuard struct {
	high, slack, urgent uint64
	next                atomic.Int64 // unix ns before which only an urgent release runs
	running             atomic.Bool
}

// newMemoryGuard guards a memory limit of limit bytes: it releases memory
// when the runtime holds more than half of it, 1/8 of it idle (less would
// cost a collection for little). After one password hash the runtime
// holds about half of 48 MiB, and the next hash must not add its 9 MiB to
// the garbage of the last. Nil (no guard) without a limit.
func newMemoryGuard(limit int64) *memoryGuard {
	if limit <= 0 || limit == math.MaxInt64 {
		return nil
	}
	return &memoryGuard{high: uint64(limit) / 2, slack: uint64(limit) / 8, urgent: uint64(limit) / 4}
}

// check releases idle memory if the runtime holds too much. Called as a
// request ends, before its response is complete, so the request that left
// the garbage waits for it to go (a full collection: a few ms for ctalk's
// heap, more under load) and its client's next request finds it gone. A
// release waits until ten times the last one's duration has passed, so
// releasing takes at most a tenth of the time, unless a quarter of the
// limit is idle (a password hash's garbage).
func (m *memoryGuard) check() {
	if m == nil || !m.running.CompareAndSwap(false, true) {
		return
	}
	defer m.running.Store(false)
	held, idle := m.usage()
	if held <= m.high || idle <= m.slack || (idle <= m.urgent && time.Now().UnixNano() < m.next.Load()) {
		return
	}
	start := time.Now()
	debug.FreeOSMemory()
	m.next.Store(time.Now().Add(10 * time.Since(start)).UnixNano())
}

// usage is the memory the Go runtime holds from the system, and how much
// of it a collection and a release would return: free heap memory, and
// heap objects beyond those live at the last collection (garbage, or new).
func (m *memoryGuard) usage() (held, idle uint64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	held = s[0].Value.Uint64() - s[1].Value.Uint64()
	idle = s[2].Value.Uint64()
	if objects, live := s[3].Value.Uint64(), s[4].Value.Uint64(); objects > live {
		idle += objects - live
	}
	return held, idle
}
