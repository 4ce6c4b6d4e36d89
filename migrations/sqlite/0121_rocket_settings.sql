-- The rocket's levels as operators change them at run time (`RocketSettingsStore`): one row
-- per version, never changed once written; the newest is current. A new version is written
-- only when the newest stored one is still the version before it (the single writer checks
-- and inserts in one statement; the primary key refuses a second row of one version).
CREATE TABLE rocket_settings (
    version INTEGER NOT NULL PRIMARY KEY,
    body    TEXT    NOT NULL,
    CHECK (version >= 1)
) STRICT;
