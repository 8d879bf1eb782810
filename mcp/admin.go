package mcp

import (
	"context"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/internal/relay"
)

// Admin tools: authorized by an organization's admin password.

type registerOrganizationArgs struct {
	OrgID         string `json:"org_id"`
	Name          string `json:"name"`
	AdminPassword string `json:"admin_password"`
}

func (t *tools) registerOrganization() tool {
	return declare(t, "register_organization", func(ctx context.Context, a registerOrganizationArgs) (relay.OrganizationResult, error) {
		return t.relay.RegisterOrganization(ctx, relay.NewOrganization(a))
	},
		mcpgo.WithDescription("Create a ctalk organization (a team). Do this once per team. "+
			"The admin password is needed later to register users; tell the user to store it safely."),
		argOrgID(fmt.Sprintf("Short id for the organization: letters, digits, '-' and '_', at most %d characters, e.g. ai-company.", relay.MaxIDLen)),
		mcpgo.WithString("name", mcpgo.Required(), mcpgo.Description("Display name, e.g. The AI Company."), mcpgo.MaxLength(relay.MaxNameLen)),
		mcpgo.WithString("admin_password", mcpgo.Required(), mcpgo.Description(
			fmt.Sprintf("Admin password for the organization, at least %d characters.", relay.MinAdminPassLen)),
			mcpgo.MinLength(relay.MinAdminPassLen), mcpgo.MaxLength(relay.MaxPasswordLen)),
		annotations("Register organization", false, false, false, false),
	)
}

type registerUserArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
	Name          string `json:"name"`
	Password      string `json:"password"`
	Ownership     string `json:"ownership"`
	Notes         string `json:"notes,omitempty"`
}

func (t *tools) registerUser() tool {
	return declare(t, "register_user", func(ctx context.Context, a registerUserArgs) (relay.Profile, error) {
		return t.relay.RegisterUser(ctx, relay.Admin{OrgID: a.OrgID, Password: a.AdminPassword}, relay.NewUser{
			UserID: a.UserID, Name: a.Name, Password: a.Password, Ownership: a.Ownership, Notes: a.Notes,
		})
	},
		mcpgo.WithDescription("Register a person in an organization (needs the organization's admin password). "+
			"ownership says what they own or know about (repos, services, areas) so coworkers know whom to ask."),
		argOrgID("The organization's id."),
		argAdminPassword,
		mcpgo.WithString("user_id", mcpgo.Required(), mcpgo.Description(
			"Short id for the person, unique in the organization: letters, digits, '-' and '_', e.g. john."), mcpgo.MaxLength(relay.MaxIDLen)),
		mcpgo.WithString("name", mcpgo.Required(), mcpgo.Description("Display name, e.g. John."), mcpgo.MaxLength(relay.MaxNameLen)),
		mcpgo.WithString("password", mcpgo.Required(), mcpgo.Description(
			fmt.Sprintf("The person's password, at least %d characters.", relay.MinUserPassLen)),
			mcpgo.MinLength(relay.MinUserPassLen), mcpgo.MaxLength(relay.MaxPasswordLen)),
		mcpgo.WithString("ownership", mcpgo.Required(), mcpgo.Description(
			"What the person owns or knows, e.g. alpha-repo and payments-service."), mcpgo.MaxLength(relay.MaxOwnershipLen)),
		mcpgo.WithString("notes", mcpgo.Description("Optional notes the person keeps about themselves."),
			mcpgo.DefaultString(""), mcpgo.MaxLength(relay.MaxNotesLen)),
		annotations("Register user", false, false, false, false),
	)
}

type updateProfileNotesArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
	ProfileNotes  string `json:"profile_notes"`
}

func (t *tools) updateUserProfileNotes() tool {
	return declare(t, "update_user_profile_notes", func(ctx context.Context, a updateProfileNotesArgs) (relay.Profile, error) {
		return t.relay.UpdateUserProfileNotes(ctx, relay.Admin{OrgID: a.OrgID, Password: a.AdminPassword}, a.UserID, a.ProfileNotes)
	},
		mcpgo.WithDescription("Admin only: replace the profile notes the organization keeps about a person."),
		argOrgID("The organization's id."),
		argAdminPassword,
		argUserID,
		mcpgo.WithString("profile_notes", mcpgo.Required(), mcpgo.Description("The new profile notes; an empty string clears them."), mcpgo.MaxLength(relay.MaxNotesLen)),
		annotations("Update user profile notes", false, true, true, false),
	)
}

// adminUserArgs are the arguments of an admin action on one person.
type adminUserArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
}

func (a adminUserArgs) admin() relay.Admin {
	return relay.Admin{OrgID: a.OrgID, Password: a.AdminPassword}
}

type resetPasswordArgs struct {
	adminUserArgs
	NewPassword string `json:"new_password"`
}

func (t *tools) resetUserPassword() tool {
	return declare(t, "reset_user_password", func(ctx context.Context, a resetPasswordArgs) (relay.PasswordResult, error) {
		return t.relay.ResetUserPassword(ctx, a.admin(), a.UserID, a.NewPassword)
	},
		mcpgo.WithDescription("Admin only: set a new password for a person who forgot theirs. Every token of theirs is revoked."),
		argOrgID("The organization's id."),
		argAdminPassword,
		argUserID,
		argNewPassword,
		annotations("Reset a user's password", false, true, false, false),
	)
}

func (t *tools) deactivateUser() tool {
	return declare(t, "deactivate_user", func(ctx context.Context, a adminUserArgs) (relay.Profile, error) {
		return t.relay.DeactivateUser(ctx, a.admin(), a.UserID)
	},
		mcpgo.WithDescription("Admin only: stop a person from logging in or using any token (e.g. they left). Their messages stay."),
		argOrgID("The organization's id."),
		argAdminPassword,
		argUserID,
		annotations("Deactivate a user", false, true, true, false),
	)
}

func (t *tools) reactivateUser() tool {
	return declare(t, "reactivate_user", func(ctx context.Context, a adminUserArgs) (relay.Profile, error) {
		return t.relay.ReactivateUser(ctx, a.admin(), a.UserID)
	},
		mcpgo.WithDescription("Admin only: let a deactivated person log in again (their old tokens stay revoked)."),
		argOrgID("The organization's id."),
		argAdminPassword,
		argUserID,
		annotations("Reactivate a user", false, false, true, false),
	)
}

type deleteOrganizationArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	Confirm       string `json:"confirm_org_id"`
}

func (t *tools) deleteOrganization() tool {
	return declare(t, "delete_organization", func(ctx context.Context, a deleteOrganizationArgs) (relay.OrgDeleted, error) {
		return t.relay.DeleteOrganization(ctx, relay.Admin{OrgID: a.OrgID, Password: a.AdminPassword}, a.Confirm)
	},
		mcpgo.WithDescription("Admin only, cannot be undone: delete the organization and everything in it (people, "+
			"questions and answers, tokens, connected clients, the audit log). Call it only when the user explicitly "+
			"asked to delete this organization; `ctalk admin delete-org` does it from a terminal without the admin "+
			"password entering the conversation."),
		argOrgID("The organization's id."),
		argAdminPassword,
		mcpgo.WithString("confirm_org_id", mcpgo.Required(), mcpgo.Description(
			"The organization's id again, as confirmation."), mcpgo.MaxLength(relay.MaxIDLen)),
		annotations("Delete organization", false, true, false, false),
	)
}
