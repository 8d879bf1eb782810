package relay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/metrics"
)

// Password guessing is throttled per account (organization+user, or an
// organization's admin password) and per client address, in the database so
// that every replica applies the same limits. While a key is locked no
// password is hashed at all.
const (
	accountFreeFailures = 5  // failures on one account before backoff starts
	addrFreeFailures    = 20 // failures from one address before backoff starts
	baseBackoff         = 2 * time.Second
	maxBackoff          = 15 * time.Minute
	throttleKeep        = 24 * time.Hour // rows untouched this long are pruned
)

type clientAddrKey struct{}

// WithClientAddr returns a context carrying the caller's network address,
// which the throttle counts failures against.
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

func addrKey(ctx context.Context) string {
	if a, _ := ctx.Value(clientAddrKey{}).(string); a != "" {
		return "addr:" + a
	}
	return ""
}

func userKey(orgID, userID string) string { return "user:" + orgID + "/" + userID }
func adminKey(orgID string) string        { return "admin:" + orgID }

// lockKind names what a throttle key counts, for the metrics.
func lockKind(key string) metrics.LockKind {
	switch kind, _, _ := strings.Cut(key, ":"); kind {
	case "user":
		return metrics.LockAccount
	case "admin":
		return metrics.LockAdminPassword
	case "register":
		return metrics.LockRegistration
	}
	return metrics.LockAddress
}

// backoff is how long a key stays locked after its nth failure.
func backoff(failures, free int64) time.Duration {
	if failures < free {
		return 0
	}
	shift := failures - free
	if shift > 20 {
		return maxBackoff
	}
	return min(baseBackoff<<shift, maxBackoff)
}

// errThrottled says when to retry.
func errThrottled(wait time.Duration) error {
	return errorf(KindThrottled, "too many failed password attempts: retry in %d s", int64(math.Ceil(wait.Seconds())))
}

// limit is one throttle key and how many counts it takes before backoff.
// timeOnly marks a key whose lock nothing but time lifts (addresses and
// registrations: no success or admin action clears them), so this process
// may remember the lock and refuse without a transaction.
type limit struct {
	key      string
	free     int64
	timeOnly bool
}

// lockCache remembers locks on timeOnly keys until they expire: a flood of
// attempts from a locked address then costs no database transaction each,
// which on SQLite would queue every other write behind it. The database
// stays the authority; another replica learns a lock from it.
type lockCache struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxCachedLocks bounds the cache; past it, expired entries are swept.
const maxCachedLocks = 10000

// lockedFor reports how long key is still known to be locked at now.
func (c *lockCache) lockedFor(key string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.until[key].Sub(now)
}

// remember records key locked until until.
func (c *lockCache) remember(key string, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = map[string]time.Time{}
	}
	if len(c.until) >= maxCachedLocks {
		for k, u := range c.until {
			if !u.After(now) {
				delete(c.until, k)
			}
		}
		if len(c.until) >= maxCachedLocks {
			return // all live: the database still refuses
		}
	}
	if until.After(c.until[key]) {
		c.until[key] = until
	}
}

// count counts one attempt against each limit before any hashing, in one
// transaction: concurrent attempts queue on the throttle rows, so no more
// than the free ones get through before the lock. A locked key refuses the
// attempt, with refuse's error, without counting it.
func (s *Service) count(ctx context.Context, refuse func(time.Duration) error, limits ...limit) error {
	now := s.clock()
	for _, k := range limits {
		if wait := s.locks.lockedFor(k.key, now); k.timeOnly && wait > 0 {
			s.holdRefusal(ctx, wait)
			return refuse(wait)
		}
	}
	var (
		locked time.Duration
		set    = map[string]time.Time{} // timeOnly locks seen or set, to remember
		kinds  []metrics.LockKind       // locks set, to count once committed
	)
	err := s.store.InTx(ctx, func(q db.Queries) error {
		clear(set)
		kinds = kinds[:0]
		for _, k := range limits {
			if k.key == "" {
				continue
			}
			row, err := q.BumpThrottle(ctx, k.key, now)
			if err != nil {
				return err
			}
			if wait := row.LockedUntil.Sub(now); wait > 0 {
				locked = max(locked, wait)
				if k.timeOnly {
					s.locks.remember(k.key, row.LockedUntil, now) // committed before this transaction
				}
				continue
			}
			if d := backoff(row.Failures, k.free); d > 0 {
				if err := q.LockThrottle(ctx, k.key, now.Add(d)); err != nil {
					return err
				}
				if err := s.auditLock(ctx, q, k.key, row.Failures, d); err != nil {
					return err
				}
				kinds = append(kinds, lockKind(k.key))
				if k.timeOnly {
					set[k.key] = now.Add(d)
				}
			}
		}
		if locked > 0 {
			return refuse(locked) // rolls the counting back
		}
		_, err := q.PruneThrottles(ctx, now.Add(-throttleKeep))
		return err
	})
	if err == nil {
		for k, until := range set {
			s.locks.remember(k, until, now)
		}
		for _, k := range kinds {
			s.metrics.Locked(k)
		}
	}
	if errors.As(err, new(*Error)) && locked > 0 && addrKey(ctx) != "" {
		s.holdRefusal(ctx, locked)
	}
	return err
}

