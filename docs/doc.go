// Package docs holds ctalk's documentation. Its only code is a test: the
// tools reference in tools.md is generated from the golden tool schemas in
// mcp/testdata/tools, and the test fails when tools.md no longer matches them
// (`go test ./docs -update` rewrites it), so the reference cannot drift from
// what the model is shown.
package docs
