//! [`RecentEventIds`]: the last N `event_id`s a consumer handled, to drop repeats.

use std::collections::{HashSet, VecDeque};

/// A bounded set of event ids, forgetting the oldest first. Repeats reach a consumer soon
/// after the original (the outbox publishes a message again when its acknowledgement was
/// lost), so the most recent ids are the ones worth remembering.
///
/// Ids rather than a last seq per room: a room's events in Kafka are rising in seq but not
/// gapless (only durable events are published), and after a broker failure one may, rarely,
/// arrive after a later one of its room; an id test never drops such a first arrival.
#[derive(Debug)]
pub(crate) struct RecentEventIds {
    capacity: usize,
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl RecentEventIds {
    /// An empty set that holds at most `capacity` ids (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        // The set grows as ids arrive; a large capacity costs nothing until then.
        RecentEventIds {
            capacity,
            ids: HashSet::new(),
            order: VecDeque::new(),
        }
    }

    /// Whether `event_id` is among the remembered ones.
    pub(crate) fn contains(&self, event_id: &str) -> bool {
        self.ids.contains(event_id)
    }

    /// Remembers `event_id`, forgetting the oldest one when full.
    pub(crate) fn insert(&mut self, event_id: &str) {
        if self.ids.contains(event_id) {
            return;
        }
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        self.ids.insert(event_id.to_owned());
        self.order.push_back(event_id.to_owned());
    }

    /// How many ids are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_at_most_capacity_ids_and_forgets_the_oldest() {
        let mut seen = RecentEventIds::new(2);
        seen.insert("r:1");
        seen.insert("r:2");
        seen.insert("r:2");
        assert!(seen.contains("r:1") && seen.contains("r:2"));
        seen.insert("r:3");
        assert_eq!(seen.len(), 2);
        assert!(!seen.contains("r:1"));
        assert!(seen.contains("r:2") && seen.contains("r:3"));
    }
}
