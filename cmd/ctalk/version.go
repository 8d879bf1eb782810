package main

import (
	"runtime/debug"

	"github.com/ctalk/ctalk/internal/cli"
)

// version is ctalk's version: -ldflags "-X main.version=…" sets it, or else
// the module version the build recorded ("(devel)" from a checkout).
var version = ""

// versionLine is what `ctalk version` prints.
var versionLine string

func init() {
	bi, _ := debug.ReadBuildInfo()
	version, versionLine = cli.ResolveVersion(version, bi)
}
