package mcp

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/relay"
)

// Self-service tools: a person signing in and keeping their own account.

type loginArgs struct {
	OrgID    string `json:"org_id"`
	UserID   string `json:"user_id"`
	Password string `json:"password"`
}

func (t *tools) login() tool {
	return declare(t, "login", func(ctx context.Context, a loginArgs) (relay.LoginResult, error) {
		return t.relay.Login(ctx, a.OrgID, a.UserID, a.Password)
	},
		mcpgo.WithDescription("Log in and get an auth_token for the other ctalk tools. Reuse the token for later "+
			"ctalk calls in this conversation; never show it in a question, answer or note."),
		argOrgID("The organization's id."),
		mcpgo.WithString("user_id", mcpgo.Required(), mcpgo.Description("Your user id."), mcpgo.MaxLength(relay.MaxIDLen)),
		mcpgo.WithString("password", mcpgo.Required(), mcpgo.Description("Your password."), mcpgo.MaxLength(relay.MaxPasswordLen)),
		annotations("Log in", false, false, false, false),
	)
}

func (t *tools) whoami() tool {
	return declare(t, "whoami", func(ctx context.Context, a authArgs) (relay.Whoami, error) {
		return t.relay.Whoami(ctx, credentials(ctx, a.AuthToken))
	},
		mcpgo.WithDescription("Show who the auth token belongs to, and when the token expires."),
		argAuthToken,
		annotations("Who am I", true, false, true, false),
	)
}

func (t *tools) logout() tool {
	return declare(t, "logout", func(ctx context.Context, a authArgs) (relay.LogoutResult, error) {
		return t.relay.Logout(ctx, credentials(ctx, a.AuthToken))
	},
		mcpgo.WithDescription("Revoke the auth token at once. Later calls with it fail everywhere."),
		argAuthToken,
		annotations("Log out", false, true, true, false),
	)
}

type changePasswordArgs struct {
	AuthToken   string `json:"auth_token,omitempty"`
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

func (t *tools) changePassword() tool {
	return declare(t, "change_password", func(ctx context.Context, a changePasswordArgs) (relay.PasswordResult, error) {
		return t.relay.ChangePassword(ctx, credentials(ctx, a.AuthToken), a.OldPassword, a.NewPassword)
	},
		mcpgo.WithDescription("Change your password. Your other tokens are revoked; the one used for this call keeps working."),
		argAuthToken,
		mcpgo.WithString("old_password", mcpgo.Required(), mcpgo.Description("Your current password."), mcpgo.MaxLength(relay.MaxPasswordLen)),
		argNewPassword,
		annotations("Change password", false, true, false, false),
	)
}

type updateMyNotesArgs struct {
	AuthToken string `json:"auth_token,omitempty"`
	Notes     string `json:"notes"`
}

func (t *tools) updateMyNotes() tool {
	return declare(t, "update_my_notes", func(ctx context.Context, a updateMyNotesArgs) (relay.Profile, error) {
		return t.relay.UpdateMyNotes(ctx, credentials(ctx, a.AuthToken), a.Notes)
	},
		mcpgo.WithDescription("Replace your own notes (shown to coworkers who ask you questions)."),
		argAuthToken,
		mcpgo.WithString("notes", mcpgo.Required(), mcpgo.Description("The new notes; an empty string clears them."), mcpgo.MaxLength(relay.MaxNotesLen)),
		annotations("Update my notes", false, true, true, false),
	)
}

func (t *tools) listConnectedClients() tool {
	return declare(t, "list_connected_clients", func(ctx context.Context, a authArgs) (relay.ConnectedClients, error) {
		return t.relay.ListConnectedClients(ctx, credentials(ctx, a.AuthToken))
	},
		mcpgo.WithDescription("List the apps you connected to ctalk through OAuth sign-in (claude.ai, Claude Desktop, "+
			"the mobile apps, Claude Code), with when each connected."),
		argAuthToken,
		annotations("List connected clients", true, false, true, false),
	)
}

type revokeConnectedClientArgs struct {
	AuthToken string `json:"auth_token,omitempty"`
	ID        string `json:"id"`
}

func (t *tools) revokeConnectedClient() tool {
	return declare(t, "revoke_connected_client", func(ctx context.Context, a revokeConnectedClientArgs) (relay.RevokeResult, error) {
		return t.relay.RevokeConnectedClient(ctx, credentials(ctx, a.AuthToken), a.ID)
	},
		mcpgo.WithDescription("Disconnect an app you connected through OAuth sign-in: its tokens stop working at once "+
			"and it must sign in again."),
		argAuthToken,
		mcpgo.WithString("id", mcpgo.Required(), mcpgo.Description("The connection's id, from list_connected_clients."),
			mcpgo.MaxLength(relay.MaxIDLen)),
		annotations("Disconnect a client", false, true, true, false),
	)
}
