//! Group commit: a batch of requests planned, committed in ONE transaction conditional on the
//! cell's epoch and version, and answered; and what a failed commit leads to (the cell fenced,
//! the batch split, repeats answered from the log, the state reloaded).

use std::sync::Arc;
use std::time::Instant;

use room_domain::CommandId;

use super::active::{Cell, Stop};
use super::mailbox::{CommandRequest, Mailbox, RecentReplies, Request};
use super::plan::{Outcome, is_rocket_reset};
use crate::error::{Error, Result};
use crate::ports::CommandReply;

impl Cell {
    /// Decides, evolves and commits one batch, then answers. Returns `Some(Stop::Fenced)` when
    /// the room is no longer ours.
    pub(super) async fn process(
        &mut self,
        batch: Vec<Request>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let mut commands = Vec::with_capacity(batch.len());
        let mut queries = Vec::new();
        for request in batch {
            match request {
                Request::Command(command) => commands.push(*command),
                Request::Query(query) => queries.push(query),
                // Nothing is in flight yet: the state is what storage holds.
                Request::Peek(peek) => peek(&self.state),
                Request::Recent(reply) => {
                    let _ = reply.send(RecentReplies {
                        count: self.recent.len(),
                        bytes: self.recent_bytes,
                    });
                }
            }
        }
        let stop = if commands.is_empty() {
            None
        } else {
            self.process_commands(commands, mailbox).await
        };
        // Past the commit (or the reload after a failed one), the state is what storage
        // holds. A cell that stops drops the queries, which answers them NotOwner.
        queries.append(&mut mailbox.held_queries);
        if stop.is_none() {
            for query in queries {
                query(&self.state);
            }
        }
        stop
    }

    async fn process_commands(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let started = Instant::now();
        let mut plan = self.plan(&commands);
        self.answer_repeats_from_log(&commands, &mut plan.outcomes)
            .await;
        if plan.batch.events.is_empty() {
            self.answer(commands, plan.outcomes);
            return None;
        }
        let store = self.inner.deps.store.clone();
        // A commit that hangs (a half-open connection) must not wedge the room while the
        // keeper renews its lease: past half the TTL its outcome is unknown, the cell stops
        // and lets the room go, and the next activation's epoch fences the commit if it
        // lands late.
        let deadline = self.inner.config.commit_deadline();
        let committed = mailbox
            .hold_while(
                &self.state,
                tokio::time::timeout(deadline, store.commit(&plan.batch)),
            )
            .await;
        let Ok(committed) = committed else {
            tracing::error!(room_id = %self.room_id, epoch = self.epoch, deadline = ?deadline, "commit outlasted its deadline; letting the room go");
            metrics::counter!("room_cell_commit_deadlines_total").increment(1);
            self.inner.forget(&self.room_id, self.id);
            for command in commands {
                let _ = command.reply.send(Err(Error::Unavailable(format!(
                    "room {}: the commit took longer than {deadline:?}; its outcome is unknown",
                    self.room_id
                ))));
            }
            return Some(Stop::Abandoned);
        };
        metrics::histogram!("room_cell_commit_seconds").record(started.elapsed().as_secs_f64());
        metrics::histogram!("room_cell_batch_commands").record(commands.len() as f64);
        match committed {
            Ok(()) => {
                if let Some(reset) = plan.batch.timers.iter().find(|t| is_rocket_reset(t)) {
                    self.reset_armed_at = Some(reset.due_at);
                }
                self.remember(&commands, &plan.outcomes);
                let display = std::mem::take(&mut plan.display);
                self.answer(commands, plan.outcomes);
                if !display.is_empty() {
                    self.inner
                        .deps
                        .messenger
                        .publish(&self.room_id, display)
                        .await;
                }
                if self.state.version - self.snapshot_version >= self.inner.config.snapshot_every {
                    self.write_snapshot().await;
                }
                None
            }
            Err(Error::NotOwner(_)) | Err(Error::Conflict(_)) => {
                tracing::warn!(room_id = %self.room_id, epoch = self.epoch, "commit fenced; stopping the cell");
                metrics::counter!("room_cell_fenced_total").increment(1);
                // Leave the registry before answering, so that a caller's retry activates a
                // fresh cell instead of landing in this one's closing mailbox.
                self.inner.forget(&self.room_id, self.id);
                for command in commands {
                    let _ = command
                        .reply
                        .send(Err(Error::NotOwner(self.room_id.to_string())));
                }
                Some(Stop::Fenced)
            }
            Err(Error::AlreadyExists(_)) => self.resolve_duplicates(commands, mailbox).await,
            Err(error) if !error.is_retryable() && commands.len() > 1 => {
                // The store refused the batch for good, and so wrote nothing: one command in it
                // may be the culprit. Each runs again in a commit of its own, on the state
                // rebuilt from storage, so the bad one fails alone and the others apply.
                tracing::warn!(room_id = %self.room_id, error = %error, commands = commands.len(), "commit refused; committing its commands one by one");
                metrics::counter!("room_cell_commit_errors_total").increment(1);
                metrics::counter!("room_cell_batch_splits_total").increment(1);
                self.split(commands, mailbox).await
            }
            Err(error) => {
                // A retryable failure leaves the outcome unknown: the transaction may have
                // committed. Callers retry under the same command ids; the state is rebuilt
                // from what storage holds. A definite failure (the store refused what it was
                // sent) wrote nothing and is the answer: the batch held this one command
                // only, since a larger one refused for good is split above.
                tracing::warn!(room_id = %self.room_id, error = %error, "commit failed");
                metrics::counter!("room_cell_commit_errors_total").increment(1);
                let definite = !error.is_retryable();
                for command in commands {
                    let answer = match &error {
                        // The domain accepted the command: whatever the store refused for
                        // good is the service's fault, never the caller's.
                        Error::Internal(_) | Error::Corrupt(_) if definite => error.clone(),
                        // Another drive settled the gift order: the saga reads it again.
                        Error::OrderSettled(_) => error.clone(),
                        _ if definite => Error::internal(&error),
                        _ => Error::Unavailable(error.to_string()),
                    };
                    let _ = command.reply.send(Err(answer));
                }
                self.reload().await
            }
        }
    }

