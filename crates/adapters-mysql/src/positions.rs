//! [`ConsumerPositions`]: one row per consumer, moved by one conditional statement
//! (compare-and-set): an `INSERT IGNORE` for the first position, an `UPDATE ... WHERE
//! position = ?` after it.

use async_trait::async_trait;
use room_app::ports::ConsumerPositions;

use crate::{MySqlStore, Result};

#[async_trait]
impl ConsumerPositions for MySqlStore {
    async fn get_position(&self, consumer: &str) -> Result<Option<i64>> {
        self.retrying("get_consumer_position", || async move {
            let position: Option<(i64,)> =
                sqlx::query_as("SELECT position FROM room_consumer_positions WHERE name = ?")
                    .bind(consumer)
                    .fetch_optional(&self.background)
                    .await?;
            Ok(position.map(|(position,)| position))
        })
        .await
    }

    async fn advance_position(&self, consumer: &str, from: Option<i64>, to: i64) -> Result<bool> {
        self.retrying("advance_consumer_position", || async move {
            let moved =
                match from {
                    None => sqlx::query(
                        "INSERT IGNORE INTO room_consumer_positions (name, position) VALUES (?, ?)",
                    )
                    .bind(consumer)
                    .bind(to)
                    .execute(&self.background)
                    .await?,
                    Some(from) => {
                        sqlx::query(
                            "UPDATE room_consumer_positions SET position = ?
                         WHERE name = ? AND position = ?",
                        )
                        .bind(to)
                        .bind(consumer)
                        .bind(from)
                        .execute(&self.background)
                        .await?
                    }
                };
            Ok(moved.rows_affected() > 0)
        })
        .await
    }
}
