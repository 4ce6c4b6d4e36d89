//! Robot visitors for quiet human rooms: a room with a few people in it, fewer than a
//! threshold, gets robot listeners so that it does not look empty; they leave once enough
//! people are there, or once nobody is. Visitors only listen: they never take a seat, so
//! never the last free one from a person.
//!
//! [`Visitors::pass`] is a background pass, run by one node of the cluster at a time (under a
//! claim): it walks the open rooms by heat, reads the quiet ones that some node runs (through
//! that node: a room nobody runs is not taken just to be looked at), and sends the visitors'
//! joins and leaves as robot commands, forwarded to that node.
//! Visitors are the robots `{prefix}visitor-{n}` of a pool; the pass remembers which one it
//! sent where, so that one visitor is in one room at a time (a pass that takes over after
//! another node's starts from what the rooms show).

use std::collections::{HashMap, HashSet};

use room_domain::{CommandKind, RoomId, RoomStatus, UserId};

use crate::error::{Error, Result};
use crate::ports::RoomSummary;
use crate::service::RoomService;

/// How rooms get visitors.
#[derive(Debug, Clone)]
pub struct VisitorConfig {
    /// A room with at least one person and fewer than this many gets visitors; 0: never.
    pub below: u32,
    /// The most visitors one room gets.
    pub per_room: u32,
    /// The visitor pool's size: robots `{prefix}visitor-0` to `{prefix}visitor-{pool - 1}`.
    pub pool: u32,
    /// The robot id prefix.
    pub id_prefix: String,
    /// The most open rooms one pass looks at, hottest first.
    pub scan: u32,
    /// How often passes run: a pass that comes more than three periods after the previous
    /// one (the claim was elsewhere meanwhile) forgets where it sent visitors and reads it
    /// from the rooms again.
    pub every: std::time::Duration,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisitReport {
    /// Rooms whose state was read.
    pub read: u64,
    /// Visitors that joined.
    pub joined: u64,
    /// Visitors that left.
    pub left: u64,
}

/// The visitor pass and what it remembers between passes.
#[derive(Debug)]
pub struct Visitors {
    config: VisitorConfig,
    /// Visitor -> the room it was sent to.
    placed: HashMap<UserId, RoomId>,
    /// When the previous pass ran.
    last_pass: Option<tokio::time::Instant>,
}

impl Visitors {
    /// A pass with nobody placed yet.
    pub fn new(config: VisitorConfig) -> Self {
        Visitors {
            config,
            placed: HashMap::new(),
            last_pass: None,
        }
    }

    fn visitor_prefix(&self) -> String {
        format!("{}visitor-", self.config.id_prefix)
    }

    /// Looks at up to `scan` open rooms and moves visitors in or out of them.
    pub async fn pass(&mut self, service: &RoomService) -> Result<VisitReport> {
        let mut report = VisitReport::default();
        if self.config.below == 0 || self.config.pool == 0 {
            return Ok(report);
        }
        let now = tokio::time::Instant::now();
        if self
            .last_pass
            .is_some_and(|last| now.duration_since(last) > self.config.every * 3)
        {
            // Another node sent visitors meanwhile: what this one remembers is stale.
            self.placed.clear();
        }
        self.last_pass = Some(now);
        let mut cursor = None;
        let mut looked = 0;
        let mut seen: HashSet<RoomId> = HashSet::new();
        while looked < self.config.scan {
            let page = service
                .ports()
                .directory
                .list_open_by_heat(cursor.clone(), (self.config.scan - looked).min(200))
                .await?;
            let Some(last) = page.last() else { break };
            cursor = Some((last.heat, last.room_id.clone()));
            looked += page.len() as u32;
            for summary in page {
                seen.insert(summary.room_id.clone());
                if let Err(error) = self.visit(service, &summary, &mut report).await {
                    tracing::debug!(room_id = %summary.room_id, error = %error, "visitors skipped a room");
                }
            }
        }
        // Rooms visited before and not seen now (closed, or out of the scan): called back.
        let elsewhere: Vec<(UserId, RoomId)> = self
            .placed
            .iter()
            .filter(|(_, room)| !seen.contains(*room))
            .map(|(visitor, room)| (visitor.clone(), room.clone()))
            .collect();
        for (visitor, room) in elsewhere {
            // Not taken onto this node to be left: called back once a node runs it again.
            if !matches!(service.runtime().running_on(&room).await, Ok(Some(_))) {
                continue;
            }
            match service
                .robot_command(&room, &visitor, CommandKind::Leave)
                .await
            {
                Ok(_) => report.left += 1,
                Err(Error::Rejected(_)) => {}
                Err(_) => continue,
            }
            self.placed.remove(&visitor);
        }
        metrics::counter!("room_robot_visitors_joined_total").increment(report.joined);
        metrics::counter!("room_robot_visitors_left_total").increment(report.left);
        metrics::gauge!("room_robot_visitors").set(self.placed.len() as f64);
        Ok(report)
    }

