-- +goose Up
-- OAuth 2.1 sign-in (issue 12). An access token is an auth_tokens row like a
-- login tool's, with the grant it belongs to, the resource it is for and its
-- scope (all NULL for tokens from the login tool).
ALTER TABLE auth_tokens ADD COLUMN grant_id TEXT;
ALTER TABLE auth_tokens ADD COLUMN resource TEXT;
ALTER TABLE auth_tokens ADD COLUMN scope TEXT;
-- Revoking a grant revokes its access tokens.
CREATE INDEX auth_tokens_grant ON auth_tokens (grant_id);

-- Clients registered through Dynamic Client Registration (RFC 7591).
-- Clients whose id is an https URL (a Client ID Metadata Document) are not
-- stored here. redirect_uris is a JSON array of strings.
CREATE TABLE oauth_clients (
    id            TEXT        NOT NULL PRIMARY KEY,
    name          TEXT        NOT NULL,
    redirect_uris TEXT        NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

-- A grant is one connected client of one person: the family of every code,
-- access token and refresh token issued to it. Revoking it ends them all.
CREATE TABLE oauth_grants (
    id           TEXT        NOT NULL PRIMARY KEY,
    org_id       TEXT        NOT NULL,
    user_id      TEXT        NOT NULL,
    client_id    TEXT        NOT NULL,
    client_name  TEXT        NOT NULL,
    resource     TEXT        NOT NULL,
    scope        TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id)
);
CREATE INDEX oauth_grants_user ON oauth_grants (org_id, user_id);
-- Pruning finds grants revoked long ago.
CREATE INDEX oauth_grants_revoked ON oauth_grants (revoked_at) WHERE revoked_at IS NOT NULL;

-- Authorization codes, stored only as SHA-256 hashes; single use.
CREATE TABLE oauth_codes (
    code_hash      BYTEA       NOT NULL PRIMARY KEY,
    grant_id       TEXT        NOT NULL REFERENCES oauth_grants (id),
    redirect_uri   TEXT        NOT NULL,
    code_challenge TEXT        NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    used_at        TIMESTAMPTZ
);
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- Refresh tokens, stored only as SHA-256 hashes; each is redeemed once
-- (rotation), and a spent one presented again revokes its grant.
CREATE TABLE oauth_refresh_tokens (
    token_hash BYTEA       NOT NULL PRIMARY KEY,
    grant_id   TEXT        NOT NULL REFERENCES oauth_grants (id),
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_at);

-- +goose Down
-- OAuth access tokens go with their grants: without grant_id and resource
-- they would pass for the login tool's tokens.
DELETE FROM auth_tokens WHERE grant_id IS NOT NULL;
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_codes;
DROP TABLE oauth_grants;
DROP TABLE oauth_clients;
DROP INDEX auth_tokens_grant;
ALTER TABLE auth_tokens DROP COLUMN scope;
ALTER TABLE auth_tokens DROP COLUMN resource;
ALTER TABLE auth_tokens DROP COLUMN grant_id;
