-- Each player's best score per game, with the display name their token carried when they set it.
CREATE TABLE leaderboard.scores (
    game text NOT NULL,
    user_id uuid NOT NULL,
    name text,
    points integer NOT NULL CHECK (points >= 0),
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (game, user_id)
);
CREATE INDEX scores_best ON leaderboard.scores (game, points DESC, at);
