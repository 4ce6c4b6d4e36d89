//! [`ConsumerPositions`]: one row per consumer, read from the reader pool and moved by the
//! writer with a conditional insert or update (compare-and-set).

use async_trait::async_trait;
use room_app::ports::ConsumerPositions;

use crate::codec::db;
use crate::{Result, SqliteStore};

#[async_trait]
impl ConsumerPositions for SqliteStore {
    async fn get_position(&self, consumer: &str) -> Result<Option<i64>> {
        let position: Option<(i64,)> =
            sqlx::query_as("SELECT position FROM room_consumer_positions WHERE name = ?1")
                .bind(consumer)
                .fetch_optional(&self.readers)
                .await
                .map_err(db)?;
        Ok(position.map(|(position,)| position))
    }

    async fn advance_position(&self, consumer: &str, from: Option<i64>, to: i64) -> Result<bool> {
        let moved = match from {
            None => {
                self.execute(
                    "INSERT INTO room_consumer_positions (name, position) VALUES (?1, ?2)
                     ON CONFLICT (name) DO NOTHING",
                    (consumer.to_owned(), to),
                )
                .await?
            }
            Some(from) => {
                self.execute(
                    "UPDATE room_consumer_positions SET position = ?3
                     WHERE name = ?1 AND position = ?2",
                    (consumer.to_owned(), from, to),
                )
                .await?
            }
        };
        Ok(moved > 0)
    }
}
