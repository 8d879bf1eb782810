package main

// ctalk login / logout, and the files the local commands keep in the user's
// config directory: the token (credentials.json, readable only by its owner)
// and each consumer's cursor.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/term"
)

// credentials is what `ctalk login` stores: one login at a time.
type credentials struct {
	Relay     string    `json:"relay"`
	Token     string    `json:"token"`
	Org       string    `json:"org"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
}

const credentialsFile = "credentials.json"

// configDir is ctalk's directory in the user's config directory, as
// os.UserConfigDir finds it, but from getenv so tests stay hermetic.
func configDir(getenv func(string) string) (string, error) {
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

// relayURL checks and normalises a relay's MCP URL: https (plain http only
// to this machine, since the token travels in every request), /mcp when no
// path is given.
func relayURL(raw string) (string, error) {
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

// loadCredentials reads the stored login. relay, if not empty, must be the
// relay it was made for.
func loadCredentials(dir, relay string) (credentials, error) {
	b, err := os.ReadFile(filepath.Join(dir, credentialsFile))
	if errors.Is(err, os.ErrNotExist) {
		return credentials{}, fmt.Errorf("not logged in: run ctalk login --relay %s --org ORG --user USER", orPlaceholder(relay))
	} else if err != nil {
		return credentials{}, fmt.Errorf("read your ctalk login: %w", err)
	}
	var c credentials
	if err := json.Unmarshal(b, &c); err != nil || c.Token == "" || c.Relay == "" {
		return credentials{}, fmt.Errorf("%s is damaged: run ctalk login again", filepath.Join(dir, credentialsFile))
	}
	if relay != "" && relay != c.Relay {
		return credentials{}, fmt.Errorf("you are logged in to %s, not %s: run ctalk login --relay %s --org ORG --user USER", c.Relay, relay, relay)
	}
	if !c.ExpiresAt.IsZero() && time.Now().After(c.ExpiresAt) {
		return credentials{}, fmt.Errorf("your ctalk login expired on %s: run ctalk login --relay %s --org %s --user %s",
			c.ExpiresAt.Format(time.DateOnly), c.Relay, c.Org, c.User)
	}
	return c, nil
}

func orPlaceholder(relay string) string {
	if relay == "" {
		return "URL"
	}
	return relay
}

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

// cursorFile keeps one consumer's place in the caller's events, so a restart
// neither repeats nor skips any. It names the login it belongs to: a cursor
// of another user or relay is ignored.
type cursorFile struct {
	dir, name string
	owner     credentials
}

type storedCursor struct {
	Relay  string `json:"relay"`
	Org    string `json:"org"`
	User   string `json:"user"`
	Cursor string `json:"cursor"`
}

func newCursorFile(dir, consumer string, c credentials) cursorFile {
	return cursorFile{dir: dir, name: consumer + "-cursor.json", owner: c}
}

// load returns the stored cursor, or "" when there is none for this login.
func (f cursorFile) load() string {
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

func (f cursorFile) save(cursor string) error {
	return writePrivate(f.dir, f.name, storedCursor{Relay: f.owner.Relay, Org: f.owner.Org, User: f.owner.User, Cursor: cursor})
}

// login runs `ctalk login --relay URL --org ORG --user USER`.
func login(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ctalk login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	relay := fs.String("relay", "", "the relay's MCP URL, e.g. https://ctalk.example.com/mcp")
	org := fs.String("org", "", "your organization's id")
	user := fs.String("user", "", "your user id")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *org == "" || *user == "" || fs.NArg() > 0 {
		return errors.New("usage: ctalk login --relay URL --org ORG --user USER (the password is asked for)")
	}
	endpoint, err := relayURL(*relay)
	if err != nil {
		return err
	}
	dir, err := configDir(getenv)
	if err != nil {
		return err
	}
	password, err := readPassword(stdin, stderr, fmt.Sprintf("Password for %s in %s at %s: ", *user, *org, endpoint))
	if err != nil {
		return err
	}

	c, err := connectRelay(ctx, endpoint, func() string { return "" })
	if err != nil {
		return err
	}
	defer c.Close()
	var res struct {
		AuthToken string    `json:"auth_token"`
		ExpiresAt time.Time `json:"expires_at"`
		OrgID     string    `json:"org_id"`
		UserID    string    `json:"user_id"`
		Name      string    `json:"name"`
	}
	if err := callRelay(ctx, c, "login", map[string]any{"org_id": *org, "user_id": *user, "password": password}, &res); err != nil {
		return err
	}
	cred := credentials{Relay: endpoint, Token: res.AuthToken, Org: res.OrgID, User: res.UserID, ExpiresAt: res.ExpiresAt}
	if err := writePrivate(dir, credentialsFile, cred); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Logged in to %s as %s (%s) in %s until %s.\nYour token is in %s, readable only by you.\n",
		endpoint, res.Name, res.UserID, res.OrgID, res.ExpiresAt.Local().Format(time.DateOnly), filepath.Join(dir, credentialsFile))
	return nil
}

// logout runs `ctalk logout`: it revokes the stored token at the relay and
// deletes it.
func logout(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ctalk logout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	relay := fs.String("relay", "", "the relay's MCP URL (default: the one you logged in to)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	dir, err := configDir(getenv)
	if err != nil {
		return err
	}
	endpoint := ""
	if *relay != "" {
		if endpoint, err = relayURL(*relay); err != nil {
			return err
		}
	}
	cred, err := loadCredentials(dir, endpoint)
	if err != nil {
		return err
	}
	c, err := connectRelay(ctx, cred.Relay, func() string { return cred.Token })
	if err == nil {
		err = callRelay(ctx, c, "logout", map[string]any{}, nil)
		c.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ctalk: could not revoke the token at %s (%v); deleting it here anyway\n", cred.Relay, err)
	}
	if err := os.Remove(filepath.Join(dir, credentialsFile)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Logged out of %s.\n", cred.Relay)
	return nil
}

// readPassword asks for a password without echo on a terminal; otherwise
// (a pipe, a test) it reads one line.
func readPassword(stdin io.Reader, stderr io.Writer, prompt string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		return "", errors.New("no password on standard input")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// callRelay calls a relay tool and decodes its structured result into out
// (if not nil). A tool error comes back as an error with the relay's text.
func callRelay(ctx context.Context, c relayClient, tool string, args map[string]any, out any) error {
	var req mcpgo.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return &toolError{tool: tool, msg: resultText(res)}
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: unexpected result from the relay: %w", tool, err)
	}
	return nil
}

// toolError is a failure the relay reported as a tool result: the request
// arrived, so trying again unchanged will not help.
type toolError struct{ tool, msg string }

func (e *toolError) Error() string { return fmt.Sprintf("the relay refused %s: %s", e.tool, e.msg) }

func resultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
