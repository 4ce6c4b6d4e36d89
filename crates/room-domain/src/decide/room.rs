//! The rules of the room itself: its creation, its profile (name, notice, images), its
//! settings (chat, lock) and its closing.

use crate::command::Ctx;
use crate::event::{Event, GiftBroadcast, MicDownReason};
use crate::ids::UserId;
use crate::rejection::{Field, Rejection};
use crate::rules::MAX_SEATS;
use crate::state::{PasswordHash, RoomResource, RoomState};

use super::seats::{mic_down, seat_index};
use super::standing::{Standing, acting_user, require_moderator};

/// `CreateRoom` on an absent room: the actor owns it.
pub(super) fn create_room(
    name: &str,
    seat_count: Option<u8>,
    region: &str,
    ctx: &Ctx<'_>,
) -> Result<Vec<Event>, Rejection> {
    let owner = acting_user(ctx)?;
    let name = checked_name(name)?;
    let seat_count = seat_count.unwrap_or(ctx.rules.default_seat_count);
    if !(1..=MAX_SEATS).contains(&seat_count) {
        return Err(Rejection::InvalidSeatCount { seat_count });
    }
    Field::Region.check(region)?;
    Ok(vec![Event::RoomCreated {
        owner: owner.clone(),
        name,
        seat_count,
        region: region.to_owned(),
        created_at: ctx.now,
    }])
}

/// `UpdateProfile`: moderators change the name, notice or cover; absent fields stay.
pub(super) fn update_profile(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
    name: Option<&str>,
    notice: Option<&str>,
    cover_url: Option<&str>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    let mut profile = state.profile.clone();
    if let Some(name) = name {
        profile.name = checked_name(name)?;
    }
    if let Some(notice) = notice {
        Field::Notice.check(notice)?;
        profile.notice = notice.to_owned();
    }
    if let Some(cover) = cover_url {
        profile.cover_url = checked_url(Field::CoverUrl, cover)?;
    }
    if profile == state.profile {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomProfileUpdated {
        name: profile.name,
        notice: profile.notice,
        cover_url: profile.cover_url,
        by,
    }])
}

/// `ChangeBackground`: moderators set or remove the background.
pub(super) fn change_background(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
    background_url: Option<&str>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    let background_url = match background_url {
        Some(url) => checked_url(Field::BackgroundUrl, url)?,
        None => None,
    };
    if background_url == state.profile.background_url {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomBackgroundChanged { background_url, by }])
}

/// `SystemMessage`: the platform (a platform admin or the system) speaks to the room.
pub(super) fn system_message(
    standing: Standing,
    by: Option<UserId>,
    text: &str,
) -> Result<Vec<Event>, Rejection> {
    if standing < Standing::PlatformAdmin {
        return Err(Rejection::Forbidden);
    }
    crate::command::check_system_message(text)?;
    Ok(vec![Event::RoomSystemMessage {
        text: text.to_owned(),
        by,
    }])
}

/// `ShowGiftBroadcast`: the system shows another room's big gift here.
pub(super) fn show_gift_broadcast(
    standing: Standing,
    broadcast: &GiftBroadcast,
) -> Result<Vec<Event>, Rejection> {
    if standing != Standing::System {
        return Err(Rejection::Forbidden);
    }
    Ok(vec![Event::RoomGiftBroadcast(broadcast.clone())])
}

/// `RevokeResources`: a platform admin resets parts of the profile to their defaults, with a
/// reason. Always an event, even when the resources are at their defaults already: the room
/// is shown the reason.
pub(super) fn revoke_resources(
    standing: Standing,
    by: Option<UserId>,
    resources: &[RoomResource],
    reason: &str,
    ctx: &Ctx<'_>,
) -> Result<Vec<Event>, Rejection> {
    if standing != Standing::PlatformAdmin {
        return Err(Rejection::Forbidden);
    }
    let mut chosen = resources.to_vec();
    chosen.sort_unstable();
    chosen.dedup();
    if chosen.is_empty() || chosen.len() != resources.len() {
        return Err(Rejection::InvalidResources);
    }
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(Rejection::FieldEmpty {
            field: Field::Reason,
        });
    }
    Field::Reason.check(reason)?;
    let name = resources
        .contains(&RoomResource::Name)
        .then(|| ctx.rules.default_room_name.clone());
    Ok(vec![Event::RoomResourcesRevoked {
        resources: resources.to_vec(),
        name,
        reason: reason.to_owned(),
        by,
    }])
}

/// `SetChatEnabled`: moderators allow or forbid the public chat.
pub(super) fn set_chat_enabled(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
    enabled: bool,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    if enabled == state.settings.chat_enabled {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomChatEnabledChanged { enabled, by }])
}

/// `SetLock`: moderators lock the room with a password hash or unlock it.
pub(super) fn set_lock(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
    password_hash: Option<&PasswordHash>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    if password_hash == state.settings.lock.as_ref() {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomLockChanged {
        locked: password_hash.is_some(),
        password_hash: password_hash.cloned(),
        by,
    }])
}

/// `CloseRoom`: the owner, a platform admin or the system closes the room for good, taking
/// everyone off the seats first.
pub(super) fn close_room(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
) -> Result<Vec<Event>, Rejection> {
    if !matches!(
        standing,
        Standing::Owner | Standing::PlatformAdmin | Standing::System
    ) {
        return Err(Rejection::Forbidden);
    }
    let mut events = Vec::new();
    for (i, seat) in state.seats.iter().enumerate() {
        if let Some(occupant) = &seat.occupant {
            events.push(mic_down(
                state,
                seat_index(i),
                &occupant.user,
                occupant.session,
                MicDownReason::RoomClosed,
            ));
        }
    }
    events.push(Event::RoomClosed { by });
    Ok(events)
}

fn checked_name(name: &str) -> Result<String, Rejection> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Rejection::FieldEmpty { field: Field::Name });
    }
    Field::Name.check(name)?;
    Ok(name.to_owned())
}

/// An empty URL removes the image; any other must keep the image URL rule
/// ([`check_image_url`](crate::check_image_url)), as sent: a URL is never trimmed or rewritten.
fn checked_url(field: Field, url: &str) -> Result<Option<String>, Rejection> {
    if url.is_empty() {
        return Ok(None);
    }
    crate::image_url::check_image_url(field, url)?;
    Ok(Some(url.to_owned()))
}
