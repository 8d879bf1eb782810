package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/relayclient"
)

// Commands are the commands of this package, in help order.
func Commands(version string) []*Command {
	return append([]*Command{loginCommand(version), logoutCommand(version), waitCommand(version)}, adminCommands(version)...)
}

func loginCommand(version string) *Command {
	return &Command{
		Name:    "login",
		Args:    "--relay URL --org ORG --user USER [--password-stdin]",
		Summary: "log in to a relay (asks for the password) and keep the token in your config directory, readable only by you",
		Details: `The password is asked for without echo on a terminal; when standard input is
not a terminal, or with --password-stdin, it is the first line of standard input.
The bridge (ctalk stdio --relay), ctalk wait and ctalk logout use the stored token.
`,
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			relay := fs.String("relay", "", "the relay's MCP URL, e.g. https://ctalk.example.com/mcp")
			org := fs.String("org", "", "your organization's id")
			user := fs.String("user", "", "your user id")
			stdin := fs.Bool("password-stdin", false, "read the password from standard input even on a terminal")
			return func(ctx context.Context, args []string) error {
				if *org == "" || *user == "" || len(args) > 0 {
					return UsageError("--relay, --org and --user are required, and nothing else (the password is asked for)")
				}
				return login(ctx, io, version, *relay, *org, *user, newPasswords(io, *stdin))
			}
		},
	}
}

func login(ctx context.Context, io *IO, version, relay, org, user string, pw *passwords) error {
	endpoint, err := credentials.RelayURL(relay)
	if err != nil {
		return err
	}
	dir, err := credentials.Dir(io.Getenv)
	if err != nil {
		return err
	}
	password, err := pw.read(fmt.Sprintf("Password for %s in %s at %s: ", user, org, endpoint), "password")
	if err != nil {
		return err
	}
	c, err := relayclient.Connect(ctx, endpoint, relayclient.Options{Name: "ctalk-login", Version: version})
	if err != nil {
		return err
	}
	res, err := c.Login(ctx, org, user, password)
	if err != nil {
		return err
	}
	cred := credentials.Credentials{Relay: endpoint, Token: res.AuthToken, Org: res.OrgID, User: res.UserID,
		ExpiresAt: res.ExpiresAt, LoggedInAt: time.Now().UTC()}
	if err := credentials.Save(dir, cred); err != nil {
		return err
	}
	fmt.Fprintf(io.Stdout, "Logged in to %s as %s (%s) in %s until %s.\nYour token is in %s, readable only by you.\n",
		endpoint, res.Name, res.UserID, res.OrgID, res.ExpiresAt.Local().Format(time.DateOnly), filepath.Join(dir, credentials.File))
	return nil
}

func logoutCommand(version string) *Command {
	return &Command{
		Name:    "logout",
		Args:    "[--relay URL]",
		Summary: "revoke the stored token at the relay and delete it",
		Details: "If the relay cannot be reached, the token is deleted here anyway (and says so).\n",
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			relay := fs.String("relay", "", "the relay's MCP URL (default: the one you logged in to)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return UsageError("unexpected argument %q", args[0])
				}
				return logout(ctx, io, version, *relay)
			}
		},
	}
}

func logout(ctx context.Context, io *IO, version, relay string) error {
	dir, cred, err := stored(io, relay)
	if err != nil {
		return err
	}
	c, err := relayclient.Connect(ctx, cred.Relay, relayclient.Options{Token: relayclient.Static(cred.Token), Name: "ctalk-logout", Version: version})
	if err == nil {
		err = c.Call(ctx, "logout", nil, nil)
	}
	if err != nil {
		fmt.Fprintf(io.Stderr, "ctalk: could not revoke the token at %s (%v); deleting it here anyway\n", cred.Relay, err)
	}
	if err := credentials.Remove(dir); err != nil {
		return err
	}
	fmt.Fprintf(io.Stdout, "Logged out of %s.\n", cred.Relay)
	return nil
}

// stored returns the config directory and the stored login, which must be
// for relay when relay is given.
func stored(io *IO, relay string) (string, credentials.Credentials, error) {
	dir, err := credentials.Dir(io.Getenv)
	if err != nil {
		return "", credentials.Credentials{}, err
	}
	endpoint := ""
	if relay != "" {
		if endpoint, err = credentials.RelayURL(relay); err != nil {
			return "", credentials.Credentials{}, err
		}
	}
	cred, err := credentials.Load(dir, endpoint)
	return dir, cred, err
}
