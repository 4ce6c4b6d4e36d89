//! [`BillingPolicies`], [`RocketSettingsStore`] and [`IncomeLedger`] of the
//! [`InMemoryStore`]: the policy's and the rocket's versions in maps, compared and set under
//! the store's one lock; the income ledger as a list with a set
//! of its keys, every credit checked whole before anything changes.

use async_trait::async_trait;
use room_domain::{BillingPolicy, Coins, UserId};

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{
    BillingPolicies, IncomeEntry, IncomeLedger, IncomeRecord, RocketSettingsStore,
    check_income_entries,
};

#[async_trait]
impl BillingPolicies for InMemoryStore {
    async fn current_policy(&self) -> Result<Option<BillingPolicy>> {
        Ok(self.lock().billing.values().next_back().cloned())
    }

    async fn get_policy(&self, version: u64) -> Result<Option<BillingPolicy>> {
        Ok(self.lock().billing.get(&version).cloned())
    }

    async fn put_policy(&self, policy: &BillingPolicy) -> Result<()> {
        put_next(
            &mut self.lock().billing,
            policy.version,
            policy,
            "billing policy",
        )
    }
}

/// Inserts `value` as `version` into `versions` if the newest there is the version before.
fn put_next<T: Clone>(
    versions: &mut std::collections::BTreeMap<u64, T>,
    version: u64,
    value: &T,
    what: &str,
) -> Result<()> {
    if version == 0 {
        return Err(Error::Invalid(format!("{what} version 0")));
    }
    let newest = versions.keys().next_back().copied().unwrap_or(0);
    if newest != version - 1 {
        return Err(Error::Conflict(format!(
            "{what} version {} follows {newest}, not {}",
            newest + 1,
            version - 1
        )));
    }
    versions.insert(version, value.clone());
    Ok(())
}

#[async_trait]
impl RocketSettingsStore for InMemoryStore {
    async fn current_rocket(&self) -> Result<Option<room_domain::RocketSettings>> {
        Ok(self.lock().rocket.values().next_back().cloned())
    }

    async fn put_rocket(&self, settings: &room_domain::RocketSettings) -> Result<()> {
        put_next(
            &mut self.lock().rocket,
            settings.version,
            settings,
            "rocket settings",
        )
    }
}

#[async_trait]
impl IncomeLedger for InMemoryStore {
    async fn credit_income(&self, entries: &[IncomeEntry]) -> Result<u32> {
        check_income_entries(entries)?;
        let mut t = self.lock();
        // Work out every new entry and balance first: nothing changes unless all fit.
        let mut fresh: Vec<&IncomeEntry> = Vec::new();
        let mut balances: std::collections::HashMap<UserId, Coins> =
            std::collections::HashMap::new();
        for entry in entries {
            let key = (
                entry.sender.clone(),
                entry.order_id.clone(),
                entry.recipient.clone(),
                entry.part,
            );
            if t.income_keys.contains(&key) || fresh.iter().any(|f| f.key() == entry.key()) {
                continue;
            }
            let balance = balances
                .get(&entry.user)
                .or_else(|| t.income_balances.get(&entry.user))
                .copied()
                .unwrap_or_default();
            let after = balance.checked_add(entry.amount).ok_or_else(|| {
                Error::Invalid(format!("income balance overflow for {}", entry.user))
            })?;
            balances.insert(entry.user.clone(), after);
            fresh.push(entry);
        }
        for entry in &fresh {
            t.income_keys.insert((
                entry.sender.clone(),
                entry.order_id.clone(),
                entry.recipient.clone(),
                entry.part,
            ));
            let id = i64::try_from(t.income_entries.len()).unwrap_or(i64::MAX) + 1;
            let mut entry = (*entry).clone();
            // A later part of an order keeps the gift's fields of its first credit.
            if let Some(first) = t
                .income_entries
                .iter()
                .find(|r| r.entry.sender == entry.sender && r.entry.order_id == entry.order_id)
            {
                entry.room_id = first.entry.room_id.clone();
                entry.gift_id = first.entry.gift_id.clone();
                entry.billing_version = first.entry.billing_version;
                entry.at = first.entry.at;
            }
            t.income_entries.push(IncomeRecord { id, entry });
        }
        t.income_balances.extend(balances);
        Ok(u32::try_from(fresh.len()).unwrap_or(u32::MAX))
    }

    async fn income_balance(&self, user: &UserId) -> Result<Coins> {
        Ok(self
            .lock()
            .income_balances
            .get(user)
            .copied()
            .unwrap_or_default())
    }

    async fn list_income(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IncomeRecord>> {
        let t = self.lock();
        Ok(t.income_entries
            .iter()
            .rev()
            .filter(|record| before.is_none_or(|before| record.id < before))
            .filter(|record| &record.entry.user == user)
            .take(limit.min(crate::ports::MAX_INCOME_PAGE) as usize)
            .cloned()
            .collect())
    }
}
