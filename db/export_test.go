package db

import (
	"context"
	"time"
)

// The package's tests list answers when they choose to (ListSearch); the
// lister itself is tested by starting it (StartListing).
func init() { searchListEvery = 0 }

// SearchSizes are the sizes a search decides its way by; see searchSizes.
type SearchSizes struct {
	Probe, PairMost, TailMost                 int // SQLite
	WalkFirst, WalkMost, GINCost, BucketsMost int // PostgreSQL
}

// WithSizes returns s deciding by z instead of the sizes measured at 1M.
func (s Search) WithSizes(z SearchSizes) Search {
	s.sizes = &searchSizes{probe: z.Probe, pairMost: z.PairMost, tailMost: z.TailMost,
		walkFirst: z.WalkFirst, walkMost: z.WalkMost, ginCost: z.GINCost, bucketsMost: z.BucketsMost}
	return s
}

// ListSearch lists at most most unlisted answers of each organization (all
// with most 0), in blocks of blockBytes, on a SQLite store; it does
// nothing on PostgreSQL.
func ListSearch(ctx context.Context, s Store, blockBytes, most int) error {
	if s, ok := s.(*sqliteStore); ok {
		return s.listSearch(ctx, 0, 3, blockBytes, most)
	}
	return nil
}

// StartListing starts a SQLite store's lister, looking every every.
func StartListing(s Store, every time.Duration) {
	if s, ok := s.(*sqliteStore); ok {
		ctx, cancel := context.WithCancel(context.Background())
		s.lister.stop = cancel
		s.lister.done.Go(func() { s.keepListing(ctx, every, nil) })
	}
}

// SearchListed returns how far an organization's answers are listed on a
// SQLite store (0 on PostgreSQL), and its newest answer's key.
func SearchListed(ctx context.Context, s Store, orgID string) (through, newest int64, err error) {
	if s, ok := s.(*sqliteStore); ok {
		err = s.View(ctx, func(q Queries) error {
			l, err := q.(sqliteQueries).q.SearchListed(ctx, orgID)
			through, newest = l.Through, l.Newest
			return err
		})
	}
	return through, newest, err
}
