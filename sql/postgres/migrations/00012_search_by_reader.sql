-- +goose Up
-- Search lists partitioned by who may read the answer, and walks newest
-- first without the rows the searcher may not see (issue 14: at 1M
-- messages a search read every answer holding its words, about two thirds
-- of them answers the caller may not see, to filter them out).
--
-- messages_search_readers indexes, for each answered question, its words
-- once for each reader group of the answer, as a prefix (search_readers):
-- '<org>::<word>' for a shared answer (its group is the organization) and
-- '<org>:<user>:<word>' for a private one, once under its asker and once
-- under its answerer (slugs hold no ':', and words neither). The GIN index
-- so keeps a list per organization, reader group and word, and a search
-- (search_query) asks for the caller's two groups only: every entry it
-- reads is an answer the caller may see, of their organization. (The
-- visibility filter stays in the queries anyway.) It is an index on an
-- expression, so the table does not hold the words twice.
--
-- The three partial indexes are the newest-first lists of the answers a
-- person may see (the organization's shared ones, and their private ones
-- as asker and as answerer), which SearchWalk merges, so that a walk never
-- reads an answer the caller may not see. messages_search_newest, the walk
-- over every answer of the organization, and messages_search_body, the
-- lists of all readers together, go.
--
-- Who asked, who answered and whether it is shared are fixed when a
-- question is answered, so a row's groups never change.

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

-- search_query is the tsquery of terms (words; English stemming, stop words
-- dropped as to_tsquery drops them) within one reader group: every word
-- (&), or any (|), each under prefix. No lexeme at all gives an empty
-- query, which matches nothing.
-- +goose StatementBegin
CREATE FUNCTION search_query(terms text, match_any boolean, prefix text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_agg('''' || replace(replace(prefix || l, '\', '\\'), '''', '''''') || '''',
                               CASE WHEN match_any THEN ' | ' ELSE ' & ' END), '')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig, terms))) l
$$;
-- +goose StatementEnd

CREATE INDEX messages_search_readers ON messages_search
    USING gin (search_readers(org_id, from_user_id, to_user_id, shared, body));
DROP INDEX messages_search_body;
DROP INDEX messages_search_newest;
CREATE INDEX messages_search_shared ON messages_search (org_id, answered_seq) WHERE shared;
CREATE INDEX messages_search_asked ON messages_search (org_id, from_user_id, answered_seq) WHERE NOT shared;
CREATE INDEX messages_search_answered ON messages_search (org_id, to_user_id, answered_seq) WHERE NOT shared;

-- +goose Down
DROP INDEX messages_search_answered;
DROP INDEX messages_search_asked;
DROP INDEX messages_search_shared;
CREATE INDEX messages_search_body ON messages_search USING gin (body);
CREATE INDEX messages_search_newest ON messages_search (org_id, answered_seq);
DROP INDEX messages_search_readers;
DROP FUNCTION search_query(text, boolean, text);
DROP FUNCTION search_readers(text, text, text, boolean, tsvector);
