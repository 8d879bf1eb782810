package bridge

import (
	"context"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Channels need a way for the bridge to speak first. Claude Code (2.1.332)
// takes notifications/claude/channel only on a connection of protocol
// 2025-11-25 or older: on 2026-07-28 it logs "Channel notifications
// skipped: connection negotiated a modern protocol revision with no
// unsolicited notification path". It declares nothing about channels (the
// server declares the claude/channel capability, the client does not), so
// the bridge recognises it by name: to Claude Code, and to any client that
// does declare claude/channel, server/discover offers the versions before
// 2026-07-28 only, and the client falls back to initialize. Every other
// client keeps 2026-07-28; it gets no events (it has no way to take them),
// and the channel's cursor does not move for it.

// channelClients are the clients known to take channel events.
var channelClients = []string{"claude-code"}

// wantsChannels reports whether a client takes channel events: it is one
// of channelClients, or it declares the claude/channel capability.
func wantsChannels(info *mcpserver.RequestProtocolInfo) bool {
	if info == nil {
		return false
	}
	if info.ClientInfo != nil && slices.Contains(channelClients, info.ClientInfo.Name) {
		return true
	}
	if info.ClientCapabilities == nil {
		return false
	}
	_, ok := info.ClientCapabilities.Experimental[channelCapability]
	return ok
}

// channelHooks steer a channel client to protocol 2025-11-25 and start the
// channel once it has initialized: on notifications/initialized, or on its
// first request after initialize, whichever comes first, so a client that
// skips the notification still gets its events.
func (b *state) channelHooks(h *mcpserver.Hooks) {
	h.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcpgo.DiscoverRequest, res *mcpgo.DiscoverResult) {
		if wantsChannels(mcpserver.RequestProtocolInfoFromContext(ctx)) {
			res.SupportedVersions = slices.DeleteFunc(slices.Clone(res.SupportedVersions), mcpgo.IsModernProtocol)
		}
	})
	h.AddAfterInitialize(func(context.Context, any, *mcpgo.InitializeRequest, *mcpgo.InitializeResult) {
		b.initialized.Store(true)
	})
	h.AddBeforeAny(func(ctx context.Context, _ any, method mcpgo.MCPMethod, _ any) {
		if method != mcpgo.MethodInitialize && b.initialized.Load() && !mcpserver.IsModernRequest(ctx) {
			b.startChannel()
		}
	})
}

// startChannel lets the channel's events go out.
func (b *state) startChannel() {
	b.start.Do(func() { close(b.ready) })
}
