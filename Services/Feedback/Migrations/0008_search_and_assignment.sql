-- Search as people type it: each message stemmed in its sender's language (the item's locale;
-- English without one) and word for word, accents ignored, with the sender's name and address
-- (split at its dots and @) and the tags. `FeedbackFilter` asks with prefixes of the typed
-- words, stemmed in English and word for word, so "crash" finds "crashes" and "notif" finds
-- "notifications".
-- unaccent is a trusted extension; where the service's role may not create one (the deploy
-- files' roles), the database's owner creates it first (deploy/…/initdb, README "Upgrading"),
-- and this statement finds it there.
CREATE EXTENSION IF NOT EXISTS unaccent WITH SCHEMA feedback;

DO $$
DECLARE
    language text;
BEGIN
    FOREACH language IN ARRAY ARRAY['simple', 'english', 'french', 'german', 'spanish', 'italian', 'portuguese',
        'dutch', 'swedish', 'danish', 'norwegian', 'finnish', 'russian', 'turkish', 'hungarian', 'romanian'] LOOP
        EXECUTE format('CREATE TEXT SEARCH CONFIGURATION feedback.%I (COPY = pg_catalog.%I)', language, language);
        EXECUTE format(
            'ALTER TEXT SEARCH CONFIGURATION feedback.%I ALTER MAPPING FOR word, hword, hword_part, asciiword, '
            'asciihword, hword_asciipart WITH feedback.unaccent, %s',
            language, CASE WHEN language = 'simple' THEN 'simple' ELSE language || '_stem' END);
    END LOOP;
END
$$;

-- The configuration for a locale (`fr-CA`, `de_DE`, `pt`): its language's, or English.
CREATE FUNCTION feedback.search_language(locale text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE lower(left(coalesce(locale, ''), 2))
    WHEN 'fr' THEN 'feedback.french'::regconfig WHEN 'de' THEN 'feedback.german'::regconfig
    WHEN 'es' THEN 'feedback.spanish'::regconfig WHEN 'it' THEN 'feedback.italian'::regconfig
    WHEN 'pt' THEN 'feedback.portuguese'::regconfig WHEN 'nl' THEN 'feedback.dutch'::regconfig
    WHEN 'sv' THEN 'feedback.swedish'::regconfig WHEN 'da' THEN 'feedback.danish'::regconfig
    WHEN 'nb' THEN 'feedback.norwegian'::regconfig WHEN 'nn' THEN 'feedback.norwegian'::regconfig
    WHEN 'no' THEN 'feedback.norwegian'::regconfig WHEN 'fi' THEN 'feedback.finnish'::regconfig
    WHEN 'ru' THEN 'feedback.russian'::regconfig WHEN 'tr' THEN 'feedback.turkish'::regconfig
    WHEN 'hu' THEN 'feedback.hungarian'::regconfig WHEN 'ro' THEN 'feedback.romanian'::regconfig
    ELSE 'feedback.english'::regconfig
END;

-- What an item is found by.
CREATE FUNCTION feedback.search_document(locale text, message text, name text, email text, tags text[])
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN to_tsvector(feedback.search_language(locale), message)
    || to_tsvector('feedback.simple'::regconfig,
        message || ' ' || coalesce(name, '') || ' ' || translate(coalesce(email, ''), '@.+_-', '     ')
        || ' ' || array_to_string(tags, ' '));

DROP INDEX feedback.items_search;
ALTER TABLE feedback.items DROP COLUMN search;
ALTER TABLE feedback.items ADD COLUMN search tsvector
    GENERATED ALWAYS AS (feedback.search_document(locale, message, name, email, tags)) STORED;
CREATE INDEX items_search ON feedback.items USING gin (search);
-- The tag filter.
CREATE INDEX items_tags ON feedback.items USING gin (tags);

-- The team member an item is assigned to (an account id of auth's; NULL: nobody), and the
-- "mine" view, newest first.
ALTER TABLE feedback.items ADD COLUMN assignee uuid;
CREATE INDEX items_assignee_created ON feedback.items (assignee, created_at DESC, id DESC) WHERE assignee IS NOT NULL;
