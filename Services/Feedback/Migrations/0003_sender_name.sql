-- The sender's name, given with anonymous feedback (kept like its reply address).
ALTER TABLE feedback.items ADD COLUMN name text CHECK (char_length(name) <= 100);
