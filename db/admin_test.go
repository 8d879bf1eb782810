package db_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
)

// TestAdminQueries: the admin role round-trips and is scoped to its
// organization; the audit log records only for an existing organization,
// lists newest first and pages; the organization-wide token and grant
// lists show one organization's live rows only.
func TestAdminQueries(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "al"}, []string{"bob"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		since := t0.Add(time.Minute)
		mustTx(t, s, func(q db.Queries) error {
			if err := q.SetUserAdmin(ctx, "a", "amy", &since); err != nil {
				return err
			}
			wantErr(t, "SetUserAdmin(another org's user)", q.SetUserAdmin(ctx, "a", "bob", &since), db.ErrNotFound)
			wantErr(t, "UpdateAdminPassword(missing org)", q.UpdateAdminPassword(ctx, "zzz", "h"), db.ErrNotFound)
			return q.UpdateAdminPassword(ctx, "b", "new-admin-hash")
		})
		view(t, s, func(q db.Queries) error {
			amy, err := q.GetUser(ctx, "a", "amy")
			if err != nil || amy.AdminSince == nil || !amy.AdminSince.Equal(since) {
				t.Errorf("GetUser(amy).AdminSince = %v, %v; want %v", amy.AdminSince, err, since)
			}
			if bob, _ := q.GetUser(ctx, "b", "bob"); bob.AdminSince != nil {
				t.Errorf("bob is an admin: %v", bob.AdminSince)
			}
			if org, _ := q.GetOrganization(ctx, "b"); org.AdminPasswordHash != "new-admin-hash" {
				t.Errorf("organization b's admin password hash = %q", org.AdminPasswordHash)
			}
			if org, _ := q.GetOrganization(ctx, "a"); org.AdminPasswordHash != "admin-hash-a" {
				t.Errorf("organization a's admin password hash changed: %q", org.AdminPasswordHash)
			}
			return nil
		})
		mustTx(t, s, func(q db.Queries) error { return q.SetUserAdmin(ctx, "a", "amy", nil) })
		view(t, s, func(q db.Queries) error {
			if amy, _ := q.GetUser(ctx, "a", "amy"); amy.AdminSince != nil {
				t.Errorf("amy's role was taken back, AdminSince = %v", amy.AdminSince)
			}
			return nil
		})

		entry := func(org, action string, i int) db.AuditEntry {
			return db.AuditEntry{OrgID: org, At: t0.Add(time.Duration(i) * time.Second), ActorUserID: "amy", Action: action,
				TargetUserID: "al", Address: "198.51.100.1", Detail: "d"}
		}
		mustTx(t, s, func(q db.Queries) error {
			for i := range 5 {
				if err := q.AddAudit(ctx, entry("a", "signin", i)); err != nil {
					return err
				}
			}
			if err := q.AddAudit(ctx, entry("b", "user.register", 9)); err != nil {
				return err
			}
			return q.AddAudit(ctx, entry("nope", "signin.locked", 10)) // no such organization: nothing
		})
		view(t, s, func(q db.Queries) error {
			all, err := q.ListAudit(ctx, "a", 1<<62, 10)
			if err != nil || len(all) != 5 {
				t.Fatalf("ListAudit(a) = %d entries, %v; want 5", len(all), err)
			}
			for i, e := range all {
				want := entry("a", "signin", 4-i)
				want.ID = e.ID
				if diff := cmp.Diff(want, e); diff != "" {
					t.Errorf("ListAudit(a)[%d] mismatch (-want +got):\n%s", i, diff)
				}
				if i > 0 && e.ID >= all[i-1].ID {
					t.Errorf("ListAudit(a) not newest first: %d after %d", e.ID, all[i-1].ID)
				}
			}
			older, _ := q.ListAudit(ctx, "a", all[1].ID, 2)
			if len(older) != 2 || older[0].ID != all[2].ID || older[1].ID != all[3].ID {
				t.Errorf("ListAudit(a, before %d, 2) = %+v; want entries %d and %d", all[1].ID, older, all[2].ID, all[3].ID)
			}
			if b, _ := q.ListAudit(ctx, "b", 1<<62, 10); len(b) != 1 || b[0].Action != "user.register" {
				t.Errorf("ListAudit(b) = %+v; want b's one entry", b)
			}
			if n, _ := q.ListAudit(ctx, "nope", 1<<62, 10); len(n) != 0 {
				t.Errorf("ListAudit(nope) = %+v; want nothing recorded for a missing organization", n)
			}
			return nil
		})

		now := t0.Add(time.Hour)
		live := db.Token{TokenHash: []byte("amy-live"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: now.Add(time.Hour)}
		alLive := db.Token{TokenHash: []byte("al-live"), OrgID: "a", UserID: "al", CreatedAt: t0.Add(time.Second), ExpiresAt: now.Add(time.Hour)}
		expired := db.Token{TokenHash: []byte("amy-old"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: now}
		bobs := db.Token{TokenHash: []byte("bob-live"), OrgID: "b", UserID: "bob", CreatedAt: t0, ExpiresAt: now.Add(time.Hour)}
		gA, gB := newGrant("a", "al", "ga", t0), newGrant("b", "bob", "gb", t0)
		create(t, s, live, alLive, expired, bobs, gA, gB, newRefresh("ra", "ga"), newRefresh("rb", "gb"), accessToken("at-a", gA))
		view(t, s, func(q db.Queries) error {
			toks, err := q.ListOrgTokens(ctx, "a", now, 10)
			if err != nil || len(toks) != 2 || string(toks[0].TokenHash) != "al-live" || string(toks[1].TokenHash) != "amy-live" {
				t.Errorf("ListOrgTokens(a) = %+v, %v; want al's and amy's live login tokens, newest first", toks, err)
			}
			if one, _ := q.ListOrgTokens(ctx, "a", now, 1); len(one) != 1 {
				t.Errorf("ListOrgTokens(a, limit 1) = %d rows", len(one))
			}
			grants, err := q.ListOrgGrants(ctx, "a")
			if err != nil || len(grants) != 1 || grants[0].ID != "ga" {
				t.Errorf("ListOrgGrants(a) = %+v, %v; want ga only", grants, err)
			}
			refs, err := q.ListOrgGrantRefreshes(ctx, "a", t0)
			if err != nil || len(refs) != 1 || refs[0].GrantID != "ga" {
				t.Errorf("ListOrgGrantRefreshes(a) = %+v, %v; want ga's one", refs, err)
			}
			return nil
		})
	})
}

