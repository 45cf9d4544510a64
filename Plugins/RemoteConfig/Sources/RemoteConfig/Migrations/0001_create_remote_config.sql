-- Every published version of the config, whole: the newest is what apps get; an older one is
-- published again to roll back (a new version with its parameters).
CREATE TABLE remote_config.versions (
    version integer PRIMARY KEY,
    parameters jsonb NOT NULL,
    note text NOT NULL DEFAULT '' CHECK (char_length(note) <= 500),
    published_by uuid NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now(),
    -- The version this one copies (a rollback), if any.
    restores integer
);
