// Package credentials keeps what the local ctalk commands store in the
// user's config directory: the login token (credentials.json, readable only
// by its owner) and each consumer's cursor. `ctalk login` writes it; the
// bridge, `ctalk wait`, `ctalk logout` and `ctalk admin` read it.
package credentials

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Credentials is what `ctalk login` stores: one login at a time.
type Credentials struct {
	Relay     string    `json:"relay"`
	Token     string    `json:"token"`
	Org       string    `json:"org"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
	// LoggedInAt is when the token was issued; `ctalk wait` reports no
	// answer older than it on its first run. Zero in files of older versions.
	LoggedInAt time.Time `json:"logged_in_at,omitzero"`
}

// File is the name of the credentials file in the config directory.
const File = "credentials.json"

// LoginCommand is the terminal command that renews this login.
func (c Credentials) LoginCommand() string {
	return LoginCommand(c.Relay, c.Org, c.User)
}

// LoginCommand is the terminal command that logs in; empty parts become
// placeholders.
func LoginCommand(relay, org, user string) string {
	return fmt.Sprintf("ctalk login --relay %s --org %s --user %s", or(relay, "URL"), or(org, "ORG"), or(user, "USER"))
}

func or(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// Dir is ctalk's directory in the user's config directory, as
// os.UserConfigDir finds it, but from getenv so tests stay hermetic.
func Dir(getenv func(string) string) (string, error) {
	var base string
	switch runtime.GOOS {
	case "windows":
		base = getenv("AppData")
	case "darwin", "ios":
		if home := getenv("HOME"); home != "" {
			base = filepath.Join(home, "Library", "Application Support")
		}
	default:
		base = getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(base) {
			base = ""
			if home := getenv("HOME"); home != "" {
				base = filepath.Join(home, ".config")
			}
		}
	}
	if base == "" {
		return "", errors.New("cannot find your config directory: set HOME (or XDG_CONFIG_HOME)")
	}
	return filepath.Join(base, "ctalk"), nil
}

// RelayURL checks and normalises a relay's MCP URL: https (plain http only
// to this machine, since the token travels in every request), /mcp when no
// path is given.
func RelayURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("--relay is required: the relay's MCP URL, e.g. https://ctalk.example.com/mcp")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("--relay %q is not a URL: use the relay's MCP URL, e.g. https://ctalk.example.com/mcp", raw)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return "", fmt.Errorf("--relay %q uses http: use https, or your token would cross the network unencrypted", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String(), nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Load reads the stored login. relay, if not empty, must be the relay it
// was made for. Every error names the command that fixes it.
func Load(dir, relay string) (Credentials, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return Credentials{}, fmt.Errorf("not logged in: run %s", LoginCommand(relay, "", ""))
	} else if err != nil {
		return Credentials{}, fmt.Errorf("read your ctalk login: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil || c.Token == "" || c.Relay == "" {
		return Credentials{}, fmt.Errorf("%s is damaged: run %s", filepath.Join(dir, File), LoginCommand(relay, "", ""))
	}
	if relay != "" && relay != c.Relay {
		return Credentials{}, fmt.Errorf("you are logged in to %s, not %s: run %s", c.Relay, relay, LoginCommand(relay, "", ""))
	}
	if !c.ExpiresAt.IsZero() && time.Now().After(c.ExpiresAt) {
		return Credentials{}, fmt.Errorf("your ctalk login expired on %s: run %s", c.ExpiresAt.Format(time.DateOnly), c.LoginCommand())
	}
	return c, nil
}

// Save stores a login, readable only by its owner.
func Save(dir string, c Credentials) error { return writePrivate(dir, File, c) }

// Remove deletes the stored login.
func Remove(dir string) error { return os.Remove(filepath.Join(dir, File)) }

// writePrivate writes a file readable only by its owner, atomically, in a
// directory only its owner can enter.
func writePrivate(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restrict %s to you: %w", dir, err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("write in %s: %w", dir, err)
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, name))
}

// Cursor keeps one consumer's place in the caller's events, so a restart
// neither repeats nor skips any. It names the login it belongs to: a cursor
// of another user or relay is ignored.
type Cursor struct {
	dir, name string
	owner     Credentials
}

type storedCursor struct {
	Relay  string `json:"relay"`
	Org    string `json:"org"`
	User   string `json:"user"`
	Cursor string `json:"cursor"`
}

// NewCursor is the cursor file of consumer ("channel", "wait") for login c.
func NewCursor(dir, consumer string, c Credentials) Cursor {
	return Cursor{dir: dir, name: consumer + "-cursor.json", owner: c}
}

// Load returns the stored cursor, or "" when there is none for this login.
func (f Cursor) Load() string {
	b, err := os.ReadFile(filepath.Join(f.dir, f.name))
	if err != nil {
		return ""
	}
	var s storedCursor
	if json.Unmarshal(b, &s) != nil || s.Relay != f.owner.Relay || s.Org != f.owner.Org || s.User != f.owner.User {
		return ""
	}
	return s.Cursor
}

// Save stores cursor.
func (f Cursor) Save(cursor string) error {
	return writePrivate(f.dir, f.name, storedCursor{Relay: f.owner.Relay, Org: f.owner.Org, User: f.owner.User, Cursor: cursor})
}

// StoredRelay is the relay of the stored login, valid or not, or "".
func StoredRelay(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return ""
	}
	var c Credentials
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return c.Relay
}
