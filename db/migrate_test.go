package db_test

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"github.com/ctalk/ctalk/db"
)

// appliedVersions returns the versions Status reports as applied, in order.
func appliedVersions(t *testing.T, m *db.Migrator) []int64 {
	t.Helper()
	statuses, err := m.Status(t.Context())
	if err != nil {
		t.Fatalf("Status() = %v", err)
	}
	applied := []int64{}
	for _, st := range statuses {
		if st.State == goose.StateApplied {
			applied = append(applied, st.Source.Version)
		}
	}
	return applied
}

func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		backend := "sqlite"
		if cfg.DatabaseURL != "" {
			backend = "postgres"
		}
		all := migrationVersions(t, backend)
		newest := all[len(all)-1]
		s := openStore(t, cfg)

		m, err := db.OpenMigrator(t.Context(), cfg)
		if err != nil {
			t.Fatalf("OpenMigrator() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		if diff := cmp.Diff(all, appliedVersions(t, m)); diff != "" {
			t.Errorf("applied after Open mismatch (-want +got):\n%s", diff)
		}

		res, err := m.Down(t.Context())
		if err != nil {
			t.Fatalf("Down() = %v", err)
		}
		if res.Source.Version != newest {
			t.Errorf("Down() rolled back version %d, want %d", res.Source.Version, newest)
		}
		if diff := cmp.Diff(all[:len(all)-1], appliedVersions(t, m)); diff != "" {
			t.Errorf("applied after Down mismatch (-want +got):\n%s", diff)
		}

		n, err := m.Up(t.Context())
		if err != nil || n != 1 {
			t.Fatalf("Up() = %d, %v; want 1, nil", n, err)
		}
		if diff := cmp.Diff(all, appliedVersions(t, m)); diff != "" {
			t.Errorf("applied after Up mismatch (-want +got):\n%s", diff)
		}
		if n, err := m.Up(t.Context()); err != nil || n != 0 {
			t.Errorf("Up() with nothing pending = %d, %v; want 0, nil", n, err)
		}

		// The schema Up rebuilt serves the store that was open all along.
		seedOrg(t, s, "a", "amy")
	})
}

// TestReopen restarts the server on an existing database: Open must find the
// schema already migrated and keep the data.
func TestReopen(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		first, err := db.Open(t.Context(), cfg)
		if err != nil {
			t.Fatalf("first db.Open() = %v", err)
		}
		seedOrg(t, first, "a", "amy")
		if err := first.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}

		s := openStore(t, cfg)
		view(t, s, func(q db.Queries) error {
			got, err := q.GetUser(t.Context(), "a", "amy")
			if err != nil {
				t.Fatalf("GetUser(a, amy) after reopening = %v", err)
			}
			if diff := cmp.Diff(newUser("a", "amy"), got); diff != "" {
				t.Errorf("GetUser(a, amy) after reopening mismatch (-want +got):\n%s", diff)
			}
			return nil
		})
	})
}

// TestConcurrentOpenPostgres boots three replicas against one empty schema at
// once: each must come up, and each migration must be applied exactly once.
func TestConcurrentOpenPostgres(t *testing.T) {
	t.Parallel()
	dbURL, schema := newPostgresSchema(t)

	const replicas = 3
	errs := make([]error, replicas)
	stores := make([]db.Store, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = db.Open(t.Context(), db.Config{DatabaseURL: dbURL})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: db.Open() = %v, want nil", i, err)
			continue
		}
		stores[i].Close()
	}

	rows, err := pgConn(t, dbURL).Query(t.Context(),
		"SELECT version_id, count(*) FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY version_id")
	if err != nil {
		t.Fatalf("query %s.goose_db_version: %v", schema, err)
	}
	got := map[int64]int64{}
	for rows.Next() {
		var version, n int64
		if err := rows.Scan(&version, &n); err != nil {
			t.Fatalf("scan goose_db_version: %v", err)
		}
		got[version] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	want := map[int64]int64{}
	for _, v := range migrationVersions(t, "postgres") {
		want[v] = 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("times each migration was applied by %d replicas mismatch (-want +got):\n%s", replicas, diff)
	}
}
