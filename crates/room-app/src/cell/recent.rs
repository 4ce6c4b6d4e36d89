//! Recent replies: what a cell remembers of the commands it applied, within a count and a
//! byte budget, to answer a repeat without a storage read.

use std::sync::Arc;

use room_domain::CommandId;

use super::active::Cell;
use super::mailbox::CommandRequest;
use super::plan::Outcome;
use crate::ports::{CommandReply, StoredEvent};

impl Cell {
    /// Remembers the replies of applied commands, within the count and the byte budget: the
    /// oldest go first, and a reply larger than the whole budget is not kept. A forgotten one
    /// is answered from the log when its command repeats.
    pub(super) fn remember(&mut self, commands: &[CommandRequest], outcomes: &[Outcome]) {
        let cap = self.inner.config.recent_commands;
        let budget = self.inner.config.recent_commands_bytes;
        for (command, outcome) in commands.iter().zip(outcomes) {
            let Outcome::Done(Ok(reply)) = outcome else {
                continue;
            };
            if reply.events.is_empty() || self.recent.contains_key(&command.command.command_id) {
                continue;
            }
            let id = command.command.command_id.clone();
            let bytes = reply_bytes(&id, reply);
            if cap == 0 || bytes > budget {
                continue;
            }
            while self.recent_order.len() >= cap || self.recent_bytes + bytes > budget {
                let Some((old, old_bytes)) = self.recent_order.pop_front() else {
                    break;
                };
                self.recent.remove(&old);
                self.recent_bytes -= old_bytes;
            }
            self.recent.insert(id.clone(), reply.clone());
            self.recent_order.push_back((id, bytes));
            self.recent_bytes += bytes;
        }
        metrics::histogram!("room_cell_recent_bytes").record(self.recent_bytes as f64);
    }
}

/// What a remembered reply costs, roughly: its id and the entry around it, plus what each
/// event holds ([`crate::footprint::estimate`]: the text its strings hold dominates) and its
/// place in the reply. The estimate walks the events once and writes nothing.
fn reply_bytes(id: &CommandId, reply: &CommandReply) -> usize {
    let held: usize = reply
        .events
        .iter()
        .map(|stored| crate::footprint::estimate(&stored.event))
        .sum();
    const ENTRY: usize = 2 * size_of::<CommandId>()
        + size_of::<Arc<CommandReply>>()
        + size_of::<CommandReply>()
        + size_of::<(CommandId, usize)>();
    ENTRY + 2 * id.as_str().len() + held + reply.events.len() * size_of::<StoredEvent>()
}