// refusalHold is how long a throttled refusal keeps the caller's address's
// place in the password queue (at most until the lock ends). A
// refusal costs microseconds, so without the hold a flood from one address
// answered at once calls again at once: hundreds of busy requests that the
// Go scheduler serves as fairly as one legitimate login. Held, the flood's
// other calls sleep in the queue (not runnable) and come back busy after
// hashWait, about width/2 requests a second whatever the flood's width.
// Short, so that one client retrying in sequence still meets the lock it
// caused: a few refusals in a row must not outlast a 2 s lock.
const refusalHold = 200 * time.Millisecond

// holdRefusal sleeps for the hold, or less if the lock ends sooner or the
// call is cancelled. Tests that count refusals set s.refusalHold to 0.
func (s *Service) holdRefusal(ctx context.Context, wait time.Duration) {
	d := min(wait, s.refusalHold)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// attempt counts a password attempt against the account and the address.
// The attempt is counted as a failure until succeeded takes it back.
func (s *Service) attempt(ctx context.Context, account string) error {
	return s.count(ctx, errThrottled, limit{account, accountFreeFailures, false}, limit{addrKey(ctx), addrFreeFailures, true})
}

// Registering an organization hashes a new admin password that no account
// throttle covers, so registrations are counted per client address: the
// first registerFree in a row are free, each one after waits for a backoff
// that doubles (2 s, 4 s, ... up to 15 min). Registrations are never
// forgiven; the count is forgotten a day after the address's last one.
const registerFree = 10

func registerKey(addr string) string { return "register:" + addr }

// errTooManyRegistrations says when to retry a registration.
func errTooManyRegistrations(wait time.Duration) error {
	return errorf(KindThrottled, "too many organizations registered from your address: retry in %d s", int64(math.Ceil(wait.Seconds())))
}

// registration counts an organization's registration against the caller's
// address before its admin password is hashed.
func (s *Service) registration(ctx context.Context) error {
	addr := addrKey(ctx)
	if addr == "" {
		return nil
	}
	return s.count(ctx, errTooManyRegistrations, limit{registerKey(addr), registerFree, true})
}

// succeeded forgets the account's failures and takes back the attempt
// counted against the address.
func (s *Service) succeeded(ctx context.Context, account string) error {
	return s.store.InTx(ctx, func(q db.Queries) error {
		if err := q.ClearThrottle(ctx, account); err != nil {
			return err
		}
		if addr := addrKey(ctx); addr != "" {
			return q.ForgiveThrottle(ctx, addr)
		}
		return nil
	})
}

// checkPassword verifies a password under the throttle: the attempt is
// counted first, nothing is hashed while the account or address is locked,
// and only a success takes the count back. The caller's address holds its
// one place in the password queue throughout (see passwordTurn).
func (s *Service) checkPassword(ctx context.Context, account, encoded, password string, exists bool) (bool, error) {
	ctx, release, err := s.passwordTurn(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	if err := s.attempt(ctx, account); err != nil {
		return false, err
	}
	ok, err := s.hash.Verify(ctx, encoded, password)
	if err != nil {
		return false, err
	}
	if !ok || !exists {
		return false, nil
	}
	if err := s.succeeded(ctx, account); err != nil {
		return false, fmt.Errorf("record successful attempt: %w", err)
	}
	return true, nil
}
