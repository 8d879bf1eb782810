package cli

import (
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestAdmin registers an organization and a user with `ctalk admin`, the
// passwords on stdin in the documented order, then logs in as that user;
// resets the password, deactivates and reactivates, checking each by a
// login. No password ever appears in the output.
func TestAdmin(t *testing.T) {
	t.Parallel()
	const (
		adminPW = "admin-pw-for-the-cli-0123"
		userPW  = "user-pw-for-the-cli-0123"
		newPW   = "new-pw-for-the-cli-0123"
	)
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		_, env := testkit.Home(t)
		run := func(want int, stdin string, args ...string) (stdout, stderr string) {
			t.Helper()
			code, stdout, stderr := runInProcess(t.Context(), env, stdin, args...)
			if code != want {
				t.Errorf("ctalk %s = exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout, stderr)
			}
			for _, pw := range []string{adminPW, userPW, newPW} {
				if strings.Contains(stdout+stderr, pw) {
					t.Errorf("ctalk %s printed a password: %s%s", strings.Join(args, " "), stdout, stderr)
				}
			}
			return stdout, stderr
		}
		login := func(want int, pw string) {
			t.Helper()
			run(want, pw+"\n", "login", "--relay", endpoint, "--org", "acme", "--user", "ana")
		}

		if _, stderr := run(1, adminPW+"\n", "admin", "register-org", "--org", "acme", "--name", "Acme"); !strings.Contains(stderr, "--relay") {
			t.Errorf("register-org without a relay or a login: stderr %q, want it to ask for --relay", stderr)
		}
		if out, _ := run(0, adminPW+"\n", "admin", "register-org", "--relay", endpoint, "--org", "acme", "--name", "Acme"); !strings.Contains(out, "acme") {
			t.Errorf("register-org stdout = %q, want the organization named", out)
		}
		out, _ := run(0, adminPW+"\n"+userPW+"\n", "admin", "register-user", "--relay", endpoint, "--org", "acme", "--user", "ana",
			"--name", "Ana", "--ownership", "billing", "--notes", "on call Mondays")
		if want := "ctalk login --relay " + endpoint + " --org acme --user ana"; !strings.Contains(out, want) {
			t.Errorf("register-user stdout = %q, want the login command %q", out, want)
		}
		login(0, userPW)

		// The stored login names the relay from now on.
		if _, stderr := run(1, "wrong-admin-password-0123\n"+newPW+"\n", "admin", "reset-password", "--org", "acme", "--user", "ana"); !strings.Contains(stderr, "admin password is wrong") {
			t.Errorf("reset-password with a wrong admin password: stderr %q, want the relay's refusal", stderr)
		}
		run(0, adminPW+"\n"+newPW+"\n", "admin", "reset-password", "--org", "acme", "--user", "ana")
		login(1, userPW)
		login(0, newPW)

		run(0, adminPW+"\n", "admin", "profile-notes", "--org", "acme", "--user", "ana", "--notes", "prefers email")
		run(0, adminPW+"\n", "admin", "deactivate", "--org", "acme", "--user", "ana")
		login(1, newPW)
		run(0, adminPW+"\n", "admin", "reactivate", "--org", "acme", "--user", "ana")
		login(0, newPW)

		run(2, "", "admin", "register-user", "--org", "acme", "--user", "bob") // no --name
		run(2, "", "admin", "profile-notes", "--org", "acme", "--user", "ana") // no --notes
		run(2, "", "admin", "sideways")
		run(1, "", "admin", "deactivate", "--org", "acme", "--user", "ana") // no password on stdin
	})
}
