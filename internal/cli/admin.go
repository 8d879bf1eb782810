package cli

// ctalk admin: an organization's administration from a terminal, through
// the relay's admin tools, so no password is ever typed into Claude.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/relayclient"
)

// adminPasswordsHelp documents where the passwords come from, in order.
const adminPasswordsHelp = `Passwords are asked for without echo on a terminal (a new one twice). When
standard input is not a terminal, or with --password-stdin, they are read from
standard input, one per line, in this order: the organization's admin password
first, then the new password (register-user: the user's; reset-password: the
new one). register-org reads only the new admin password.
The relay is --relay, or else the relay of your stored ctalk login.
`

// adminSpec describes one admin subcommand: the tool it calls and the
// flags that become the tool's arguments.
type adminSpec struct {
	name, tool, args, summary string
	user                      bool     // takes --user (user_id)
	required, optional        []string // text flags: "name", "ownership", "notes"
	newPassword               string   // the tool argument of a new password, if any
	existingAdmin             bool     // asks for the admin password first
}

// textArgs maps a text flag to its tool argument and help.
var textArgs = map[string][2]string{
	"name":      {"name", "the display name"},
	"ownership": {"ownership", "what the user owns: repositories, services, areas"},
	"notes":     {"notes", "notes others see about the user"},
	"profile":   {"profile_notes", "the admin's profile notes about the user"},
	"confirm":   {"confirm_org_id", "the organization's id again, to confirm"},
}

var adminSpecs = []adminSpec{
	{name: "register-org", tool: "register_organization", args: "--org ID --name NAME",
		summary: "register an organization and set its admin password", required: []string{"name"}, newPassword: "admin_password"},
	{name: "register-user", tool: "register_user", args: "--org ID --user ID --name NAME [--ownership TEXT] [--notes TEXT]",
		summary: "register a user and set their password", user: true, required: []string{"name"}, optional: []string{"ownership", "notes"},
		newPassword: "password", existingAdmin: true},
	{name: "reset-password", tool: "reset_user_password", args: "--org ID --user ID",
		summary: "set a new password for a user and revoke all their tokens", user: true, newPassword: "new_password", existingAdmin: true},
	{name: "deactivate", tool: "deactivate_user", args: "--org ID --user ID",
		summary: "stop a user from logging in and revoke their tokens", user: true, existingAdmin: true},
	{name: "reactivate", tool: "reactivate_user", args: "--org ID --user ID",
		summary: "let a deactivated user log in again", user: true, existingAdmin: true},
	{name: "profile-notes", tool: "update_user_profile_notes", args: "--org ID --user ID --notes TEXT",
		summary: "replace the admin's profile notes about a user", user: true, required: []string{"profile"}, existingAdmin: true},
	{name: "delete-org", tool: "delete_organization", args: "--org ID --confirm ID",
		summary: "delete the organization and everything in it (cannot be undone)", required: []string{"confirm"}, existingAdmin: true},
}

func adminCommands(version string) []*Command {
	var names []string
	cmds := []*Command{nil}
	for _, s := range adminSpecs {
		cmds = append(cmds, s.command(version))
		names = append(names, fmt.Sprintf("  %-15s %s", s.name, s.summary))
	}
	cmds[0] = &Command{
		Name:    "admin",
		Args:    "SUBCOMMAND --relay URL --org ID ...",
		Summary: "administer an organization from a terminal: register it and its users, reset passwords, deactivate",
		Details: "Subcommands (ctalk help admin SUBCOMMAND shows one):\n" + strings.Join(names, "\n") + "\n\n" + adminPasswordsHelp,
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			return func(_ context.Context, args []string) error {
				if len(args) == 0 {
					return UsageError("name a subcommand: register-org, register-user, reset-password, deactivate, reactivate or profile-notes")
				}
				return UsageError("unknown subcommand %q", args[0])
			}
		},
	}
	return cmds
}

