-- +goose Up
-- Each answer's reader groups also list it under its bucket of answer
-- order: '<group prefix>@<answered_seq / 16384>' (issue 14: for words in
-- a few tenths of a percent of what a person may see, the GIN search found
-- every match in the history, 2,200 at 1M, and read each one's row to sort
-- them, 2.5 ms of its 6.7; restricted to the buckets where the newest
-- matches are, it reads about 70). A lexeme of the english configuration
-- never starts with '@', so the buckets cannot meet a word.
-- +goose StatementBegin
CREATE FUNCTION search_readers(org text, from_user text, to_user text, shared boolean, answered_seq bigint, body tsvector)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT p || l
        FROM unnest(CASE WHEN shared THEN ARRAY[org || '::']
                         ELSE ARRAY[org || ':' || from_user || ':', org || ':' || to_user || ':'] END) p,
             unnest(tsvector_to_array(body) || ('@' || (answered_seq >> 14))) l))
$$;
-- +goose StatementEnd

-- search_buckets is the tsquery of the buckets lo..hi (answered_seq >> 14)
-- in the reader groups of prefixes: any of them.
-- +goose StatementBegin
CREATE FUNCTION search_buckets(prefixes text[], lo bigint, hi bigint) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg('''' || replace(replace(p || '@' || b, '\', '\\'), '''', '''''') || '''', ' | '), '')::tsquery
    FROM unnest(prefixes) p, generate_series(lo, hi) b
$$;
-- +goose StatementEnd

CREATE INDEX messages_search_buckets ON messages_search
    USING gin (search_readers(org_id, from_user_id, to_user_id, shared, answered_seq, body));
DROP INDEX messages_search_readers;
DROP FUNCTION search_readers(text, text, text, boolean, tsvector);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION search_readers(org text, from_user text, to_user text, shared boolean, body tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT p || l
        FROM unnest(CASE WHEN shared THEN ARRAY[org || '::']
                         ELSE ARRAY[org || ':' || from_user || ':', org || ':' || to_user || ':'] END) p,
             unnest(tsvector_to_array(body)) l))
$$;
-- +goose StatementEnd
CREATE INDEX messages_search_readers ON messages_search
    USING gin (search_readers(org_id, from_user_id, to_user_id, shared, body));
DROP INDEX messages_search_buckets;
DROP FUNCTION search_buckets(text[], bigint, bigint);
DROP FUNCTION search_readers(text, text, text, boolean, bigint, tsvector);
