-- Sign-ups per day (the console's dashboard) read the last days' accounts only.
CREATE INDEX users_created ON auth.users (created_at);
