package db

import (
	"context"
	"time"
)

// TokenUse is one use of a token to record (see Queries.TouchToken).
type TokenUse struct {
	Hash        []byte
	At          time.Time
	StaleBefore time.Time
}

// touchTokens records uses in one transaction of its own.
func touchTokens(ctx context.Context, s Store, uses []TokenUse) error {
	return s.InTx(ctx, func(q Queries) error {
		for _, u := range uses {
			if err := q.TouchToken(ctx, u.Hash, u.At, u.StaleBefore); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *postgresStore) TouchTokens(ctx context.Context, uses []TokenUse) error {
	return touchTokens(ctx, s, uses)
}

func (s *sqliteStore) TouchTokens(ctx context.Context, uses []TokenUse) error {
	return touchTokens(ctx, s, uses)
}
