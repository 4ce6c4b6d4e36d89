//! A page of one ranked list with its pins placed: a pin takes its position while its window
//! is open and its room is open, and its room leaves its ranked place, so no room shows
//! twice. The pins are placed at read time, so a pin appears and vanishes at its window's
//! edges exactly, whatever the ranking's age. A page costs the list's pins plus the page.

use std::collections::HashSet;

use room_domain::Timestamp;

use super::rank::{ListKey, ListedRoom, Ranking};

/// One room of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageItem<'a> {
    /// The room as the lists show it.
    pub room: &'a ListedRoom,
    /// Whether a pin put it here.
    pub pinned: bool,
}

/// A page of one list: its rooms and the offset of the next page, if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<'a> {
    /// The rooms, in order.
    pub items: Vec<PageItem<'a>>,
    /// Where the next page starts, if the list goes on.
    pub next: Option<u32>,
}

impl Ranking {
    /// The rooms of `key` from place `offset` (from 0), at most `limit`, with the pins of
    /// `key` open at `now`.
    pub fn page(&self, key: &ListKey, offset: u32, limit: u32, now: Timestamp) -> Page<'_> {
        let empty = Vec::new();
        let list = self.lists.get(key).unwrap_or(&empty);
        // The pins showing: of this list, open now, of a room that is open; one slot each,
        // the room's first pin (by position, then pin id) winning.
        let mut pins: Vec<_> = self
            .pins
            .iter()
            .filter(|pin| ListKey::from(&pin.list) == *key && pin.shows_at(now))
            .filter_map(|pin| {
                let place = *self.places.get(&pin.room_id)?;
                Some((pin.position, pin.pin_id.as_str(), place))
            })
            .collect();
        pins.sort();
        let mut seen = HashSet::new();
        pins.retain(|(_, _, place)| seen.insert(*place));
        // The ranked places the pinned rooms leave, in list order.
        let mut left: Vec<usize> = seen
            .iter()
            .filter_map(|place| self.pinned_ranks.get(&(key.clone(), *place)).copied())
            .collect();
        left.sort_unstable();
        let ranked = list.len() - left.len();
        // Each pin's slot (from 0): its position, or the next free one, never past the end.
        let mut slots: Vec<(usize, u32)> = Vec::with_capacity(pins.len());
        for (position, _, place) in &pins {
            let wanted = (*position as usize).saturating_sub(1);
            let after_last = slots.last().map_or(0, |(slot, _)| slot + 1);
            let slot = wanted.max(after_last).min(ranked + slots.len());
            slots.push((slot, *place));
        }
        let total = ranked + slots.len();
        let start = (offset as usize).min(total);
        let end = start.saturating_add(limit as usize).min(total);
        let mut items = Vec::with_capacity(end - start);
        for at in start..end {
            let before = slots.partition_point(|(slot, _)| *slot < at);
            if let Some((_, place)) = slots.get(before).filter(|(slot, _)| *slot == at) {
                items.push(PageItem {
                    room: &self.rooms[*place as usize],
                    pinned: true,
                });
                continue;
            }
            // The ranked room at `at`: the (at - pins before it)-th place no pin left.
            let mut rank = at - before;
            for gone in &left {
                if *gone <= rank {
                    rank += 1;
                } else {
                    break;
                }
            }
            items.push(PageItem {
                room: &self.rooms[list[rank] as usize],
                pinned: false,
            });
        }
        Page {
            items,
            next: (end < total).then_some(end as u32),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use room_domain::{RoomId, Timestamp, UserId};

    use super::super::rank::{ListKey, RankInput, Ranking, Tab};
    use super::super::score::ScoreRules;
    use crate::ports::{OpenRoom, PinnedList, RoomPin, RoomSummary, UserProfile};

    const NOW: Timestamp = Timestamp(1_800_000_000_000);

    fn open_room(name: &str, heat: i64, region: &str) -> OpenRoom {
        OpenRoom {
            summary: RoomSummary {
                room_id: RoomId::new(name).unwrap(),
                owner: UserId::new(format!("owner-{name}")).unwrap(),
                name: name.to_owned(),
                open: true,
                heat,
                online: 1,
                locked: false,
                version: 1,
                region: region.to_owned(),
                cover_url: None,
                seats_taken: 0,
                created_at: Timestamp(1),
                recent_heat_milli: heat * 1000,
                recent_heat_at: NOW,
            },
            short_id: None,
        }
    }

    /// Rooms r0..r9 with heat 100, 90, .. 10 (so `hot` is r0..r9), all of region "eu",
    /// owners of country "SA".
    fn ranking(pins: Vec<RoomPin>) -> Ranking {
        let rooms: Vec<OpenRoom> = (0..10)
            .map(|i| open_room(&format!("r{i}"), 100 - 10 * i, "eu"))
            .collect();
        let owners: HashMap<UserId, UserProfile> = rooms
            .iter()
            .map(|r| {
                let mut profile = UserProfile::empty(r.summary.owner.clone());
                profile.country = Some("SA".into());
                (r.summary.owner.clone(), profile)
            })
            .collect();
        let rules = ScoreRules {
            on_mic_boost: 0.0,
            new_room_boost: 0.0,
            ..ScoreRules::default()
        };
        Ranking::build(
            RankInput {
                rooms,
                owners: &owners,
                robots: &HashSet::new(),
                pins,
                truncated: false,
            },
            &rules,
            &HashSet::new(),
            1,
            NOW,
        )
    }

    fn pin(id: &str, room: &str, list: PinnedList, position: u32) -> RoomPin {
        RoomPin {
            pin_id: id.to_owned(),
            room_id: RoomId::new(room).unwrap(),
            list,
            position,
            starts_at: Timestamp(NOW.0 - 1000),
            ends_at: Timestamp(NOW.0 + 1000),
            created_at: Timestamp(NOW.0 - 1000),
        }
    }

    fn names(
        ranking: &Ranking,
        key: &ListKey,
        offset: u32,
        limit: u32,
        now: Timestamp,
    ) -> Vec<String> {
        ranking
            .page(key, offset, limit, now)
            .items
            .iter()
            .map(|item| {
                let mark = if item.pinned { "*" } else { "" };
                format!("{}{mark}", item.room.room_id)
            })
            .collect()
    }

    #[test]
    fn without_pins_the_lists_follow_the_score() {
        let ranking = ranking(Vec::new());
        assert_eq!(
            names(&ranking, &ListKey::Hot, 0, 4, NOW),
            ["r0", "r1", "r2", "r3"]
        );
        let page = ranking.page(&ListKey::Hot, 8, 4, NOW);
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.next, None);
        assert_eq!(ranking.page(&ListKey::Hot, 4, 4, NOW).next, Some(8));
        assert_eq!(
            names(&ranking, &ListKey::Region("eu".into()), 0, 2, NOW),
            ["r0", "r1"]
        );
        assert_eq!(
            names(&ranking, &ListKey::Country("SA".into()), 0, 2, NOW),
            ["r0", "r1"]
        );
        assert!(names(&ranking, &ListKey::Region("us".into()), 0, 2, NOW).is_empty());
    }

