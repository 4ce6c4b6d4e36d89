//! Which node a room prefers ([`preferred_node`]): the same answer on every node, and a node
//! that joins takes only the rooms that now prefer it.

use std::collections::HashMap;

use room_app::robots::preferred_node;

use super::fixtures::rooms;
use crate::support::rid;

#[test]
fn every_node_computes_the_same_preferred_node_for_a_room() {
    let [a, b, c] = ["node-a", "node-b", "node-c"].map(String::from);
    let mut share: HashMap<String, usize> = HashMap::new();
    for room in rooms(300) {
        let from_a = preferred_node(&room, &a, [&b, &c]);
        let from_b = preferred_node(&room, &b, [&c, &a]);
        let from_c = preferred_node(&room, &c, [&a, &b]);
        assert_eq!((from_a, from_b), (from_c, from_c), "{room}");
        assert_eq!(
            preferred_node(&room, &a, [&c, &b]),
            from_a,
            "in any order: {room}"
        );
        *share.entry(from_a.to_owned()).or_default() += 1;
    }
    for node in [&a, &b, &c] {
        let rooms = share.get(node).copied().unwrap_or(0);
        assert!(
            (60..=140).contains(&rooms),
            "{node} prefers {rooms} of 300: {share:?}"
        );
    }
    // Alone, a node is every room's.
    assert_eq!(
        preferred_node(&rid("room-0"), &a, Vec::<&String>::new()),
        "node-a"
    );
}

#[test]
fn a_third_node_takes_only_the_rooms_that_now_prefer_it() {
    let [a, b, c] = ["node-a", "node-b", "node-c"].map(String::from);
    let mut moved = 0;
    for room in rooms(300) {
        let before = preferred_node(&room, &a, [&b]);
        let after = preferred_node(&room, &a, [&b, &c]);
        if after != before {
            assert_eq!(after, "node-c", "{room} moved from {before} to {after}");
            moved += 1;
        }
        // And it leaving again puts every room back where it was.
        assert_eq!(preferred_node(&room, &b, [&a]), before, "{room}");
    }
    assert!((60..=140).contains(&moved), "{moved} of 300 rooms moved");
}
