// Package sql holds ctalk's schema and queries: goose migrations per dialect
// and the named queries sqlc compiles for both engines. It embeds the
// migrations so the binary migrates its database at boot.
package sql

import "embed"

// Migrations holds postgres/migrations and sqlite/migrations; the same files
// work with the goose CLI.
//
//go:embed postgres/migrations/*.sql sqlite/migrations/*.sql
var Migrations embed.FS
