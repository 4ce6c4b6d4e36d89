//! The gift catalog and room rules file (`configs/gifts.toml`): parsed and checked at start-up;
//! the rules go to the runtime, the gifts into the catalog store.

use std::path::Path;

use anyhow::Context;
use figment::Figment;
use figment::providers::{Format, Toml};
use room_app::ports::{
    BoardKind, BoardPeriod, CatalogGift, GiftCatalogRef, RewardTable, RewardTables,
};
use room_domain::{BillingPolicy, BillingShares, Coins, FIRST_BILLING_VERSION, GiftId, RoomRules};
use serde::Deserialize;

/// The catalog file built into the binary, used when the configured file does not exist.
pub const EMBEDDED_CATALOG: &str = include_str!("../../../configs/gifts.toml");

/// The parsed catalog file.
#[derive(Debug, Clone)]
pub struct CatalogFile {
    /// The gifts to write into the catalog.
    pub gifts: Vec<CatalogGift>,
    /// The room rules, already validated.
    pub rules: RoomRules,
    /// The billing policy stored as version 1 when the store has none, already validated.
    pub billing: BillingPolicy,
    /// The leaderboards' reward tables stored as version 1 when the store has none, already
    /// validated.
    pub board_rewards: Vec<RewardTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    gifts: Vec<RawGift>,
    #[serde(default)]
    rules: RoomRules,
    #[serde(default)]
    billing: RawBilling,
    #[serde(default)]
    board_rewards: Vec<RawRewardTable>,
}

/// A `[[board_rewards]]` table: what one board of the whole app pays its top ranks when a
/// period closes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRewardTable {
    board: String,
    period: String,
    ranks: Vec<i64>,
}

impl RawRewardTable {
    fn table(self) -> anyhow::Result<RewardTable> {
        Ok(RewardTable {
            board: BoardKind::parse(&self.board).with_context(|| {
                format!(
                    "board_rewards: board {:?} is none of senders, receivers and rooms",
                    self.board
                )
            })?,
            period: BoardPeriod::parse(&self.period).with_context(|| {
                format!(
                    "board_rewards: period {:?} is none of day, week and month",
                    self.period
                )
            })?,
            ranks: self.ranks.into_iter().map(Coins).collect(),
        })
    }
}

/// The `[billing]` section: the default shares, the owner's turnover share, and
/// `[billing.overrides.<gift_id>]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBilling {
    #[serde(default)]
    recipient_bp: u32,
    #[serde(default)]
    owner_bp: u32,
    #[serde(default)]
    agency_bp: u32,
    #[serde(default)]
    turnover_bp: u32,
    #[serde(default)]
    overrides: std::collections::BTreeMap<String, RawShares>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShares {
    #[serde(default)]
    recipient_bp: u32,
    #[serde(default)]
    owner_bp: u32,
    #[serde(default)]
    agency_bp: u32,
}

