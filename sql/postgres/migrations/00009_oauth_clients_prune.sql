-- +goose Up
-- Registered clients (RFC 7591) that never got a grant are pruned a day
-- after they registered: registration needs no account, so without this
-- anyone could fill the table. Each registration and each sign-in sweeps
-- them, found by their registration time and their grants.
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- +goose Down
DROP INDEX oauth_grants_client;
DROP INDEX oauth_clients_created;
