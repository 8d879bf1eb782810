-- +goose Up
-- Failed password attempts, per key ("user:<org>/<user>", "admin:<org>",
-- "addr:<client address>"), so that guessing is throttled on every replica.
-- Keys exist whether or not the organization or user does: a throttled
-- unknown user looks exactly like a throttled real one.
CREATE TABLE login_throttle (
    key          TEXT        NOT NULL PRIMARY KEY,
    failures     BIGINT      NOT NULL,
    locked_until TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX login_throttle_updated ON login_throttle (updated_at);

-- +goose Down
DROP TABLE login_throttle;
