package server

import "net/http"

// HandlerThroughMCPGo is Handler with every wait_for_messages call served by
// mcp-go's Streamable HTTP handler, as before heldWaits: tests compare the two.
func HandlerThroughMCPGo(cfg Config) http.Handler {
	cfg.noHeldWaits = true
	return Handler(cfg)
}
