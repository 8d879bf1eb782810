package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// ResolveVersion returns the version (ldflags if set, else the module version
// the build recorded) and the line `ctalk version` prints:
// "ctalk v1.2.3 (rev abc1234, 2026-11-30T10:00:00Z, modified)".
func ResolveVersion(ldflags string, bi *debug.BuildInfo) (string, string) {
	v := ldflags
	if v == "" && bi != nil {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(len(s.Value), 7)]
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "modified"
				}
			}
		}
	}
	line := "ctalk " + v
	if rev != "" {
		var parts []string
		for _, p := range []string{"rev " + rev, at, modified} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		line += fmt.Sprintf(" (%s)", strings.Join(parts, ", "))
	}
	return v, line
}
