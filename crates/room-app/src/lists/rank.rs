//! One ranking of every room list ([`Ranking`]), built from the open rooms at one moment: the
//! rooms' shown fields once, and each list as the rooms' places in it. It is what the
//! refresher computes, what the cache of a cluster holds (encoded as JSON), and what pages
//! are read from.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use room_domain::{RoomId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use super::score::ScoreRules;
use crate::error::{Error, Result};
use crate::ports::{OpenRoom, PinnedList, RoomPin, RoomSummary, UserProfile};

/// A tab of the room lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tab {
    /// Every open room by score.
    Hot,
    /// Every open room, most recently created first.
    New,
    /// The rooms the caller follows, open ones first.
    Following,
    /// The rooms of one region, by score.
    Region,
    /// The rooms whose owner is of one country, by score.
    Country,
    /// The rooms whose owner belongs to one agency, by score.
    Agency,
}

impl Tab {
    /// The tab's name in the API.
    pub fn name(self) -> &'static str {
        match self {
            Tab::Hot => "hot",
            Tab::New => "new",
            Tab::Following => "following",
            Tab::Region => "region",
            Tab::Country => "country",
            Tab::Agency => "agency",
        }
    }

    /// The tab of an API name.
    pub fn from_name(name: &str) -> Option<Tab> {
        [
            Tab::Hot,
            Tab::New,
            Tab::Following,
            Tab::Region,
            Tab::Country,
            Tab::Agency,
        ]
        .into_iter()
        .find(|tab| tab.name() == name)
    }
}

/// One ranked list: a tab and its scope. The `following` tab is per user and not ranked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKey {
    /// `hot` over the whole app.
    Hot,
    /// `new` over the whole app.
    New,
    /// `region` of one region.
    Region(String),
    /// `country` of one country.
    Country(String),
    /// `agency` of one agency.
    Agency(String),
}

impl ListKey {
    /// The tab the list belongs to.
    pub fn tab(&self) -> Tab {
        match self {
            ListKey::Hot => Tab::Hot,
            ListKey::New => Tab::New,
            ListKey::Region(_) => Tab::Region,
            ListKey::Country(_) => Tab::Country,
            ListKey::Agency(_) => Tab::Agency,
        }
    }
}

impl From<&PinnedList> for ListKey {
    fn from(list: &PinnedList) -> Self {
        match list {
            PinnedList::Hot => ListKey::Hot,
            PinnedList::New => ListKey::New,
            PinnedList::Region(region) => ListKey::Region(region.clone()),
            PinnedList::Country(country) => ListKey::Country(country.clone()),
        }
    }
}

/// A room as the lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedRoom {
    /// The room.
    pub room_id: RoomId,
    /// Its short id.
    pub short_id: Option<u32>,
    /// Its name.
    pub name: String,
    /// Its cover picture.
    pub cover_url: Option<String>,
    /// Its owner.
    pub owner: UserId,
    /// The owner's nickname, if the service has one.
    pub owner_nickname: Option<String>,
    /// The owner's avatar, if the service has one.
    pub owner_avatar_url: Option<String>,
    /// Members present.
    pub online: u32,
    /// Seats with someone on them.
    pub seats_taken: u32,
    /// The room's region (empty when unknown).
    pub region: String,
    /// The owner's country, the room's country.
    pub country: Option<String>,
    /// Whether it is locked by a password.
    pub locked: bool,
    /// Whether a robot runs it.
    pub robot: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// Its `hot` score when ranked.
    pub score: f64,
}

impl ListedRoom {
    /// A room as the lists show it at `now`: its summary, its short id, its owner's profile
    /// (country, display fields) when the directory has one, and whether a robot runs it.
    pub fn of(
        summary: RoomSummary,
        short_id: Option<u32>,
        owner: Option<&UserProfile>,
        robot: bool,
        rules: &ScoreRules,
        now: Timestamp,
    ) -> ListedRoom {
        ListedRoom {
            score: rules.score(&summary, now),
            robot,
            short_id,
            owner_nickname: owner.and_then(|o| o.nickname.clone()),
            owner_avatar_url: owner.and_then(|o| o.avatar_url.clone()),
            country: owner.and_then(|o| o.country.clone()),
            room_id: summary.room_id,
            name: summary.name,
            cover_url: summary.cover_url,
            owner: summary.owner,
            online: summary.online,
            seats_taken: summary.seats_taken,
            region: summary.region,
            locked: summary.locked,
            created_at: summary.created_at,
        }
    }
}

/// Every list ranked at one moment, with the pins that had not ended then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Larger is newer (the store's clock, in ms, when the refresh began).
    pub generation: u64,
    /// When the scores were computed.
    pub ranked_at: Timestamp,
    /// Every open room ranked, each once.
    pub rooms: Vec<ListedRoom>,
    /// Each list, as places in [`Ranking::rooms`], first first (encoded as pairs: JSON keys
    /// are strings).
    #[serde(with = "as_pairs")]
    pub lists: BTreeMap<ListKey, Vec<u32>>,
    /// The pins not ended at [`Ranking::ranked_at`].
    pub pins: Vec<RoomPin>,
    /// Whether the scan stopped at the configured most rooms before the end.
    pub truncated: bool,
    /// Each room's place in [`Ranking::rooms`] (not stored: rebuilt from it).
    #[serde(skip)]
    pub(super) places: HashMap<RoomId, u32>,
    /// The rank in a list of each room pinned into it (not stored: rebuilt).
    #[serde(skip)]
    pub(super) pinned_ranks: HashMap<(ListKey, u32), usize>,
}

