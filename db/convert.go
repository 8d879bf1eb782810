package db

// convertAll converts generated rows to domain values.
func convertAll[R, T any](rows []R, conv func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out
}

// first returns the only element of a zero-or-one-row result, or ErrNotFound.
func first[T any](rows []T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if len(rows) == 0 {
		return zero, ErrNotFound
	}
	return rows[0], nil
}

// oneRow turns an :execrows result into ErrNotFound when nothing matched,
// mapping driver errors with the backend's mapper:
//
//	return oneRow(q.Update(ctx, args))(pgError)
func oneRow(n int64, err error) func(mapErr func(error) error) error {
	return func(mapErr func(error) error) error {
		if err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	}
}

// nonNil returns b, or an empty slice for nil: SQL compares nothing equal to NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