impl RawBilling {
    fn policy(self) -> anyhow::Result<BillingPolicy> {
        let mut overrides = std::collections::BTreeMap::new();
        for (gift_id, shares) in self.overrides {
            let gift = GiftId::new(&gift_id)
                .with_context(|| format!("billing override: gift id {gift_id:?} is not valid"))?;
            overrides.insert(
                gift,
                BillingShares {
                    recipient_bp: shares.recipient_bp,
                    owner_bp: shares.owner_bp,
                    agency_bp: shares.agency_bp,
                },
            );
        }
        let policy = BillingPolicy {
            version: FIRST_BILLING_VERSION,
            shares: BillingShares {
                recipient_bp: self.recipient_bp,
                owner_bp: self.owner_bp,
                agency_bp: self.agency_bp,
            },
            overrides,
            turnover_bp: self.turnover_bp,
        };
        policy
            .validate()
            .context("the billing policy of the catalog file is not valid")?;
        Ok(policy)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGift {
    gift_id: String,
    name: String,
    price: i64,
    #[serde(default)]
    heat: i64,
    #[serde(default)]
    fuel: i64,
    #[serde(default)]
    lucky: bool,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

impl CatalogFile {
    /// Parses and checks a catalog file's text.
    pub fn parse(text: &str) -> anyhow::Result<CatalogFile> {
        let raw: RawFile = Figment::from(Toml::string(text))
            .extract()
            .context("the catalog file is not valid")?;
        raw.rules
            .validate()
            .context("the room rules of the catalog file are not valid")?;
        let mut gifts = Vec::with_capacity(raw.gifts.len());
        for gift in raw.gifts {
            let gift_id = GiftId::new(&gift.gift_id)
                .with_context(|| format!("gift id {:?} is not valid", gift.gift_id))?;
            anyhow::ensure!(
                gifts.iter().all(|g: &CatalogGift| g.gift_id != gift_id),
                "gift {gift_id} is listed twice"
            );
            let gift = CatalogGift {
                gift_id,
                name: gift.name,
                price: Coins(gift.price),
                heat: gift.heat,
                fuel: gift.fuel,
                lucky: gift.lucky,
                enabled: gift.enabled,
            };
            if let Some(problem) = gift.problem() {
                anyhow::bail!("gift {}: {problem}", gift.gift_id);
            }
            gifts.push(gift);
        }
        let board_rewards = raw
            .board_rewards
            .into_iter()
            .map(RawRewardTable::table)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let tables = RewardTables {
            version: 1,
            tables: board_rewards,
        };
        if let Some(problem) = tables.problem() {
            anyhow::bail!("the board rewards of the catalog file are not valid: {problem}");
        }
        Ok(CatalogFile {
            gifts,
            rules: raw.rules,
            billing: raw.billing.policy()?,
            board_rewards: tables.tables,
        })
    }

    /// Reads `path`, or the embedded copy when `path` does not exist.
    pub fn load(path: &Path) -> anyhow::Result<CatalogFile> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                tracing::info!(path = %path.display(), "loading the gift catalog and room rules");
                Self::parse(&text).with_context(|| format!("in {}", path.display()))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                tracing::info!(path = %path.display(), "no catalog file; using the built-in catalog and rules");
                Self::parse(EMBEDDED_CATALOG).context("in the built-in catalog")
            }
            Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Writes every gift of the file into the catalog.
    pub async fn upsert(&self, catalog: &GiftCatalogRef) -> anyhow::Result<()> {
        for gift in &self.gifts {
            catalog
                .put(gift)
                .await
                .with_context(|| format!("cannot store gift {}", gift.gift_id))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_catalog_is_valid_and_has_the_three_kinds_of_gift() {
        let file = CatalogFile::parse(EMBEDDED_CATALOG).unwrap();
        assert_eq!(file.rules, RoomRules::default());
        assert!(file.gifts.iter().any(|g| g.lucky));
        let prices: Vec<i64> = file.gifts.iter().map(|g| g.price.0).collect();
        assert!(prices.iter().any(|p| *p <= 20));
        assert!(prices.iter().any(|p| *p >= 1000));
    }

    #[test]
    fn bad_rules_stop_the_start() {
        let text = "[rules]\nmax_recipients = 50\n";
        let error = CatalogFile::parse(text).unwrap_err();
        assert!(format!("{error:#}").contains("max_recipients"), "{error:#}");
        let text = "[rules.lucky]\nexpected_return_bp = 9000\nentries = [{ multiplier = 1, weight = 1 }]\n";
        assert!(CatalogFile::parse(text).is_err());
    }

    #[test]
    fn the_billing_section_is_read_and_checked() {
        let file = CatalogFile::parse(EMBEDDED_CATALOG).unwrap();
        assert_eq!(file.billing.version, 1);
        assert!(file.billing.shares.recipient_bp > 0);
        let lucky = GiftId::new("lucky-clover").unwrap();
        assert!(
            file.billing.shares_for(&lucky).recipient_bp < file.billing.shares.recipient_bp,
            "lucky gifts pay less"
        );
        let none = CatalogFile::parse("").unwrap();
        assert_eq!(none.billing.shares, BillingShares::default());
        let over = "[billing]\nrecipient_bp = 9000\nowner_bp = 1001\n";
        let error = CatalogFile::parse(over).unwrap_err();
        assert!(format!("{error:#}").contains("10001"), "{error:#}");
        let bad_override = "[billing.overrides.rose]\nrecipient_bp = 10001\n";
        let error = CatalogFile::parse(bad_override).unwrap_err();
        assert!(format!("{error:#}").contains("rose"), "{error:#}");
    }

    #[test]
    fn bad_gifts_stop_the_start() {
        let negative = "[[gifts]]\ngift_id = \"g\"\nname = \"G\"\nprice = -1\n";
        assert!(CatalogFile::parse(negative).is_err());
        let twice = "[[gifts]]\ngift_id = \"g\"\nname = \"G\"\nprice = 1\n[[gifts]]\ngift_id = \"g\"\nname = \"G\"\nprice = 2\n";
        assert!(CatalogFile::parse(twice).is_err());
        let huge = "[[gifts]]\ngift_id = \"g\"\nname = \"G\"\nprice = 1\nheat = 1000000001\n";
        let error = CatalogFile::parse(huge).unwrap_err().to_string();
        assert!(error.contains("heat 1000000001"), "{error}");
        let unnamed = "[[gifts]]\ngift_id = \"g\"\nname = \" \"\nprice = 1\n";
        assert!(CatalogFile::parse(unnamed).is_err());
    }
}