    #[test]
    fn a_pin_takes_its_position_and_leaves_its_ranked_place() {
        let ranking = ranking(vec![pin("p1", "r7", PinnedList::Hot, 2)]);
        assert_eq!(
            names(&ranking, &ListKey::Hot, 0, 4, NOW),
            ["r0", "r7*", "r1", "r2"]
        );
        let all: Vec<String> = (0..10)
            .flat_map(|offset| names(&ranking, &ListKey::Hot, offset, 1, NOW))
            .collect();
        assert_eq!(
            all.len(),
            10,
            "no room shows twice and none is lost: {all:?}"
        );
        assert_eq!(
            all,
            ["r0", "r7*", "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9"]
        );
    }

    #[test]
    fn a_pin_shows_only_in_the_tab_and_scope_it_was_made_for() {
        let ranking = ranking(vec![
            pin("p1", "r9", PinnedList::New, 1),
            pin("p2", "r8", PinnedList::Region("eu".into()), 1),
            pin("p3", "r7", PinnedList::Country("EG".into()), 1),
        ]);
        let hot = names(&ranking, &ListKey::Hot, 0, 10, NOW);
        assert!(hot.iter().all(|name| !name.ends_with('*')), "{hot:?}");
        assert_eq!(names(&ranking, &ListKey::New, 0, 1, NOW), ["r9*"]);
        assert_eq!(
            names(&ranking, &ListKey::Region("eu".into()), 0, 1, NOW),
            ["r8*"]
        );
        // Not in another region, nor in the country tab of the room's own country.
        let sa = names(&ranking, &ListKey::Country("SA".into()), 0, 10, NOW);
        assert!(sa.iter().all(|name| !name.ends_with('*')), "{sa:?}");
        assert_eq!(
            names(&ranking, &ListKey::Country("EG".into()), 0, 5, NOW),
            ["r7*"]
        );
    }

