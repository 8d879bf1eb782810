package server

import (
	"math"
	"runtime/debug"
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
	// parked one (an open wait) costs 75–92 KiB of resident memory, so the
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
	if cfg.MaxConcurrentRequests <= 0 {
		cfg.MaxConcurrentRequests = requests
	}
	if cfg.MaxRequestsPerAddress <= 0 {
		cfg.MaxRequestsPerAddress = requests / (DefaultMaxConcurrentRequests / DefaultMaxRequestsPerAddress)
	}
}
