//! Cover pictures, one open room at a time: before a room shows a new cover it claims it in
//! the directory ([`RoomDirectory::claim_cover`](crate::ports::RoomDirectory::claim_cover)),
//! whose key on the cover decides between rooms claiming it at once. After the change, the
//! covers the room does not show (the new one after a refusal, the old one after a change) are
//! let go by a compare and delete on the claim as the change saw it.
//!
//! A claim outlives what made it when a node stops between the claim and the commit, or
//! between the commit and letting the old cover go, and when a room closes. Such a claim is
//! taken over by the next room that wants the cover: at once when its room is closed, and
//! after [`COVER_CLAIM_GRACE`] when its room shows another cover (within it, the holder may be
//! committing it right now). The take-over and a holder's renewal of its own claim are both a
//! compare and set on the claim (room and claim time), so of the two, one wins.

use std::time::Duration;

use room_domain::{RoomId, Timestamp};

use super::room_service::RoomService;
use crate::error::{Error, Result};
use crate::ports::CoverHolder;

/// How long a claim stands, whatever its room shows, before another room may take it over.
pub const COVER_CLAIM_GRACE: Duration = Duration::from_secs(60);

/// Claims at most this many times over a cover that changes hands meanwhile.
const CLAIM_TRIES: usize = 3;

impl RoomService {
    /// Claims `cover` for `room_id`, which is about to show it: renews the room's own claim,
    /// takes over a claim its holder no longer needs, or fails with [`Error::CoverInUse`].
    /// Answers the claim made (what [`RoomService::release_cover`] lets go, if it is still
    /// the cover's claim then).
    pub(crate) async fn claim_cover(&self, room_id: &RoomId, cover: &str) -> Result<CoverHolder> {
        let directory = &self.ports.directory;
        for _ in 0..CLAIM_TRIES {
            let now = self.ports.clock.now();
            let holder = directory.claim_cover(cover, room_id, now).await?;
            let ours = CoverHolder {
                room_id: room_id.clone(),
                claimed_at: now,
            };
            if holder.room_id == *room_id {
                // Renewed: a take-over judging the old claim by its age now fails, and so
                // does a release of the old claim by a change made before this one.
                if holder.claimed_at == now
                    || directory
                        .take_over_cover(cover, &holder, room_id, now)
                        .await?
                {
                    return Ok(ours);
                }
                continue;
            }
            if !self.claim_is_spent(&holder, cover, now).await? {
                return Err(Error::CoverInUse(format!(
                    "another open room shows {cover:?}; choose another cover"
                )));
            }
            if directory
                .take_over_cover(cover, &holder, room_id, now)
                .await?
            {
                tracing::info!(room_id = %room_id, from = %holder.room_id, "cover claim taken over");
                return Ok(ours);
            }
        }
        Err(Error::Unavailable(
            "the cover changed hands at each try; try again".into(),
        ))
    }

    /// Whether `holder`'s claim on `cover` no longer stands: its room is closed, or it has
    /// shown another cover for longer than the grace.
    async fn claim_is_spent(
        &self,
        holder: &CoverHolder,
        cover: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let summary = self.ports.directory.get_summary(&holder.room_id).await?;
        let grace = i64::try_from(COVER_CLAIM_GRACE.as_millis()).unwrap_or(i64::MAX);
        let old = now.0.saturating_sub(holder.claimed_at.0) >= grace;
        Ok(match summary {
            Some(summary) if !summary.open => true,
            Some(summary) => old && summary.cover_url.as_deref() != Some(cover),
            None => old,
        })
    }

    /// Lets `cover` go if `claim` is its claim still (a renewal since keeps it); a failure is
    /// logged and left to the take-over (the change it follows is done).
    pub(crate) async fn release_cover(&self, cover: &str, claim: &CoverHolder) {
        if let Err(error) = self.ports.directory.release_cover(cover, claim).await {
            tracing::warn!(room_id = %claim.room_id, error = %error, "a cover claim was not let go");
        }
    }

    /// The claim `room_id` holds on `cover`, if it holds one.
    pub(super) async fn claim_of(
        &self,
        room_id: &RoomId,
        cover: &str,
    ) -> Result<Option<CoverHolder>> {
        Ok(self
            .ports
            .directory
            .get_cover(cover)
            .await?
            .filter(|holder| holder.room_id == *room_id))
    }
}