    async fn visit(
        &mut self,
        service: &RoomService,
        summary: &RoomSummary,
        report: &mut VisitReport,
    ) -> Result<()> {
        let room = &summary.room_id;
        // Robot rooms are owned by a robot: their own robots keep them lively.
        if summary.owner.as_str().starts_with(&self.config.id_prefix) || summary.online == 0 {
            return Ok(());
        }
        let ours = self.placed.values().any(|placed| placed == room);
        if !ours && summary.online >= self.config.below + self.config.per_room {
            // Enough people for certain, and no visitor of ours to call back.
            return Ok(());
        }
        // Reading a room nobody runs would take it onto this node: such a room (its people
        // only listening, its cell idle) is left as it is until a node runs it again.
        if service.runtime().running_on(room).await?.is_none() {
            return Ok(());
        }
        let prefix = self.visitor_prefix();
        let (open, people, visitors) = service
            .runtime()
            .query(room, move |state| {
                let people = state.members.values().filter(|m| !m.robot).count() as u32;
                let visitors: Vec<UserId> = state
                    .members
                    .iter()
                    .filter(|(user, m)| m.robot && user.as_str().starts_with(&prefix))
                    .map(|(user, _)| user.clone())
                    .collect();
                (state.status == RoomStatus::Open, people, visitors)
            })
            .await?;
        report.read += 1;
        // What the room shows wins over what was remembered (a visitor kicked meanwhile is
        // free again).
        self.placed
            .retain(|visitor, placed| placed != room || visitors.contains(visitor));
        for visitor in &visitors {
            self.placed.insert(visitor.clone(), room.clone());
        }
        let wanted = if !open || people == 0 || people >= self.config.below {
            0
        } else {
            (self.config.below - people).min(self.config.per_room)
        } as usize;
        if visitors.len() > wanted {
            for visitor in &visitors[wanted..] {
                match service
                    .robot_command(room, visitor, CommandKind::Leave)
                    .await
                {
                    Ok(_) => report.left += 1,
                    Err(Error::Rejected(_)) => {}
                    Err(error) => return Err(error),
                }
                self.placed.remove(visitor);
            }
            return Ok(());
        }
        for _ in visitors.len()..wanted {
            let Some(visitor) = self.free_visitor() else {
                break;
            };
            let join = CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            };
            match service.robot_command(room, &visitor, join).await {
                Ok(_) => {
                    report.joined += 1;
                    self.placed.insert(visitor, room.clone());
                }
                // Locked, banned, full: this room does without.
                Err(Error::Rejected(_)) => break,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// A visitor of the pool not placed anywhere, the lowest number first.
    fn free_visitor(&self) -> Option<UserId> {
        let prefix = self.visitor_prefix();
        (0..self.config.pool)
            .filter_map(|n| UserId::new(format!("{prefix}{n}")).ok())
            .find(|visitor| !self.placed.contains_key(visitor))
    }
}
