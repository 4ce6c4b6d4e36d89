//! [`InMemoryLeases`]: a lease table with expiry shared by the nodes of one test, the fake
//! that [`lease_suite`](super::lease_suite) is first checked against.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use room_domain::RoomId;
use tokio::time::Instant;

use crate::Result;
use crate::ports::{Lease, LeaseHolder, LeaseRef};

#[derive(Debug, Default)]
struct Table {
    /// Room -> (holder, expiry).
    leases: HashMap<RoomId, (String, Instant)>,
    /// Node -> (advertised URL, expiry).
    nodes: HashMap<String, (String, Instant)>,
    /// Group -> node -> expiry.
    groups: HashMap<String, HashMap<String, Instant>>,
    /// Lock name -> (token, expiry).
    locks: HashMap<String, (String, Instant)>,
    /// Tokens handed out so far.
    tokens: u64,
}

/// Leases of several nodes over one table, with tokio time (virtual when a test pauses it).
#[derive(Debug, Clone)]
pub struct InMemoryLeases {
    table: Arc<Mutex<Table>>,
    ttl: Duration,
}

impl InMemoryLeases {
    /// An empty table whose leases and registrations last `ttl` unless renewed.
    pub fn new(ttl: Duration) -> Self {
        InMemoryLeases {
            table: Arc::default(),
            ttl,
        }
    }

    /// The lease of node `node_id`, reachable at `url`.
    pub fn node(&self, node_id: &str, url: &str) -> LeaseRef {
        Arc::new(InMemoryLease {
            leases: self.clone(),
            node_id: node_id.to_owned(),
            url: url.to_owned(),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Table, Instant) -> T) -> T {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        table.leases.retain(|_, (_, expiry)| *expiry > now);
        table.nodes.retain(|_, (_, expiry)| *expiry > now);
        for members in table.groups.values_mut() {
            members.retain(|_, expiry| *expiry > now);
        }
        table.locks.retain(|_, (_, expiry)| *expiry > now);
        f(&mut table, now)
    }
}

/// One node's view of an [`InMemoryLeases`] table.
#[derive(Debug)]
struct InMemoryLease {
    leases: InMemoryLeases,
    node_id: String,
    url: String,
}

impl InMemoryLease {
    fn register(&self, table: &mut Table, now: Instant) {
        table.nodes.insert(
            self.node_id.clone(),
            (self.url.clone(), now + self.leases.ttl),
        );
    }

    fn extend(&self, table: &mut Table, now: Instant, room_id: &RoomId) -> bool {
        match table.leases.get_mut(room_id) {
            Some((holder, expiry)) if *holder == self.node_id => {
                *expiry = now + self.leases.ttl;
                true
            }
            _ => false,
        }
    }
}

#[async_trait]
impl Lease for InMemoryLease {
    async fn acquire(&self, room_id: &RoomId) -> Result<bool> {
        Ok(self.leases.with(|table, now| {
            self.register(table, now);
            if self.extend(table, now, room_id) {
                return true;
            }
            if table.leases.contains_key(room_id) {
                return false;
            }
            table.leases.insert(
                room_id.clone(),
                (self.node_id.clone(), now + self.leases.ttl),
            );
            true
        }))
    }

    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        Ok(self.leases.with(|table, now| {
            self.register(table, now);
            rooms
                .iter()
                .map(|room_id| self.extend(table, now, room_id))
                .collect()
        }))
    }

    async fn release(&self, room_id: &RoomId) -> Result<()> {
        self.leases.with(|table, _| {
            if table
                .leases
                .get(room_id)
                .is_some_and(|(holder, _)| *holder == self.node_id)
            {
                table.leases.remove(room_id);
            }
        });
        Ok(())
    }

    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>> {
        Ok(self.leases.with(|table, _| {
            table.leases.get(room_id).map(|(holder, _)| LeaseHolder {
                node_id: holder.clone(),
                url: table.nodes.get(holder).map(|(url, _)| url.clone()),
            })
        }))
    }

    async fn join_group(&self, group: &str) -> Result<Vec<String>> {
        Ok(self.leases.with(|table, now| {
            let members = table.groups.entry(group.to_owned()).or_default();
            members.insert(self.node_id.clone(), now + self.leases.ttl);
            let mut others: Vec<String> = members
                .keys()
                .filter(|node| **node != self.node_id)
                .cloned()
                .collect();
            others.sort();
            others
        }))
    }

    async fn leave_group(&self, group: &str) -> Result<()> {
        self.leases.with(|table, _| {
            if let Some(members) = table.groups.get_mut(group) {
                members.remove(&self.node_id);
            }
        });
        Ok(())
    }

    async fn try_lock(&self, name: &str) -> Result<Option<String>> {
        Ok(self.leases.with(|table, now| {
            if table.locks.contains_key(name) {
                return None;
            }
            table.tokens += 1;
            let token = format!("{}:{}", self.node_id, table.tokens);
            table
                .locks
                .insert(name.to_owned(), (token.clone(), now + self.leases.ttl));
            Some(token)
        }))
    }

    async fn unlock(&self, name: &str, token: &str) -> Result<()> {
        self.leases.with(|table, _| {
            if table.locks.get(name).is_some_and(|(held, _)| held == token) {
                table.locks.remove(name);
            }
        });
        Ok(())
    }
}
