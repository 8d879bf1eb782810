package relay

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ctalk/ctalk/db"
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

// attempt counts a password attempt against the account and the address
// before any hashing, in one transaction: concurrent guesses queue on the
// throttle rows, so no more than the free failures get through before the
// lock. A locked key refuses the attempt without counting it. The attempt
// is counted as a failure until succeeded takes it back.
func (s *Service) attempt(ctx context.Context, account string) error {
	now := s.clock()
	addr := addrKey(ctx)
	var locked time.Duration
	err := s.store.InTx(ctx, func(q db.Queries) error {
		for _, k := range []struct {
			key  string
			free int64
		}{{account, accountFreeFailures}, {addr, addrFreeFailures}} {
			if k.key == "" {
				continue
			}
			row, err := q.BumpThrottle(ctx, k.key, now)
			if err != nil {
				return err
			}
			if wait := row.LockedUntil.Sub(now); wait > 0 {
				locked = max(locked, wait)
				continue
			}
			if d := backoff(row.Failures, k.free); d > 0 {
				if err := q.LockThrottle(ctx, k.key, now.Add(d)); err != nil {
					return err
				}
			}
		}
		if locked > 0 {
			return errThrottled(locked) // rolls the counting back
		}
		_, err := q.PruneThrottles(ctx, now.Add(-throttleKeep))
		return err
	})
	return err
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
// and only a success takes the count back.
func (s *Service) checkPassword(ctx context.Context, account, encoded, password string, exists bool) (bool, error) {
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
