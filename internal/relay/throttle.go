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

// limit is one throttle key and how many counts it takes before backoff.
type limit struct {
	key  string
	free int64
}

// count counts one attempt against each limit before any hashing, in one
// transaction: concurrent attempts queue on the throttle rows, so no more
// than the free ones get through before the lock. A locked key refuses the
// attempt, with refuse's error, without counting it.
func (s *Service) count(ctx context.Context, refuse func(time.Duration) error, limits ...limit) error {
	now := s.clock()
	var locked time.Duration
	return s.store.InTx(ctx, func(q db.Queries) error {
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
				continue
			}
			if d := backoff(row.Failures, k.free); d > 0 {
				if err := q.LockThrottle(ctx, k.key, now.Add(d)); err != nil {
					return err
				}
			}
		}
		if locked > 0 {
			return refuse(locked) // rolls the counting back
		}
		_, err := q.PruneThrottles(ctx, now.Add(-throttleKeep))
		return err
	})
}

// attempt counts a password attempt against the account and the address.
// The attempt is counted as a failure until succeeded takes it back.
func (s *Service) attempt(ctx context.Context, account string) error {
	return s.count(ctx, errThrottled, limit{account, accountFreeFailures}, limit{addrKey(ctx), addrFreeFailures})
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
	return s.count(ctx, errTooManyRegistrations, limit{registerKey(addr), registerFree})
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
