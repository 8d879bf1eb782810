package cli

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc1234def5678"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}}
	for _, tc := range []struct {
		ldflags string
		bi      *debug.BuildInfo
		want    string
	}{
		{"", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs}, "ctalk v1.2.3 (rev abc1234, 2026-11-30T10:00:00Z)"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "ctalk (devel) (rev abc1234, 2026-11-30T10:00:00Z, modified)"},
		{"v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "ctalk v9.9.9"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "ctalk v1.2.3"},
		{"", nil, "ctalk (devel)"},
	} {
		if _, got := ResolveVersion(tc.ldflags, tc.bi); got != tc.want {
			t.Errorf("ResolveVersion(%q, %+v) = %q, want %q", tc.ldflags, tc.bi, got, tc.want)
		}
	}
}
