-- The rocket's levels as operators change them at run time (`RocketSettingsStore`): one row
-- per version, never changed once written; the newest is current. A new version is inserted
-- only when the newest stored one is still the version before it (an INSERT ... SELECT whose
-- condition reads the newest row), and the primary key refuses a second row of one version:
-- of two nodes that change the levels at once, one wins.
CREATE TABLE rocket_settings (
    version BIGINT     NOT NULL,
    body    MEDIUMTEXT NOT NULL,
    PRIMARY KEY (version),
    CONSTRAINT rocket_settings_version_positive CHECK (version >= 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
