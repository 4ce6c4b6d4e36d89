//! [`Payouts`]: credits owed by commits (recorded by the `room_commit` trigger), oldest first,
//! until the payout worker deletes them.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{CreditKind, Payout, Payouts};
use room_domain::Coins;
use serde::Serialize;

use crate::codec::{col, db, id_col};
use crate::{Result, SqliteStore};

fn kind_name(kind: CreditKind) -> &'static str {
    match kind {
        CreditKind::Admin => "admin",
        CreditKind::Refund => "refund",
        CreditKind::LuckyReward => "lucky_reward",
        CreditKind::RocketReward => "rocket_reward",
    }
}

fn kind_from(name: &str) -> Result<CreditKind> {
    Ok(match name {
        "admin" => CreditKind::Admin,
        "refund" => CreditKind::Refund,
        "lucky_reward" => CreditKind::LuckyReward,
        "rocket_reward" => CreditKind::RocketReward,
        other => return Err(Error::corrupt(format!("stored payout kind {other:?}"))),
    })
}

/// A payout as the `room_commit` view takes it.
#[derive(Serialize)]
pub(crate) struct PayoutRow {
    op_id: String,
    kind: &'static str,
    user_id: String,
    amount: i64,
    room_id: String,
}

impl PayoutRow {
    pub(crate) fn new(payout: &Payout) -> Self {
        PayoutRow {
            op_id: payout.op_id.clone(),
            kind: kind_name(payout.kind),
            user_id: payout.user.to_string(),
            amount: payout.amount.0,
            room_id: payout.room_id.to_string(),
        }
    }
}

#[async_trait]
impl Payouts for SqliteStore {
    async fn list_pending(&self, limit: u32) -> Result<Vec<Payout>> {
        let rows = sqlx::query(
            "SELECT op_id, kind, user_id, amount, room_id FROM room_payouts ORDER BY id LIMIT ?1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|row| {
                Ok(Payout {
                    op_id: col(row, "op_id")?,
                    kind: kind_from(&col::<String>(row, "kind")?)?,
                    user: id_col(row, "user_id")?,
                    amount: Coins(col(row, "amount")?),
                    room_id: id_col(row, "room_id")?,
                })
            })
            .collect()
    }

    async fn delete(&self, op_id: &str) -> Result<()> {
        let op_id = op_id.to_owned();
        self.write_statement(move |conn| {
            Box::pin(async move {
                sqlx::query("DELETE FROM room_payouts WHERE op_id = ?1")
                    .bind(op_id)
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                Ok(())
            })
        })
        .await
    }
}