// TestAdminMigrationDown: rolling 00006 back drops the admin role and the
// audit log and keeps everyone's account; migrating up again starts both
// empty.
func TestAdminMigrationDown(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		ctx := t.Context()
		s := openStore(t, cfg)
		seedOrg(t, s, "a", "amy")
		mustTx(t, s, func(q db.Queries) error {
			if err := q.SetUserAdmin(ctx, "a", "amy", &t0); err != nil {
				return err
			}
			return q.AddAudit(ctx, db.AuditEntry{OrgID: "a", At: t0, Action: "signin", TargetUserID: "amy", Address: "x"})
		})
		m, err := db.OpenMigrator(ctx, cfg)
		if err != nil {
			t.Fatalf("OpenMigrator() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		done, err := m.DownTo(ctx, 5) // the newer migrations first, then 6
		if err != nil || len(done) == 0 || done[len(done)-1] != 6 {
			t.Fatalf("DownTo(5) = %v, %v; want version 6 rolled back last", done, err)
		}
		if n, err := m.Up(ctx); err != nil || n != len(done) {
			t.Fatalf("Up() = %d, %v; want %d, nil", n, err, len(done))
		}
		view(t, s, func(q db.Queries) error {
			amy, err := q.GetUser(ctx, "a", "amy")
			if err != nil || amy.AdminSince != nil || amy.PasswordHash != "hash-amy" {
				t.Errorf("GetUser(amy) after down and up = %+v, %v; want her account without the role", amy, err)
			}
			if log, _ := q.ListAudit(ctx, "a", 1<<62, 10); len(log) != 0 {
				t.Errorf("audit log after down and up = %+v; want empty", log)
			}
			return nil
		})
	})
}

// TestPruneTokens deletes the tokens that expired before the cutoff, live,
// revoked or issued to an OAuth client alike, and keeps the others.
func TestPruneTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		cutoff := t0.Add(24 * time.Hour)
		tok := func(hash string, exp time.Time) db.Token {
			return db.Token{TokenHash: []byte(hash), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: exp}
		}
		g := newGrant("a", "amy", "g", t0)
		access := accessToken("access-expired", g) // expires t0+1h
		create(t, s, g, access, tok("expired", cutoff.Add(-time.Second)), tok("at-cutoff", cutoff), tok("live", cutoff.Add(time.Hour)),
			tok("revoked-live", cutoff.Add(time.Hour)))
		mustTx(t, s, func(q db.Queries) error { return q.RevokeToken(ctx, []byte("revoked-live"), t0) })
		var n int64
		mustTx(t, s, func(q db.Queries) (err error) {
			n, err = q.PruneTokens(ctx, cutoff)
			return err
		})
		if n != 2 {
			t.Errorf("PruneTokens(cutoff) = %d, want 2 (expired, access-expired)", n)
		}
		view(t, s, func(q db.Queries) error {
			for hash, want := range map[string]bool{"expired": false, "access-expired": false, "at-cutoff": true, "live": true, "revoked-live": true} {
				_, err := q.GetToken(ctx, []byte(hash))
				if got := err == nil; got != want {
					t.Errorf("after PruneTokens: token %s kept = %v (%v), want %v", hash, got, err, want)
				}
			}
			return nil
		})
	})
}
