-- The billing policy (`BillingPolicies`): one row per version, never changed once written.
-- The newest version is the current policy; older ones bill the orders placed under them.
-- A new version is written only when the newest stored one is still the version before it
-- (the single writer checks and inserts in one statement; the primary key refuses a second
-- row of one version).
CREATE TABLE billing_policies (
    version INTEGER NOT NULL PRIMARY KEY,
    body    TEXT    NOT NULL,
    CHECK (version >= 1)
) STRICT;
