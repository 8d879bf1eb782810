package relay

import (
	"context"
	"errors"

	"github.com/ctalk/ctalk/db"
)

// RegisterTeam registers an organization and its first user together, for
// a face where one form asks for both (the web sign-up page): every input
// is checked before anything is hashed, and both rows are written in one
// transaction, so a refusal leaves nothing behind. It counts as one
// organization registration against the caller's address. Its messages
// name the fields as a form labels them.
func (s *Service) RegisterTeam(ctx context.Context, o NewOrganization, a NewUser) (OrganizationResult, Profile, error) {
	orgID, err := slug("organization id", o.OrgID)
	if err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	name, err := text("organization name", o.Name, true, MaxNameLen)
	if err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if err := password("admin password", o.AdminPassword, MinAdminPassLen); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	// Who signs the organization up is its first admin.
	u := db.User{OrgID: orgID, CreatedAt: s.clock()}
	u.AdminSince = &u.CreatedAt
	if u.ID, err = slug("your user id", a.UserID); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if u.Name, err = text("your name", a.Name, true, MaxNameLen); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if u.Ownership, err = text("what you own", a.Ownership, false, MaxOwnershipLen); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if u.Notes, err = text("notes", a.Notes, false, MaxNotesLen); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if err := password("your password", a.Password, MinUserPassLen); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if a.Password == o.AdminPassword {
		return OrganizationResult{}, Profile{}, badInput("choose a password different from the admin password: " +
			"the admin password lets its holder add and reset people")
	}
	ctx, release, err := s.passwordTurn(ctx)
	if err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	defer release()
	if err := s.registration(ctx); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	org := db.Organization{ID: orgID, Name: name, CreatedAt: u.CreatedAt}
	if org.AdminPasswordHash, err = s.hash.Hash(ctx, o.AdminPassword); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	if u.PasswordHash, err = s.hash.Hash(ctx, a.Password); err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := q.CreateOrganization(ctx, org); err != nil {
			return err
		}
		return q.CreateUser(ctx, u)
	})
	if errors.Is(err, db.ErrConflict) {
		return OrganizationResult{}, Profile{}, errorf(KindConflict,
			"organization %q already exists: choose another organization id, or ask its admin to add you", orgID)
	} else if err != nil {
		return OrganizationResult{}, Profile{}, err
	}
	return OrganizationResult{OrgID: orgID, Name: name, CreatedAt: org.CreatedAt,
		NextStep: "Keep the admin password safe: it adds and resets people (register_user)."}, profileOf(u), nil
}
