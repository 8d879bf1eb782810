package bench

import (
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"
)

// toolStats are one tool's calls, errors and latencies.
type toolStats struct {
	Calls, Errors int64
	ErrorSamples  map[string]int64 // up to a few distinct messages
	hist          histogram
}

// sample counts n errors with msg, keeping up to five distinct messages.
func (s *toolStats) sample(msg string, n int64) {
	if s.ErrorSamples == nil {
		s.ErrorSamples = map[string]int64{}
	}
	if _, ok := s.ErrorSamples[msg]; ok || len(s.ErrorSamples) < 5 {
		s.ErrorSamples[msg] += n
	}
}

func (s *toolStats) merge(o *toolStats) {
	s.Calls += o.Calls
	s.Errors += o.Errors
	for k, v := range o.ErrorSamples {
		s.sample(k, v)
	}
	s.hist.merge(&o.hist)
}

// Percentile returns the latency below which a fraction p of the calls fell.
func (s *toolStats) Percentile(p float64) time.Duration { return s.hist.percentile(p) }

// histogram counts latencies in microseconds, 32 buckets per power of two:
// a percentile is within about 3% of the exact one, in constant memory.
type histogram struct{ counts []int64 }

func bucketOf(us int64) int {
	if us < 32 {
		return int(max(us, 0))
	}
	shift := bits.Len64(uint64(us)) - 6 // us>>shift is in [32, 63]
	return 32*(shift+1) + int(us>>shift) - 32
}

// bucketMid is the middle of a bucket's range, in microseconds.
func bucketMid(i int) int64 {
	if i < 32 {
		return int64(i)
	}
	shift := i/32 - 1
	return int64(i%32+32)<<shift + (int64(1)<<shift)/2
}

func (h *histogram) add(d time.Duration) {
	i := bucketOf(d.Microseconds())
	for len(h.counts) <= i {
		h.counts = append(h.counts, 0)
	}
	h.counts[i]++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		for len(h.counts) <= i {
			h.counts = append(h.counts, 0)
		}
		h.counts[i] += c
	}
}

func (h *histogram) percentile(p float64) time.Duration {
	var n int64
	for _, c := range h.counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(int64(p*float64(n)+0.999999), 1)
	var seen int64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return time.Duration(bucketMid(i)) * time.Microsecond
		}
	}
	return 0
}

// Report is a run's result.
type Report struct {
	Elapsed    time.Duration
	Tools      map[string]*toolStats
	Leaks      int64
	LeakSample string
}

func (r *Report) tool(name string) *toolStats {
	if r.Tools[name] == nil {
		r.Tools[name] = &toolStats{}
	}
	return r.Tools[name]
}

func (r *Report) errors() (n int64) {
	for _, s := range r.Tools {
		n += s.Errors
	}
	return n
}

// Print writes the report as a table, errors and leaks after it.
func (r *Report) Print(w io.Writer, cfg Config) {
	fmt.Fprintf(w, "ctalk bench %s: %d organizations × %d users, %d clients, %s\n\n",
		cfg.Endpoint, cfg.Orgs, cfg.Users, cfg.Concurrency, r.Elapsed.Round(10*time.Millisecond))
	fmt.Fprintf(w, "%-17s %9s %9s %9s %9s %9s %7s\n", "tool", "calls", "calls/s", "p50", "p95", "p99", "errors")
	all := &toolStats{}
	row := func(name string, s *toolStats) {
		fmt.Fprintf(w, "%-17s %9d %9.1f %9s %9s %9s %7d\n", name, s.Calls, float64(s.Calls)/r.Elapsed.Seconds(),
			ms(s.Percentile(0.50)), ms(s.Percentile(0.95)), ms(s.Percentile(0.99)), s.Errors)
	}
	for _, name := range Tools {
		s := r.tool(name)
		row(name, s)
		all.merge(s)
	}
	row("all", all)
	var samples []string
	for _, name := range Tools {
		for msg, n := range r.Tools[name].ErrorSamples {
			samples = append(samples, fmt.Sprintf("  %s ×%d: %s", name, n, msg))
		}
	}
	sort.Strings(samples)
	if len(samples) > 0 {
		fmt.Fprintf(w, "\nerrors:\n%s\n", strings.Join(samples, "\n"))
	}
	if r.Leaks > 0 {
		fmt.Fprintf(w, "\nLEAK: %d calls saw another organization's data; first: %s\n", r.Leaks, r.LeakSample)
	} else {
		fmt.Fprintln(w, "\nleaks: none (no call saw another organization's data)")
	}
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms" }