func (s adminSpec) command(version string) *Command {
	return &Command{
		Name: "admin " + s.name, Args: s.args, Summary: s.summary, Details: adminPasswordsHelp,
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			relay := fs.String("relay", "", "the relay's MCP URL (default: the relay of your stored login)")
			org := fs.String("org", "", "the organization's id")
			user := new(string)
			if s.user {
				fs.StringVar(user, "user", "", "the user's id")
			}
			texts := map[string]*string{}
			for _, name := range append(append([]string{}, s.required...), s.optional...) {
				flagName := name
				if name == "profile" {
					flagName = "notes"
				}
				texts[name] = fs.String(flagName, "", textArgs[name][1])
			}
			stdin := fs.Bool("password-stdin", false, "read the passwords from standard input, one per line, even on a terminal")
			return func(ctx context.Context, args []string) error {
				missing := *org == "" || (s.user && *user == "")
				for _, name := range s.required {
					missing = missing || *texts[name] == ""
				}
				if missing || len(args) > 0 {
					return UsageError("usage: ctalk admin %s %s", s.name, s.args)
				}
				call := map[string]any{"org_id": *org}
				if s.user {
					call["user_id"] = *user
				}
				for name, v := range texts {
					call[textArgs[name][0]] = *v
				}
				return s.run(ctx, io, version, *relay, call, newPasswords(io, *stdin))
			}
		},
	}
}

// adminResult covers the admin tools' results, each a subset of it.
type adminResult struct {
	OrgID         string `json:"org_id"`
	UserID        string `json:"user_id"`
	Name          string `json:"name"`
	Status        string `json:"status"`
	NextStep      string `json:"next_step"`
	TokensRevoked int64  `json:"other_tokens_revoked"`
}

func (s adminSpec) run(ctx context.Context, io *IO, version, relay string, call map[string]any, pw *passwords) error {
	endpoint, err := adminRelay(io, relay)
	if err != nil {
		return err
	}
	who := fmt.Sprint(call["org_id"])
	if s.user {
		who = fmt.Sprintf("%s in %s", call["user_id"], call["org_id"])
	}
	if s.existingAdmin {
		if call["admin_password"], err = pw.read(fmt.Sprintf("Admin password of %s: ", call["org_id"]), "admin password"); err != nil {
			return err
		}
	}
	if s.newPassword != "" {
		if call[s.newPassword], err = pw.readNew(fmt.Sprintf("New password for %s: ", who), "new password"); err != nil {
			return err
		}
	}
	c, err := relayclient.Connect(ctx, endpoint, relayclient.Options{Name: "ctalk-admin", Version: version})
	if err != nil {
		return err
	}
	var res adminResult
	if err := c.Call(ctx, s.tool, call, &res); err != nil {
		return err
	}
	switch s.name {
	case "register-org":
		fmt.Fprintf(io.Stdout, "Registered organization %s (%s) at %s.\n", res.OrgID, res.Name, endpoint)
	case "register-user":
		fmt.Fprintf(io.Stdout, "Registered %s (%s) in %s. They log in with:\n  %s\n", res.Name, res.UserID, res.OrgID,
			credentials.LoginCommand(endpoint, res.OrgID, res.UserID))
	case "reset-password":
		fmt.Fprintf(io.Stdout, "%s: %s (%d tokens revoked).\n", res.UserID, res.Status, res.TokensRevoked)
	default:
		fmt.Fprintf(io.Stdout, "%s: done.\n", who)
	}
	if res.NextStep != "" && s.name != "register-user" {
		fmt.Fprintln(io.Stdout, res.NextStep)
	}
	return nil
}

// adminRelay is --relay, or else the relay of the stored login.
func adminRelay(io *IO, relay string) (string, error) {
	if relay == "" {
		if dir, err := credentials.Dir(io.Getenv); err == nil {
			relay = credentials.StoredRelay(dir)
		}
		if relay == "" {
			return "", errors.New("which relay? pass --relay URL (no stored ctalk login names one)")
		}
	}
	return credentials.RelayURL(relay)
}