    /// A command that changes nothing now (a no-op or a rejection) may repeat one that changed
    /// something before this cell could remember it (an earlier activation, a reload): answer
    /// it from the log, as the first time. A command with events needs no lookup: the commit
    /// refuses a stored id.
    async fn answer_repeats_from_log(&self, commands: &[CommandRequest], outcomes: &mut [Outcome]) {
        for (request, outcome) in commands.iter().zip(outcomes.iter_mut()) {
            let unchanged = match outcome {
                Outcome::Done(Ok(reply)) => reply.events.is_empty(),
                Outcome::Done(Err(Error::Rejected(_))) => true,
                _ => false,
            };
            if !unchanged {
                continue;
            }
            match self.stored_reply(&request.command.command_id).await {
                Ok(Some(reply)) => *outcome = Outcome::Done(Ok(reply)),
                Ok(None) => {}
                Err(error) => *outcome = Outcome::Done(Err(error)),
            }
        }
    }

    /// Commits each command in a batch of its own, after the state of a refused batch is
    /// taken back.
    async fn split(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        match self.reload_for_retry(commands).await {
            Ok(commands) => self.one_by_one(commands, mailbox).await,
            Err(stop) => Some(stop),
        }
    }

    /// Takes back the state of a batch the store refused, from storage, before its commands
    /// run again. When that fails the cell stops, and they are answered as unavailable.
    async fn reload_for_retry(
        &mut self,
        commands: Vec<CommandRequest>,
    ) -> Result<Vec<CommandRequest>, Stop> {
        let Some(stop) = self.reload().await else {
            return Ok(commands);
        };
        for command in commands {
            let _ = command
                .reply
                .send(Err(Error::Unavailable("room reload failed".into())));
        }
        Err(stop)
    }

