-- +goose Up
-- The web app's admin console (issue 13). An organization admin is a person
-- holding the admin role, granted with the organization's admin password
-- once; admin work then needs their own sign-in, never the admin password
-- in a conversation.
ALTER TABLE users ADD COLUMN admin_since TIMESTAMP;

-- The audit log: admin actions, sign-ins, sign-in locks and token
-- revocations of an organization, with who, when and from which address.
-- It never holds a password, a token or message text. actor_user_id is
-- empty for actions authorized by the admin password (the MCP admin tools)
-- and for events with no signed-in person (a lock).
CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id         TEXT        NOT NULL REFERENCES organizations (id),
    at             TIMESTAMP   NOT NULL,
    actor_user_id  TEXT        NOT NULL,
    action         TEXT        NOT NULL,
    target_user_id TEXT        NOT NULL,
    address        TEXT        NOT NULL,
    detail         TEXT        NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);

-- When a token was last used, at most every few minutes (the tokens pages).
ALTER TABLE auth_tokens ADD COLUMN last_used_at TIMESTAMP;

-- Expired tokens are deleted (PruneTokens): OAuth access tokens last an
-- hour, so a connected client leaves one behind every hour it is used.
CREATE INDEX auth_tokens_expires ON auth_tokens (expires_at);

-- +goose Down
DROP INDEX auth_tokens_expires;
DROP TABLE audit_log;
ALTER TABLE auth_tokens DROP COLUMN last_used_at;
ALTER TABLE users DROP COLUMN admin_since;