/// What one ranking is built from.
pub struct RankInput<'a> {
    /// The open rooms.
    pub rooms: Vec<OpenRoom>,
    /// The owners' profiles (of those the directory knows).
    pub owners: &'a HashMap<UserId, UserProfile>,
    /// The robot rooms.
    pub robots: &'a HashSet<RoomId>,
    /// The pins not ended.
    pub pins: Vec<RoomPin>,
    /// Whether the scan stopped before the end.
    pub truncated: bool,
}

impl Ranking {
    /// Ranks every list at `now`: `hot` and each scope by score (ties by room id), `new` by
    /// creation (newest first, ties by room id); robot rooms left out of the tabs in
    /// `robots_left_out`.
    pub fn build(
        input: RankInput<'_>,
        rules: &ScoreRules,
        robots_left_out: &HashSet<Tab>,
        generation: u64,
        now: Timestamp,
    ) -> Ranking {
        let rooms: Vec<ListedRoom> = input
            .rooms
            .into_iter()
            .map(|open| {
                let summary = open.summary;
                let open_id = summary.room_id.clone();
                let owner = input.owners.get(&summary.owner);
                ListedRoom::of(
                    summary,
                    open.short_id,
                    owner,
                    input.robots.contains(&open_id),
                    rules,
                    now,
                )
            })
            .collect();
        let by_score = |a: &u32, b: &u32| {
            let (a, b) = (&rooms[*a as usize], &rooms[*b as usize]);
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.room_id.cmp(&b.room_id))
        };
        let mut lists: BTreeMap<ListKey, Vec<u32>> = BTreeMap::new();
        for (place, room) in rooms.iter().enumerate() {
            let place = place as u32;
            let shown = |tab: Tab| !(room.robot && robots_left_out.contains(&tab));
            let mut keys = vec![(ListKey::Hot, Tab::Hot), (ListKey::New, Tab::New)];
            if !room.region.is_empty() {
                keys.push((ListKey::Region(room.region.clone()), Tab::Region));
            }
            if let Some(country) = &room.country {
                keys.push((ListKey::Country(country.clone()), Tab::Country));
            }
            let owner = input.owners.get(&room.owner);
            if let Some(agency) = owner.and_then(|o| o.agency.as_ref()) {
                keys.push((ListKey::Agency(agency.clone()), Tab::Agency));
            }
            for (key, tab) in keys {
                if shown(tab) {
                    lists.entry(key).or_default().push(place);
                }
            }
        }
        for (key, places) in lists.iter_mut() {
            if *key == ListKey::New {
                places.sort_by(|a, b| {
                    let (a, b) = (&rooms[*a as usize], &rooms[*b as usize]);
                    b.created_at
                        .cmp(&a.created_at)
                        .then_with(|| a.room_id.cmp(&b.room_id))
                });
            } else {
                places.sort_by(by_score);
            }
        }
        Ranking {
            generation,
            ranked_at: now,
            rooms,
            lists,
            pins: input.pins,
            truncated: input.truncated,
            places: HashMap::new(),
            pinned_ranks: HashMap::new(),
        }
        .indexed()
    }

    /// Builds the indexes pages read: each room's place, and each pinned room's rank in the
    /// list of its pin.
    fn indexed(mut self) -> Ranking {
        self.places = self
            .rooms
            .iter()
            .enumerate()
            .map(|(place, room)| (room.room_id.clone(), place as u32))
            .collect();
        let mut pinned_ranks = HashMap::new();
        for pin in &self.pins {
            let key = ListKey::from(&pin.list);
            let Some(place) = self.places.get(&pin.room_id).copied() else {
                continue;
            };
            if let Some(rank) = self
                .lists
                .get(&key)
                .and_then(|list| list.iter().position(|p| *p == place))
            {
                pinned_ranks.insert((key, place), rank);
            }
        }
        self.pinned_ranks = pinned_ranks;
        self
    }

    /// The ranking as the cache stores it.
    pub fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("room lists: {e}")))
    }

    /// A ranking the cache stored.
    pub fn decode(body: &[u8]) -> Result<Ranking> {
        let ranking: Ranking = serde_json::from_slice(body)
            .map_err(|e| Error::corrupt(format!("room lists in the cache: {e}")))?;
        let rooms = ranking.rooms.len();
        if ranking
            .lists
            .values()
            .flatten()
            .any(|place| *place as usize >= rooms)
        {
            return Err(Error::corrupt(
                "room lists in the cache: a list names a room it does not hold",
            ));
        }
        Ok(ranking.indexed())
    }
}

/// A map encoded as a sequence of its pairs.
mod as_pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::ListKey;

    pub(super) fn serialize<S: Serializer>(
        map: &BTreeMap<ListKey, Vec<u32>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<ListKey, Vec<u32>>, D::Error> {
        let pairs: Vec<(ListKey, Vec<u32>)> = Deserialize::deserialize(deserializer)?;
        Ok(pairs.into_iter().collect())
    }
}
