package cli

// The operator's commands, run where the database is (the same environment
// as ctalk serve): migrate, backup and export.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/relay"
)

// Database is how the operator's commands reach the database.
type Database struct {
	// Config reads the database's configuration from the environment, as
	// ctalk serve does.
	Config func(getenv func(string) string) (db.Config, error)
	// EnvHelp documents that environment.
	EnvHelp string
}

// DatabaseCommands are migrate, backup and export.
func DatabaseCommands(d Database) []*Command {
	return []*Command{d.migrateCommand(), d.backupCommand(), d.exportCommand()}
}

func (d Database) migrateCommand() *Command {
	return &Command{
		Name: "migrate", Args: "status|up|down", Summary: "show, apply, or roll back one database migration",
		Details: "serve applies pending migrations itself; migrate is for looking and rolling back.\n\n" + d.EnvHelp,
		Setup: func(_ *flag.FlagSet, io *IO) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 || (args[0] != "status" && args[0] != "up" && args[0] != "down") {
					return UsageError("usage: ctalk migrate status|up|down")
				}
				cfg, err := d.Config(io.Getenv)
				if err != nil {
					return err
				}
				return migrate(ctx, cfg, args[0], io.Stdout)
			}
		},
	}
}

func migrate(ctx context.Context, cfg db.Config, step string, stdout io.Writer) error {
	m, err := db.OpenMigrator(ctx, cfg)
	if err != nil {
		return err
	}
	defer m.Close()
	switch step {
	case "status":
		st, err := m.Status(ctx)
		if err != nil {
			return err
		}
		for _, s := range st {
			applied := "pending"
			if s.State == "applied" {
				applied = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(stdout, "%-30s %s\n", s.Source.Path, applied)
		}
	case "up":
		n, err := m.Up(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", n)
	case "down":
		res, err := m.Down(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rolled back %s\n", res.Source.Path)
	}
	return nil
}

// open opens the database of the environment.
func (d Database) open(ctx context.Context, io *IO) (db.Store, error) {
	cfg, err := d.Config(io.Getenv)
	if err != nil {
		return nil, err
	}
	return db.Open(ctx, cfg)
}

func (d Database) backupCommand() *Command {
	return &Command{
		Name: "backup", Args: "FILE",
		Summary: "copy the SQLite database to a new FILE, consistently, while ctalk serve keeps running",
		Details: "The copy holds every question and answer committed before the backup began. FILE must not exist.\n" +
			"A PostgreSQL database is backed up with pg_dump or the provider's backups instead.\n\n" + d.EnvHelp,
		Setup: func(_ *flag.FlagSet, io *IO) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return UsageError("usage: ctalk backup FILE")
				}
				store, err := d.open(ctx, io)
				if err != nil {
					return err
				}
				defer store.Close()
				if err := store.Backup(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(io.Stdout, "backed up to %s\n", args[0])
				return nil
			}
		},
	}
}

func (d Database) exportCommand() *Command {
	return &Command{
		Name: "export", Args: "--org ID [--out FILE]",
		Summary: "write one organization's data as JSON lines: people (no password hashes), questions, answers, conversations",
		Details: "For the operator of the database. An organization's admin downloads the same from the web app\n" +
			"(/app/admin). Without --out the lines go to standard output.\n\n" + d.EnvHelp,
		Setup: func(fs *flag.FlagSet, io *IO) func(context.Context, []string) error {
			org := fs.String("org", "", "the organization's id")
			out := fs.String("out", "", "write to this new file instead of standard output")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 || *org == "" {
					return UsageError("usage: ctalk export --org ID [--out FILE]")
				}
				store, err := d.open(ctx, io)
				if err != nil {
					return err
				}
				defer store.Close()
				w := io.Stdout
				if *out != "" {
					f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
					if errors.Is(err, os.ErrExist) {
						return fmt.Errorf("export: %s already exists: choose a new file name", *out)
					} else if err != nil {
						return fmt.Errorf("export: %w", err)
					}
					err = relay.New(store, relay.Options{}).ExportForOperator(ctx, *org, f)
					if err = errors.Join(err, f.Close()); err != nil {
						os.Remove(*out) // no partial export under its name
					}
					return err
				}
				return relay.New(store, relay.Options{}).ExportForOperator(ctx, *org, w)
			}
		},
	}
}
