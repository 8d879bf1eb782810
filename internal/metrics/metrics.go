// Package metrics names every Prometheus series ctalk exports and records
// into them. It is a leaf: the rules (internal/relay), the MCP face and the
// HTTP front each call the few methods that concern them, and cmd creates
// one Metrics per process and hands it to all three. A nil *Metrics records
// nothing, so tests, the stdio transport and every caller that was not
// given one pay nothing and need no checks.
//
// Every label takes values from a fixed set named in this package or in
// the code (tool names, outcomes, lock kinds, refusal reasons): never a
// user, an organization, a token or any text a person wrote.
package metrics

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Outcome is how a tool call ended.
type Outcome string

// The outcomes of a tool call.
const (
	// OK: the call did what was asked.
	OK Outcome = "ok"
	// UserError: an expected failure the caller can act on (bad input, a
	// wrong password, a throttle, not found, a cancelled call).
	UserError Outcome = "user_error"
	// InternalError: anything else (a database failure, a panic): the
	// caller saw "internal error" and the log has the cause.
	InternalError Outcome = "internal_error"
)

// LockKind is what a password throttle lock is on.
type LockKind string

// The kinds of throttle lock.
const (
	LockAccount       LockKind = "account"        // one user's password
	LockAddress       LockKind = "address"        // one client address's password attempts
	LockAdminPassword LockKind = "admin_password" // an organization's admin password
	LockRegistration  LockKind = "registration"   // organizations registered from one address
)

// Refusal is why the HTTP front answered 503 without serving a request.
type Refusal string

// The reasons for a 503.
const (
	RefusedRequests  Refusal = "requests"   // the cap on requests served at once
	RefusedAddress   Refusal = "address"    // one client address's share of it
	RefusedBodyBytes Refusal = "body_bytes" // the budget of request body bytes held at once
)

// Buckets of the latency histograms, in seconds: from a cached read (1 ms)
// to a whole long poll (wait_for_messages lasts up to 55 s).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics holds ctalk's series in a registry of its own (not the global
// one), so that each test server has its own counts.
type Metrics struct {
	reg *prometheus.Registry

	toolCalls   *prometheus.CounterVec
	toolSeconds *prometheus.HistogramVec
	wakeSeconds prometheus.Histogram
	delivery    prometheus.Histogram
	hashWait    prometheus.Histogram
	locks       *prometheus.CounterVec
	refused     *prometheus.CounterVec
	notified    *prometheus.CounterVec

	// pending reads the notifications waiting for delivery (WatchNotifications).
	pending atomic.Pointer[func() float64]

	// Read at scrape time from whoever owns the number (see WatchRelay, WatchStore).
	openWaits, hashQueue, hashes atomic.Pointer[func() float64]
	pool                         atomic.Pointer[func() (open, inUse int)]
}

