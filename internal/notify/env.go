package notify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Env is the notifications' configuration from the environment.
type Env struct {
	// SMTP sends email (CTALK_SMTP_URL, CTALK_SMTP_FROM); nil: no email channel.
	SMTP *SMTP
	// AllowPrivate lets webhooks reach private and loopback addresses
	// (CTALK_WEBHOOK_ALLOW_PRIVATE=1).
	AllowPrivate bool
	// Lease is how long a replica holds a claimed notification
	// (CTALK_NOTIFY_LEASE; 0: the worker's default).
	Lease time.Duration
}

// EnvHelp documents the variables LoadEnv reads, as `ctalk --help` lists them.
const EnvHelp = `  CTALK_SMTP_URL          SMTP server for notification emails: smtp://user:pass@host:587
                          (STARTTLS required), smtps://user:pass@host:465 (TLS), or
                          smtp://host:25?tls=none (a relay without TLS; no password allowed).
                          Unset: the email channel is refused (default: none)
  CTALK_SMTP_FROM         sender of notification emails, e.g. "ctalk <ctalk@example.com>"
  CTALK_WEBHOOK_ALLOW_PRIVATE
                          1: notification webhooks may go to private and loopback addresses
                          and plain http (default 0: public https only)
  CTALK_NOTIFY_LEASE      how long a replica holds a notification it is sending: if it dies
                          meanwhile, another sends it after this (default 2m; at least 1s)
`

// LoadEnv reads the notifications' variables, with errors that say what to write.
func LoadEnv(getenv func(string) string) (Env, error) {
	var e Env
	var err error
	if e.SMTP, err = ParseSMTP(getenv("CTALK_SMTP_URL"), getenv("CTALK_SMTP_FROM")); err != nil {
		return e, err
	}
	switch v := strings.TrimSpace(getenv("CTALK_WEBHOOK_ALLOW_PRIVATE")); v {
	case "", "0", "false":
	case "1", "true":
		e.AllowPrivate = true
	default:
		return e, fmt.Errorf("CTALK_WEBHOOK_ALLOW_PRIVATE=%q: use 1 to allow private webhook destinations, or unset it", v)
	}
	if v := strings.TrimSpace(getenv("CTALK_NOTIFY_LEASE")); v != "" {
		if e.Lease, err = time.ParseDuration(v); err != nil || e.Lease < time.Second {
			return e, fmt.Errorf("CTALK_NOTIFY_LEASE=%q is not a duration of at least 1s: use a value such as 2m, or unset it", v)
		}
	}
	return e, nil
}

// Guard is the webhook destination guard of this configuration.
func (e Env) Guard() Guard { return Guard{AllowPrivate: e.AllowPrivate} }

// Start runs the worker in the background until ctx ends or stop is
// called; stop waits for it (deliveries in flight are left to their lease).
func (w *Worker) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
