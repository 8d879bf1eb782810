package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
)

// TestDatabaseCommands: ctalk export writes one organization and nothing
// of another; ctalk backup copies SQLite and, on PostgreSQL, says what to
// use instead; ctalk migrate status lists the migrations applied.
func TestDatabaseCommands(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		ctx := t.Context()
		store := dbtest.Open(t, cfg)
		rules := relay.New(store, relay.Options{HashConcurrency: 2})
		for _, org := range []string{"acme", "rival"} {
			if _, err := rules.RegisterOrganization(ctx, relay.NewOrganization{OrgID: org, Name: org, AdminPassword: "admin-password-" + org}); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"umar", org + "-john"} {
				if _, err := rules.RegisterUser(ctx, relay.Admin{OrgID: org, Password: "admin-password-" + org},
					relay.NewUser{UserID: u, Name: u, Password: "user-password-1234", Ownership: org + "-repo"}); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := rules.Login(ctx, org, "umar", "user-password-1234")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rules.Ask(ctx, relay.Credentials{Token: tok.AuthToken}, org+"-john", "Question of "+org+"?"); err != nil {
				t.Fatal(err)
			}
		}
		d := Database{Config: func(func(string) string) (db.Config, error) { return cfg, nil }}
		run := func(args ...string) (int, string, string) {
			var out, errb bytes.Buffer
			c, rest := Find(DatabaseCommands(d), args)
			code := c.Run(context.Background(), &IO{Getenv: func(string) string { return "" }, Stdin: strings.NewReader(""),
				Stdout: &out, Stderr: &errb}, rest)
			return code, out.String(), errb.String()
		}

		code, out, errOut := run("export", "--org", "acme")
		if code != 0 || !strings.Contains(out, `"question":"Question of acme?"`) || strings.Contains(out, "rival") ||
			strings.Contains(out, "argon2") || strings.Count(out, "\n") != 4 {
			t.Errorf("export --org acme = %d, %q, %q; want 4 lines of acme only, no hashes", code, out, errOut)
		}
		file := filepath.Join(t.TempDir(), "acme.jsonl")
		if code, _, errOut := run("export", "--org", "acme", "--out", file); code != 0 {
			t.Errorf("export --out = %d, %q", code, errOut)
		} else if b, _ := os.ReadFile(file); string(b) != out {
			t.Errorf("export --out wrote %q; want the same lines as standard output", b)
		}
		if code, _, errOut := run("export", "--org", "acme", "--out", file); code != 1 || !strings.Contains(errOut, "already exists") {
			t.Errorf("export onto an existing file = %d, %q; want refused", code, errOut)
		}
		if code, _, errOut := run("export", "--org", "nobody"); code != 1 || !strings.Contains(errOut, `no organization "nobody"`) {
			t.Errorf("export --org nobody = %d, %q; want exit 1 naming it", code, errOut)
		}
		if code, _, _ := run("export"); code != ExitUsage {
			t.Errorf("export without --org = %d; want usage", code)
		}

		backup := filepath.Join(t.TempDir(), "copy.sqlite3")
		code, out, errOut = run("backup", backup)
		if cfg.DatabaseURL != "" {
			if code != 1 || !strings.Contains(errOut, "pg_dump") {
				t.Errorf("backup on PostgreSQL = %d, %q; want exit 1 naming pg_dump", code, errOut)
			}
		} else if _, err := os.Stat(backup); code != 0 || err != nil || !strings.Contains(out, "backed up to") {
			t.Errorf("backup = %d, %q, %q, stat %v; want the copy written", code, out, errOut, err)
		}

		if code, out, _ := run("migrate", "status"); code != 0 || !strings.Contains(out, "00008_retention.sql") || strings.Contains(out, "pending") {
			t.Errorf("migrate status = %d, %q; want every migration applied", code, out)
		}
	})
}
