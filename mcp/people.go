package mcp

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/relay"
)

// People tools: finding whom to ask.

func (t *tools) listUsers() tool {
	return declare(t, "list_users", func(ctx context.Context, a authArgs) (relay.UserList, error) {
		return t.relay.ListUsers(ctx, credentials(ctx, a.AuthToken))
	},
		mcpgo.WithDescription("List the people in your organization with what each owns, to find whom to ask."),
		argAuthToken,
		annotations("List users", true, false, true, false),
	)
}

type getUserProfileArgs struct {
	AuthToken string `json:"auth_token,omitempty"`
	UserID    string `json:"user_id"`
}

func (t *tools) getUserProfile() tool {
	return declare(t, "get_user_profile", func(ctx context.Context, a getUserProfileArgs) (relay.UserProfile, error) {
		return t.relay.GetUserProfile(ctx, credentials(ctx, a.AuthToken), a.UserID)
	},
		mcpgo.WithDescription("Show a person's profile (ownership, their notes, admin profile notes) and your "+
			"interactions with them: questions each way, the last question and the last answer."),
		argAuthToken,
		argUserID,
		annotations("Get user profile", true, false, true, false),
	)
}
