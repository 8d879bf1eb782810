package db

// SearchSizes are the sizes a search decides its way by; see searchSizes.
type SearchSizes struct {
	Probe, PairMost              int // SQLite
	WalkFirst, WalkMost, GINCost int // PostgreSQL
}

// WithSizes returns s deciding by z instead of the sizes measured at 1M.
func (s Search) WithSizes(z SearchSizes) Search {
	s.sizes = &searchSizes{probe: z.Probe, pairMost: z.PairMost, walkFirst: z.WalkFirst, walkMost: z.WalkMost, ginCost: z.GINCost}
	return s
}
