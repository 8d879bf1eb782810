package mcp

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

// throttled returns an error saying when to retry if either key is locked.
func (t *tools) throttled(ctx context.Context, account string) error {
	var rows []db.Throttle
	err := t.store.View(ctx, func(q db.Queries) (err error) {
		rows, err = q.GetThrottles(ctx, account, addrKey(ctx))
		return err
	})
	if err != nil {
		return err
	}
	now := t.clock()
	var wait time.Duration
	for _, r := range rows {
		wait = max(wait, r.LockedUntil.Sub(now))
	}
	if wait > 0 {
		return badInput("too many failed password attempts: retry in %d s", int64(math.Ceil(wait.Seconds())))
	}
	return nil
}

// recordFailure counts a failed attempt against the account and the address.
func (t *tools) recordFailure(ctx context.Context, account string) error {
	now := t.clock()
	addr := addrKey(ctx)
	return t.store.InTx(ctx, func(q db.Queries) error {
		rows, err := q.GetThrottles(ctx, account, addr)
		if err != nil {
			return err
		}
		failures := map[string]int64{}
		for _, r := range rows {
			failures[r.Key] = r.Failures
		}
		for key, free := range map[string]int64{account: accountFreeFailures, addr: addrFreeFailures} {
			if key == "" {
				continue
			}
			n := failures[key] + 1
			if err := q.PutThrottle(ctx, db.Throttle{Key: key, Failures: n, LockedUntil: now.Add(backoff(n, free)), UpdatedAt: now}); err != nil {
				return err
			}
		}
		_, err = q.PruneThrottles(ctx, now.Add(-throttleKeep))
		return err
	})
}

// recordSuccess forgets an account's failures.
func (t *tools) recordSuccess(ctx context.Context, account string) error {
	return t.store.InTx(ctx, func(q db.Queries) error { return q.ClearThrottle(ctx, account) })
}

// checkPassword verifies a password under the throttle: no hashing while the
// account or address is locked, and every failure counted.
func (t *tools) checkPassword(ctx context.Context, account, encoded, password string, exists bool) (bool, error) {
	if err := t.throttled(ctx, account); err != nil {
		return false, err
	}
	ok, err := t.hash.Verify(ctx, encoded, password)
	if err != nil {
		return false, err
	}
	if ok && exists {
		return true, t.recordSuccess(ctx, account)
	}
	if err := t.recordFailure(ctx, account); err != nil {
		return false, fmt.Errorf("record failed attempt: %w", err)
	}
	return false, nil
}
