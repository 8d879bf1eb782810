package cli

// S12 of docs/security.md: `ctalk login` reads the password without echo on
// a terminal, or from stdin with --password-stdin. The terminal is a pty
// made by util-linux `script`, so no new dependency is needed.

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// onPty runs bin with args on a new pty through `script`; the returned
// writer types on that terminal.
func onPty(t *testing.T, env []string, bin string, args ...string) (cmd *exec.Cmd, typing io.WriteCloser, out *testkit.SyncBuffer) {
	t.Helper()
	line := bin
	for _, a := range args {
		line += " '" + a + "'"
	}
	cmd = exec.CommandContext(t.Context(), "script", "-q", "-e", "-c", line, "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	out = &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	typing, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, typing, out
}

// childTTY is the terminal device of the command `script` started.
func childTTY(t *testing.T, scriptPID int) string {
	t.Helper()
	for range 1000 {
		kids, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(scriptPID), "task", strconv.Itoa(scriptPID), "children"))
		if f := strings.Fields(string(kids)); len(f) > 0 {
			if tty, err := os.Readlink(filepath.Join("/proc", f[0], "fd", "0")); err == nil && strings.HasPrefix(tty, "/dev/pts/") {
				return tty
			}
		}
		time.Sleep(5 * time.Millisecond) // until script has started the command
	}
	t.Fatal("script started no command on a pty")
	return ""
}

// TestClaimLoginPasswordNoEcho (S12): on a terminal `ctalk login` turns the
// terminal's echo off before reading the password, so what the user types
// never appears on the terminal, and logs in; with --password-stdin it
// reads the first line of stdin even on a terminal, without prompting.
func TestClaimLoginPasswordNoEcho(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("util-linux script is not installed: no pty to test on")
	}
	if _, err := exec.LookPath("stty"); err != nil {
		t.Skip("stty is not installed: cannot see the terminal's echo setting")
	}
	bin := testkit.BuildCtalk(t, "")
	const adminPW, userPW = "admin-pw-for-the-pty-0123", "user-pw-typed-on-the-pty-0123"
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		_, env := testkit.Home(t)
		for _, c := range [][]string{
			{adminPW + "\n", "admin", "register-org", "--relay", endpoint, "--org", "acme", "--name", "Acme"},
			{adminPW + "\n" + userPW + "\n", "admin", "register-user", "--relay", endpoint, "--org", "acme", "--user", "ana", "--name", "Ana"},
		} {
			if code, stdout, stderr := runInProcess(t.Context(), env, c[0], c[1:]...); code != 0 {
				t.Fatalf("ctalk %v = exit %d\n%s%s", c[1:], code, stdout, stderr)
			}
		}

		cmd, typing, out := onPty(t, env, bin, "login", "--relay", endpoint, "--org", "acme", "--user", "ana")
		tty := childTTY(t, cmd.Process.Pid)
		echoOff := false
		for range 1000 {
			st, err := exec.Command("stty", "-F", tty, "-a").Output()
			if err == nil && strings.Contains(" "+strings.Join(strings.Fields(string(st)), " ")+" ", " -echo ") {
				echoOff = true
				break
			}
			time.Sleep(5 * time.Millisecond) // until login reads the password
		}
		if !echoOff {
			t.Errorf("ctalk login on a terminal never turned echo off on %s", tty)
		}
		io.WriteString(typing, userPW+"\r") //nolint:errcheck // the exit status says
		err := cmd.Wait()
		typing.Close()
		text := out.String()
		if err != nil || !strings.Contains(text, "Logged in to") || !strings.Contains(text, "Password for ana") {
			t.Errorf("ctalk login on a terminal = %v, output %q; want a prompt and a login", err, text)
		}
		if strings.Contains(text, userPW) {
			t.Errorf("the password typed at ctalk login's prompt was echoed on the terminal: %q", text)
		}

		// --password-stdin: the first line is the password, even on a terminal.
		cmd, typing, out = onPty(t, env, bin, "login", "--relay", endpoint, "--org", "acme", "--user", "ana", "--password-stdin")
		io.WriteString(typing, userPW+"\n") //nolint:errcheck // the exit status says
		err = cmd.Wait()
		typing.Close()
		if text := out.String(); err != nil || !strings.Contains(text, "Logged in to") || strings.Contains(text, "Password for") {
			t.Errorf("ctalk login --password-stdin on a terminal = %v, output %q; want a login without a prompt", err, text)
		}
	})
}
