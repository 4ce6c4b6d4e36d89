//! [`ConsumerPositions`] of the [`InMemoryStore`]: a map from consumer name to position,
//! compared and set under the store's one lock.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::error::Result;
use crate::ports::ConsumerPositions;

#[async_trait]
impl ConsumerPositions for InMemoryStore {
    async fn get_position(&self, consumer: &str) -> Result<Option<i64>> {
        Ok(self.lock().positions.get(consumer).copied())
    }

    async fn advance_position(&self, consumer: &str, from: Option<i64>, to: i64) -> Result<bool> {
        let mut t = self.lock();
        if t.positions.get(consumer).copied() != from {
            return Ok(false);
        }
        t.positions.insert(consumer.to_owned(), to);
        Ok(true)
    }
}