    /// Runs each command in a batch of its own, in order. When the cell stops on one, the
    /// commands after it are answered [`Error::NotOwner`] (retryable): they never ran.
    async fn one_by_one(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let mut commands = commands.into_iter();
        while let Some(command) = commands.next() {
            // A batch of one is never split again, so this recursion is one level deep.
            if let Some(stop) = Box::pin(self.process_commands(vec![command], mailbox)).await {
                for command in commands {
                    let _ = command
                        .reply
                        .send(Err(Error::NotOwner(self.room_id.to_string())));
                }
                return Some(stop);
            }
        }
        None
    }

    /// Some command of the batch is already in the log (a retry after a restart): answer those
    /// from the log and run the rest again on the reloaded state.
    async fn resolve_duplicates(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let commands = match self.reload_for_retry(commands).await {
            Ok(commands) => commands,
            Err(stop) => return Some(stop),
        };
        if self.resolving {
            // They clashed again, yet the log answered none of them: among them is an id whose
            // record is being pruned (its first events already gone). Alone, such a command
            // gets a definite answer, never a loop; a batch is planned again command by
            // command, so that the others still commit.
            if let [command] = commands.as_slice() {
                let error = Error::AlreadyExists(format!(
                    "command {} of room {} is too old to be answered again",
                    command.command.command_id, self.room_id
                ));
                for command in commands {
                    let _ = command.reply.send(Err(error.clone()));
                }
                return None;
            }
            return self.one_by_one(commands, mailbox).await;
        }
        let mut fresh = Vec::with_capacity(commands.len());
        for command in commands {
            let id = &command.command.command_id;
            match self.stored_reply(id).await {
                Ok(Some(reply)) => {
                    let _ = command.reply.send(Ok(reply));
                }
                Ok(None) => fresh.push(command),
                Err(error) => {
                    let _ = command.reply.send(Err(error));
                }
            }
        }
        if fresh.is_empty() {
            return None;
        }
        // One level only: the stored duplicates are gone from `fresh`, and a second clash is
        // answered above.
        self.resolving = true;
        let stop = Box::pin(self.process_commands(fresh, mailbox)).await;
        self.resolving = false;
        stop
    }

    async fn stored_reply(&self, id: &CommandId) -> Result<Option<Arc<CommandReply>>> {
        let store = &self.inner.deps.store;
        let Some(record) = store.get_command(&self.room_id, id).await? else {
            return Ok(None);
        };
        // A stored command covers the events first_seq..=last_seq (none: last = first - 1).
        let (Some(after), Some(count)) = (
            record.first_seq.checked_sub(1),
            record
                .last_seq
                .checked_add(1)
                .and_then(|end| end.checked_sub(record.first_seq))
                .and_then(|count| u32::try_from(count).ok()),
        ) else {
            return Err(Error::corrupt(format!(
                "command {id} of room {} covers events {}..={}",
                self.room_id, record.first_seq, record.last_seq
            )));
        };
        let events = store.list_events(&self.room_id, after, count).await?;
        Ok(Some(Arc::new(CommandReply {
            version: record.last_seq,
            events,
        })))
    }

    fn answer(&self, commands: Vec<CommandRequest>, outcomes: Vec<Outcome>) {
        let mut results: Vec<Option<Result<Arc<CommandReply>>>> =
            Vec::with_capacity(outcomes.len());
        for outcome in &outcomes {
            let result = match outcome {
                Outcome::Done(result) => clone_result(result),
                Outcome::SameAs(first) => results[*first]
                    .as_ref()
                    .map(clone_result)
                    .unwrap_or_else(|| Err(Error::Unavailable("lost answer".into()))),
            };
            results.push(Some(result));
        }
        for (command, result) in commands.into_iter().zip(results) {
            if let Some(result) = result {
                let _ = command.reply.send(result);
            }
        }
    }
}

/// A copy of a command's result for a repeat of it: a rejection as it is, any other error as
/// unavailable.
fn clone_result(result: &Result<Arc<CommandReply>>) -> Result<Arc<CommandReply>> {
    match result {
        Ok(reply) => Ok(reply.clone()),
        Err(Error::Rejected(rejection)) => Err(Error::Rejected(rejection.clone())),
        Err(other) => Err(Error::Unavailable(other.to_string())),
    }
}
