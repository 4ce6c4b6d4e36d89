-- The billing policy (`BillingPolicies`): one row per version, never changed once written.
-- The newest version is the current policy; older ones bill the orders placed under them.
-- A new version is inserted only when the newest stored one is still the version before it
-- (an INSERT ... SELECT whose condition reads the newest row), and the primary key refuses a
-- second row of one version: of two nodes that change the policy at once, one wins.
CREATE TABLE billing_policies (
    version    BIGINT     NOT NULL,
    body       MEDIUMTEXT NOT NULL,
    PRIMARY KEY (version),
    CONSTRAINT billing_policies_version_positive CHECK (version >= 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
