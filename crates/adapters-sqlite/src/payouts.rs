//! [`Payouts`]: credits owed by commits, oldest first, until the payout worker deletes them.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{CreditKind, Payout, Payouts};
use room_domain::Coins;
use rusqlite::{Connection, params};

use crate::codec::{col, db, id_col, sql};
use crate::{Result, SqliteStore};

fn kind_name(kind: CreditKind) -> &'static str {
    match kind {
        CreditKind::Admin => "admin",
        CreditKind::Refund => "refund",
        CreditKind::LuckyReward => "lucky_reward",
        CreditKind::RocketReward => "rocket_reward",
        CreditKind::BoardReward => "board_reward",
    }
}

fn kind_from(name: &str) -> Result<CreditKind> {
    Ok(match name {
        "admin" => CreditKind::Admin,
        "refund" => CreditKind::Refund,
        "lucky_reward" => CreditKind::LuckyReward,
        "rocket_reward" => CreditKind::RocketReward,
        "board_reward" => CreditKind::BoardReward,
        other => return Err(Error::corrupt(format!("stored payout kind {other:?}"))),
    })
}

/// A payout encoded for its table.
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

impl PayoutRow {
    /// Records the owed credit unless one is already owed under the same op id: that one is
    /// kept as first recorded, in its place in the queue (a replay never changes a payout).
    /// Runs inside a commit.
    pub(crate) fn record(&self, conn: &Connection) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO room_payouts (op_id, kind, user_id, amount, room_id)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (op_id) DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                self.op_id,
                self.kind,
                self.user_id,
                self.amount,
                self.room_id
            ])
        })
        .map_err(sql)?;
        Ok(())
    }
}

#[async_trait]
impl Payouts for SqliteStore {
    async fn list_pending(&self, after: Option<String>, limit: u32) -> Result<Vec<Payout>> {
        let rows = sqlx::query(
            "SELECT op_id, kind, user_id, amount, room_id FROM room_payouts
             WHERE id > COALESCE((SELECT id FROM room_payouts WHERE op_id = ?1), 0)
             ORDER BY id LIMIT ?2",
        )
        .bind(after)
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
        self.execute(
            "DELETE FROM room_payouts WHERE op_id = ?1",
            (op_id.to_owned(),),
        )
        .await?;
        Ok(())
    }
}
