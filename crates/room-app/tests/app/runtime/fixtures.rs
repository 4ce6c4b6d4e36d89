//! What the runtime tests share: the commands they send most, and the version of a room's
//! newest snapshot.

use room_app::ports::SnapshotStore;
use room_domain::{CommandKind, RoomId, SeatIndex};

use crate::support::World;

pub(super) fn join() -> CommandKind {
    CommandKind::Join {
        password_verified: false,
        verified_lock: None,
    }
}

pub(super) fn take_seat(seat: u8) -> CommandKind {
    CommandKind::TakeSeat {
        seat: SeatIndex(seat),
    }
}

pub(super) async fn snapshot_version(world: &World, room: &RoomId) -> Option<u64> {
    SnapshotStore::get_latest(&*world.store, room)
        .await
        .unwrap()
        .map(|snapshot| snapshot.state.version)
}
