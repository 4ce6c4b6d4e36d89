-- The user directory: per user, the display fields (nickname, avatar URL) and the fields the
-- room lists and billing group people by (region, country, agency), each optional (NULL when
-- unset). The service checks the fields' rules before it writes (a nickname has at most 30
-- characters, an avatar URL at most 2,048 ASCII bytes, a region at most 32 ASCII characters,
-- a country 2, an agency id at most 64 characters); the columns hold a little more than that
-- for nicknames. The indexes serve the lists of a country's and an agency's people.
CREATE TABLE user_profiles (
    user_id    VARCHAR(64)   NOT NULL,
    nickname   VARCHAR(64)   NULL,
    avatar_url VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NULL,
    region     VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NULL,
    country    CHAR(2)       CHARACTER SET ascii COLLATE ascii_bin NULL,
    agency     VARCHAR(64)   NULL,
    PRIMARY KEY (user_id),
    KEY user_profiles_by_country (country, user_id),
    KEY user_profiles_by_agency (agency, user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