// New returns the series of one process; version labels ctalk_build_info.
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctalk_tool_calls_total",
		Help: "MCP tool calls finished, by tool and outcome (ok, user_error, internal_error).",
	}, []string{"tool", "outcome"})
	m.toolSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ctalk_tool_call_duration_seconds",
		Help:    "Time to run an MCP tool call, arguments decoded to result rendered, by tool.",
		Buckets: latencyBuckets,
	}, []string{"tool"})
	m.wakeSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "ctalk_wait_wakeup_seconds",
		Help: "Time from a wait's wake-up signal (an event committed for its user) to its response " +
			"being ready with the new events; spurious wake-ups are not counted.",
		Buckets: latencyBuckets,
	})
	m.delivery = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "ctalk_wait_delivery_seconds",
		Help: "Time from an event's timestamp (taken by the asking or answering call just before its " +
			"transaction) to a woken wait returning it; across replicas, their clocks' skew is in it too.",
		Buckets: latencyBuckets,
	})
	m.hashWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ctalk_password_hash_wait_seconds",
		Help:    "Time a password hash or check waited for a hashing slot (refusals after the wait included).",
		Buckets: latencyBuckets,
	})
	m.locks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctalk_throttle_locks_total",
		Help: "Password throttle locks set, by kind (account, address, admin_password, registration).",
	}, []string{"kind"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctalk_http_refused_total",
		Help: "HTTP requests refused with 503 by the caps, by reason (requests, address, body_bytes).",
	}, []string{"reason"})
	m.notified = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ctalk_notification_deliveries_total",
		Help: "Notification delivery attempts finished, by channel (email, slack, teams, webhook) and outcome: " +
			"sent, retry (failed, will be tried again), failed (given up), suppressed (answered within the delay), " +
			"skipped (the person turned notifications off or their endpoint is paused).",
	}, []string{"channel", "outcome"})
	for _, ch := range NotifyChannels {
		for _, o := range NotifyOutcomes {
			m.notified.WithLabelValues(ch, o)
		}
	}
	for _, k := range []LockKind{LockAccount, LockAddress, LockAdminPassword, LockRegistration} {
		m.locks.WithLabelValues(string(k))
	}
	for _, r := range []Refusal{RefusedRequests, RefusedAddress, RefusedBodyBytes} {
		m.refused.WithLabelValues(string(r))
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ctalk_build_info",
		Help:        "Always 1; its labels name the ctalk version and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	build.Set(1)
	read := func(p *atomic.Pointer[func() float64]) func() float64 {
		return func() float64 {
			if f := p.Load(); f != nil {
				return (*f)()
			}
			return 0
		}
	}
	poolPart := func(inUse bool) func() float64 {
		return func() float64 {
			f := m.pool.Load()
			if f == nil {
				return 0
			}
			open, busy := (*f)()
			if inUse {
				return float64(busy)
			}
			return float64(open)
		}
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(m.toolCalls, m.toolSeconds, m.wakeSeconds, m.delivery, m.hashWait, m.locks, m.refused, m.notified, build,
		gauge("ctalk_notifications_pending", "Notifications in the outbox not yet finished (due, delayed, quiet hours or "+
			"waiting for a retry), read from the database at scrape time.", read(&m.pending)),
		gauge("ctalk_waits_open", "Long waits held open now: wait_for_messages calls and the web app's live streams.",
			read(&m.openWaits)),
		gauge("ctalk_password_hash_queue_depth", "Password hashes and checks waiting now for a hashing slot.",
			read(&m.hashQueue)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ctalk_password_hashes_total",
			Help: "argon2id computations run (hashes and checks).",
		}, read(&m.hashes)),
		gauge("ctalk_db_connections_open", "Database connections the store's pool holds now.", poolPart(false)),
		gauge("ctalk_db_connections_in_use", "Database connections in use now (the rest are idle in the pool).", poolPart(true)),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Gatherer is what the /metrics endpoint serves.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// DeclareTools creates the series of each tool with each outcome at 0, so
// dashboards and alerts see a tool before its first call.
func (m *Metrics) DeclareTools(names ...string) {
	if m == nil {
		return
	}
	for _, n := range names {
		for _, o := range []Outcome{OK, UserError, InternalError} {
			m.toolCalls.WithLabelValues(n, string(o))
		}
		m.toolSeconds.WithLabelValues(n)
	}
}

// ToolCall records one finished call of tool.
func (m *Metrics) ToolCall(tool string, outcome Outcome, took time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool, string(outcome)).Inc()
	m.toolSeconds.WithLabelValues(tool).Observe(took.Seconds())
}

// WaitWoken records the time from a wait's wake-up to its response.
func (m *Metrics) WaitWoken(took time.Duration) {
	if m != nil {
		m.wakeSeconds.Observe(took.Seconds())
	}
}

// EventDelivered records the age of an event a woken wait returned (a
// negative age, from clock skew between replicas, counts as 0).
func (m *Metrics) EventDelivered(age time.Duration) {
	if m != nil {
		m.delivery.Observe(max(age, 0).Seconds())
	}
}

// HashWaited records how long a password hash waited for a slot.
func (m *Metrics) HashWaited(took time.Duration) {
	if m != nil {
		m.hashWait.Observe(took.Seconds())
	}
}

// Locked counts a throttle lock set (committed).
func (m *Metrics) Locked(kind LockKind) {
	if m != nil {
		m.locks.WithLabelValues(string(kind)).Inc()
	}
}

// Refused counts a request the HTTP caps refused.
func (m *Metrics) Refused(reason Refusal) {
	if m != nil {
		m.refused.WithLabelValues(string(reason)).Inc()
	}
}

// WatchRelay makes ctalk_waits_open read open(), and the password hash
// series read queued() (checks waiting for a slot) and hashes() (argon2id
// runs so far). The rules call it once they exist.
func (m *Metrics) WatchRelay(open, queued, hashes func() int64) {
	if m == nil {
		return
	}
	f := func(g func() int64) *func() float64 {
		h := func() float64 { return float64(g()) }
		return &h
	}
	m.openWaits.Store(f(open))
	m.hashQueue.Store(f(queued))
	m.hashes.Store(f(hashes))
}

// WatchStore makes the ctalk_db_connections_* series read connections
// (db.Store.Connections).
func (m *Metrics) WatchStore(connections func() (open, inUse int)) {
	if m != nil {
		m.pool.Store(&connections)
	}
}

// The channels and outcomes of ctalk_notification_deliveries_total.
var (
	NotifyChannels = []string{"email", "slack", "teams", "webhook", "none"}
	NotifyOutcomes = []string{"sent", "retry", "failed", "suppressed", "skipped"}
)

// NotificationAttempt counts one finished delivery attempt.
func (m *Metrics) NotificationAttempt(channel, outcome string) {
	if m != nil {
		m.notified.WithLabelValues(channel, outcome).Inc()
	}
}

// WatchNotifications makes ctalk_notifications_pending read pending().
func (m *Metrics) WatchNotifications(pending func() int64) {
	if m == nil {
		return
	}
	f := func() float64 { return float64(pending()) }
	m.pending.Store(&f)
}
