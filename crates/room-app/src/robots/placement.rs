//! Which node runs which robot room: the orchestrators' lease group and rendezvous hashing
//! over its live members ([`preferred_node`]).

use room_domain::RoomId;

/// The lease group of the nodes that run robot rooms.
pub const ORCHESTRATOR_GROUP: &str = "robot-orchestrators";

/// The node a room prefers among `me` and `peers`: the highest score of (node, room), a
/// 64-bit FNV-1a hash finished by SplitMix64's avalanche, ties to the smaller id. Every node
/// computes the same answer from the same members, and a member joining or leaving moves
/// only the rooms that prefer it.
pub fn preferred_node<'a>(
    room: &RoomId,
    me: &'a str,
    peers: impl IntoIterator<Item = &'a String>,
) -> &'a str {
    let score = |node: &str| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in node.bytes().chain([0]).chain(room.as_str().bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // FNV-1a alone ranks node ids that differ in one late byte ("node-a", "node-b") the
        // same way for most rooms: its last multiplications carry the difference upward only
        // in part. The avalanche makes every bit of the score depend on every input bit.
        hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        hash ^ (hash >> 31)
    };
    let mut best = (score(me), me);
    for peer in peers {
        let candidate = (score(peer), peer.as_str());
        if candidate.0 > best.0 || (candidate.0 == best.0 && candidate.1 < best.1) {
            best = candidate;
        }
    }
    best.1
}
