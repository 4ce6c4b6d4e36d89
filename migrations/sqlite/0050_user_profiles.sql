-- The user directory: per user, the display fields (nickname, avatar URL) and the fields the
-- room lists and billing group people by (region, country, agency), each optional (NULL when
-- unset). The service checks the fields' rules before it writes; the indexes serve the lists
-- of a country's and an agency's people.
CREATE TABLE user_profiles (
    user_id    TEXT NOT NULL PRIMARY KEY,
    nickname   TEXT,
    avatar_url TEXT,
    region     TEXT,
    country    TEXT,
    agency     TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX user_profiles_by_country ON user_profiles (country, user_id)
    WHERE country IS NOT NULL;
CREATE INDEX user_profiles_by_agency ON user_profiles (agency, user_id)
    WHERE agency IS NOT NULL;