    #[test]
    fn a_pin_shows_only_while_its_window_is_open() {
        let ranking = ranking(vec![pin("p1", "r5", PinnedList::Hot, 1)]);
        let first = |now| names(&ranking, &ListKey::Hot, 0, 1, now);
        assert_eq!(first(Timestamp(NOW.0 - 1001)), ["r0"], "before its start");
        assert_eq!(first(Timestamp(NOW.0 - 1000)), ["r5*"], "at its start");
        assert_eq!(
            first(Timestamp(NOW.0 + 999)),
            ["r5*"],
            "just before its end"
        );
        assert_eq!(first(Timestamp(NOW.0 + 1000)), ["r0"], "at its end");
    }

    #[test]
    fn a_pin_of_a_room_not_open_does_not_show() {
        let ranking = ranking(vec![pin("p1", "closed", PinnedList::Hot, 1)]);
        assert_eq!(names(&ranking, &ListKey::Hot, 0, 1, NOW), ["r0"]);
        assert_eq!(ranking.page(&ListKey::Hot, 0, 100, NOW).items.len(), 10);
    }

    #[test]
    fn pins_of_one_position_queue_and_deep_pins_end_the_list() {
        let ranking = ranking(vec![
            pin("p1", "r9", PinnedList::Hot, 1),
            pin("p2", "r8", PinnedList::Hot, 1),
            pin("p3", "r7", PinnedList::Hot, 100),
            // A second pin of r9: its first pin wins.
            pin("p4", "r9", PinnedList::Hot, 5),
        ]);
        assert_eq!(
            names(&ranking, &ListKey::Hot, 0, 10, NOW),
            [
                "r9*", "r8*", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7*"
            ]
        );
        let short = names(&ranking, &ListKey::Region("eu".into()), 0, 20, NOW);
        assert_eq!(short.len(), 10);
    }

    #[test]
    fn robot_rooms_are_left_out_of_the_tabs_configured() {
        let rooms = vec![
            open_room("bot-room", 500, "eu"),
            open_room("person", 1, "eu"),
        ];
        let robots: HashSet<RoomId> = [RoomId::new("bot-room").unwrap()].into();
        let ranking = Ranking::build(
            RankInput {
                rooms,
                owners: &HashMap::new(),
                robots: &robots,
                pins: Vec::new(),
                truncated: false,
            },
            &ScoreRules::default(),
            &[Tab::New].into(),
            1,
            NOW,
        );
        assert_eq!(
            names(&ranking, &ListKey::Hot, 0, 5, NOW),
            ["bot-room", "person"]
        );
        assert_eq!(names(&ranking, &ListKey::New, 0, 5, NOW), ["person"]);
    }

    #[test]
    fn a_ranking_reads_back_from_its_encoding() {
        let ranking = ranking(vec![pin("p1", "r7", PinnedList::Hot, 2)]);
        let decoded = Ranking::decode(&ranking.encode().unwrap()).unwrap();
        assert_eq!(decoded, ranking);
        assert_eq!(
            names(&decoded, &ListKey::Hot, 0, 3, NOW),
            ["r0", "r7*", "r1"]
        );
        assert!(Ranking::decode(b"{").is_err());
    }
}
