//! The room lists users find rooms by ([`RoomLists`]): tabs (`hot`, `new`, `following`,
//! `region`, `country`, `agency`), each ranked list computed by a refresher every few seconds
//! over every open room and read in O(page) from the ranking it holds, with the pins of
//! platform admins placed at read time.
//!
//! On one node the refresher's ranking is held in process. In a cluster one node at a time
//! refreshes (under a claim) and leaves the ranking in the [`ListCache`](crate::ports::ListCache);
//! every node polls the cache and holds the newest it has seen. A node that holds no ranking
//! yet (just started; the cache empty) computes one itself before answering. `following` is
//! per user: it reads the caller's follows and shows each room from the ranking.

pub mod page;
pub mod pins;
pub mod rank;
pub mod score;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use room_domain::{RoomId, UserId};

use crate::error::{Error, Result};
use crate::follows::{FollowedCursor, RoomFollowing};
use crate::ports::{
    Change, ClockRef, IdGenRef, ListCacheRef, MAX_ROBOT_ROOM_PAGE, MAX_SUMMARIES_READ,
    ProfilePatch, RobotRoomsRef, RoomDirectoryRef, RoomPinsRef, UserProfile, WorkClaimsRef,
};
use crate::profiles::Profiles;

pub use pins::{NewPin, pin_problem};
pub use rank::{ListKey, ListedRoom, Ranking, Tab};
pub use score::ScoreRules;

/// How the lists are made.
#[derive(Debug, Clone)]
pub struct ListsConfig {
    /// How rooms are scored.
    pub score: ScoreRules,
    /// The tabs robot rooms are left out of.
    pub robots_left_out: HashSet<Tab>,
    /// The most open rooms one refresh ranks; the lists end there.
    pub max_rooms: u32,
}

/// Open rooms per read of a refresh's scan: a read's rows are decoded in one go, and
/// requests arriving meanwhile on the same worker wait for it; smaller reads let them in
/// between (at most [`MAX_OPEN_SCAN`]).
///
/// [`MAX_OPEN_SCAN`]: crate::ports::MAX_OPEN_SCAN
const SCAN_PAGE: u32 = 1_000;

impl Default for ListsConfig {
    fn default() -> Self {
        ListsConfig {
            score: ScoreRules::default(),
            robots_left_out: HashSet::new(),
            max_rooms: 50_000,
        }
    }
}

/// What the lists read: the rooms, their owners, the robot rooms, the pins; the store's
/// clock (a ranking's generation) and this node's (pins' windows); the follows; and, in a
/// cluster, the cache.
#[derive(Clone)]
pub struct ListDeps {
    /// Open rooms and their summaries.
    pub directory: RoomDirectoryRef,
    /// Profiles, through the node's cache: the owners' (country, agency, display fields) and
    /// the caller's (their default region, country and agency).
    pub profiles: Arc<Profiles>,
    /// Which rooms robots run.
    pub robots: RobotRoomsRef,
    /// The pins.
    pub pins: RoomPinsRef,
    /// The store's clock.
    pub store_clock: WorkClaimsRef,
    /// This node's clock.
    pub clock: ClockRef,
    /// Random values (pin ids).
    pub ids: IdGenRef,
    /// The rooms users follow.
    pub following: Arc<RoomFollowing>,
    /// Where a cluster's refresher leaves its ranking; `None` on one node.
    pub cache: Option<ListCacheRef>,
}

/// Where a page starts: a place in a ranked list, or after a followed room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListCursor {
    /// The place (from 0) in a ranked list.
    Place(u32),
    /// After this followed room (the `following` tab).
    Followed(FollowedCursor),
}

/// What a page of the lists asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The tab.
    pub tab: Tab,
    /// The region of `region` (the caller's without it).
    pub region: Option<String>,
    /// The country of `country` (the caller's without it).
    pub country: Option<String>,
    /// The agency of `agency` (the caller's without it).
    pub agency: Option<String>,
    /// The most rooms.
    pub limit: u32,
    /// Where the page starts (the first page without it).
    pub cursor: Option<ListCursor>,
}

/// One room of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct ListItem {
    /// The room as the lists show it.
    pub room: ListedRoom,
    /// Whether a pin put it here.
    pub pinned: bool,
    /// Whether it is open (always, but in `following`).
    pub open: bool,
}

/// A page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// The rooms.
    pub items: Vec<ListItem>,
    /// Where the next page starts, if the list goes on.
    pub next: Option<ListCursor>,
}

/// The room lists.
pub struct RoomLists {
    deps: ListDeps,
    config: ListsConfig,
    held: RwLock<Option<Arc<Ranking>>>,
    refreshing: tokio::sync::Mutex<()>,
}

impl RoomLists {
    /// Lists over `deps`, made by `config`; holding no ranking until the first refresh, poll
    /// or page.
    pub fn new(deps: ListDeps, config: ListsConfig) -> Self {
        RoomLists {
            deps,
            config,
            held: RwLock::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The ranking held, if any.
    pub fn held(&self) -> Option<Arc<Ranking>> {
        self.held.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Holds `ranking` unless the one held is as new or newer.
    fn hold(&self, ranking: Arc<Ranking>) -> bool {
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        if held
            .as_ref()
            .is_some_and(|h| h.generation >= ranking.generation)
        {
            return false;
        }
        metrics::gauge!("room_lists_rooms").set(ranking.rooms.len() as f64);
        *held = Some(ranking);
        true
    }

    /// Ranks every open room now and holds the ranking; in a cluster, also leaves it in the
    /// cache (a newer one there wins). Answers the rooms ranked.
    pub async fn refresh(&self) -> Result<u64> {
        let _one = self.refreshing.lock().await;
        let started = Instant::now();
        let outcome = self.compute().await;
        metrics::histogram!("room_lists_refresh_seconds").record(started.elapsed().as_secs_f64());
        let ranking = match outcome {
            Ok(ranking) => ranking,
            Err(error) => {
                metrics::counter!("room_lists_refreshes_total", "outcome" => "failed").increment(1);
                return Err(error);
            }
        };
        metrics::counter!("room_lists_refreshes_total", "outcome" => "done").increment(1);
        let rooms = ranking.rooms.len() as u64;
        let ranking = Arc::new(ranking);
        // Held here first: a cache that fails leaves this node's lists fresh all the same.
        self.hold(ranking.clone());
        if let Some(cache) = &self.deps.cache {
            let body = ranking.encode()?;
            metrics::gauge!("room_lists_cache_bytes").set(body.len() as f64);
            cache.put(ranking.generation, &body).await?;
        }
        Ok(rooms)
    }

    /// Takes the cache's ranking if it is newer than the one held; answers 1 when it took
    /// one. Also updates the age gauge of the ranking held.
    pub async fn poll(&self) -> Result<u64> {
        let Some(cache) = &self.deps.cache else {
            return Ok(0);
        };
        let held = self.held().map(|h| h.generation);
        let taken = match cache.get_newer(held).await? {
            Some(cached) => u64::from(self.hold(Arc::new(Ranking::decode(&cached.body)?))),
            None => 0,
        };
        self.record_age();
        Ok(taken)
    }

    /// Sets `room_lists_age_seconds`: how old the ranking held is by this node's clock.
    pub fn record_age(&self) {
        if let Some(held) = self.held() {
            let age_ms = self.deps.clock.now().0.saturating_sub(held.ranked_at.0);
            metrics::gauge!("room_lists_age_seconds").set(age_ms.max(0) as f64 / 1000.0);
        }
    }

    /// The ranking pages are read from: the one held, or, when none is held yet, the cache's
    /// or one computed now.
    pub async fn ranking(&self) -> Result<Arc<Ranking>> {
        if let Some(held) = self.held() {
            return Ok(held);
        }
        if self.deps.cache.is_some() {
            match self.poll().await {
                Ok(_) => {
                    if let Some(held) = self.held() {
                        return Ok(held);
                    }
                }
                // Ranked here instead.
                Err(error) => tracing::warn!(error = %error, "room lists: the cache failed"),
            }
        }
        let _one = self.refreshing.lock().await;
        if let Some(held) = self.held() {
            return Ok(held);
        }
        let ranking = Arc::new(self.compute().await?);
        self.hold(ranking.clone());
        Ok(ranking)
    }

    /// A new ranking of every open room (at most [`ListsConfig::max_rooms`]).
    async fn compute(&self) -> Result<Ranking> {
        let deps = &self.deps;
        let now = deps.store_clock.now().await?;
        let max = self.config.max_rooms as usize;
        let mut rooms = Vec::new();
        let mut after = None;
        let mut truncated = false;
        loop {
            let page = deps.directory.scan_open(after.take(), SCAN_PAGE).await?;
            let full = page.len() == SCAN_PAGE as usize;
            after = page.last().map(|r| r.summary.room_id.clone());
            rooms.extend(page);
            if rooms.len() >= max {
                truncated = full || rooms.len() > max;
                rooms.truncate(max);
                break;
            }
            if !full {
                break;
            }
        }
        metrics::gauge!("room_lists_rooms_scanned").set(rooms.len() as f64);
        if truncated {
            metrics::counter!("room_lists_truncated_total").increment(1);
            tracing::warn!(
                max,
                "room lists: more open rooms than lists.max_rooms; the lists end there"
            );
        }
        let mut owners: Vec<UserId> = rooms.iter().map(|r| r.summary.owner.clone()).collect();
        owners.sort_unstable();
        owners.dedup();
        // Through the node's profile cache: a refresh every few seconds reads from the
        // directory only the owners whose entries expired (display fields are as fresh as in
        // every other view: `profiles.cache_ttl_ms`).
        let profiles = deps.profiles.cache().get_many(&owners).await?;
        let robots = self.robot_rooms().await?;
        let pins = deps.pins.list_live(now).await?;
        // Newer than any held, whatever the clocks: a refresh in the same millisecond as the
        // last (or on a node whose clock is behind the one that ranked it) still replaces it.
        let held = self.held().map_or(0, |h| h.generation);
        let generation = u64::try_from(now.0).unwrap_or(0).max(held + 1);
        // Off the runtime's workers: ranking every room is milliseconds of CPU that requests
        // arriving meanwhile would otherwise wait behind.
        let (rules, left_out) = (
            self.config.score.clone(),
            self.config.robots_left_out.clone(),
        );
        tokio::task::spawn_blocking(move || {
            Ranking::build(
                rank::RankInput {
                    rooms,
                    owners: &profiles,
                    robots: &robots,
                    pins,
                    truncated,
                },
                &rules,
                &left_out,
                generation,
                now,
            )
        })
        .await
        .map_err(|e| Error::Internal(format!("the room lists' ranking failed: {e}")))
    }

    /// Every robot room.
    async fn robot_rooms(&self) -> Result<HashSet<RoomId>> {
        let mut robots = HashSet::new();
        let mut after = None;
        loop {
            let page = self
                .deps
                .robots
                .list(after.take(), MAX_ROBOT_ROOM_PAGE)
                .await?;
            let full = page.len() == MAX_ROBOT_ROOM_PAGE as usize;
            after = page.last().map(|r| r.room_id.clone());
            robots.extend(page.into_iter().map(|r| r.room_id));
            if !full {
                return Ok(robots);
            }
        }
    }

    /// A page of a tab for `caller`.
    pub async fn page(&self, caller: &UserId, query: &ListQuery) -> Result<ListPage> {
        if query.tab == Tab::Following {
            return self.following_page(caller, query).await;
        }
        let offset = match query.cursor {
            None => 0,
            Some(ListCursor::Place(place)) => place,
            Some(ListCursor::Followed(_)) => {
                return Err(Error::Invalid(
                    "the cursor is one of the following tab".into(),
                ));
            }
        };
        let key = self.key_of(caller, query).await?;
        let ranking = self.ranking().await?;
        let page = ranking.page(&key, offset, query.limit, self.deps.clock.now());
        Ok(ListPage {
            items: page
                .items
                .into_iter()
                .map(|item| ListItem {
                    room: item.room.clone(),
                    pinned: item.pinned,
                    open: true,
                })
                .collect(),
            next: page.next.map(ListCursor::Place),
        })
    }

    /// The list a tab and its scope name; a scope left out is the caller's own.
    async fn key_of(&self, caller: &UserId, query: &ListQuery) -> Result<ListKey> {
        let own = |pick: fn(&UserProfile) -> Option<String>| async move {
            Ok::<_, Error>(
                self.deps
                    .profiles
                    .get(caller)
                    .await?
                    .as_ref()
                    .and_then(pick),
            )
        };
        let missing =
            |what: &str| Error::Invalid(format!("{what}: give one; the caller's profile has none"));
        Ok(match query.tab {
            Tab::Hot | Tab::Following => ListKey::Hot,
            Tab::New => ListKey::New,
            Tab::Region => {
                let region = match &query.region {
                    Some(region) => region.clone(),
                    None => own(|p| p.region.clone())
                        .await?
                        .ok_or_else(|| missing("region"))?,
                };
                ListKey::Region(region)
            }
            Tab::Country => {
                let country = match &query.country {
                    Some(country) => country.clone(),
                    None => own(|p| p.country.clone())
                        .await?
                        .ok_or_else(|| missing("country"))?,
                };
                ListKey::Country(country)
            }
            Tab::Agency => {
                let agency = match &query.agency {
                    Some(agency) => agency.clone(),
                    None => own(|p| p.agency.clone())
                        .await?
                        .ok_or_else(|| missing("agency"))?,
                };
                ListKey::Agency(agency)
            }
        })
    }

    /// A page of the rooms `caller` follows, open ones first, each shown from the ranking
    /// when it is in it.
    async fn following_page(&self, caller: &UserId, query: &ListQuery) -> Result<ListPage> {
        let after = match query.cursor {
            None => None,
            Some(ListCursor::Followed(cursor)) => Some(cursor),
            Some(ListCursor::Place(_)) => {
                return Err(Error::Invalid(
                    "the cursor is not one of the following tab".into(),
                ));
            }
        };
        let followed = self
            .deps
            .following
            .followed_rooms(caller, after, query.limit)
            .await?;
        let ranking = self.ranking().await?;
        let full = followed.len() == query.limit as usize;
        let next = followed
            .last()
            .filter(|_| full)
            .map(|room| ListCursor::Followed(room.cursor));
        let missing: Vec<RoomId> = followed
            .iter()
            .filter(|f| !ranking.places.contains_key(&f.room_id))
            .map(|f| f.room_id.clone())
            .collect();
        let mut summaries: HashMap<RoomId, _> = HashMap::new();
        for chunk in missing.chunks(MAX_SUMMARIES_READ) {
            for summary in self.deps.directory.get_summaries(chunk).await? {
                summaries.insert(summary.room_id.clone(), summary);
            }
        }
        let now = ranking.ranked_at;
        let items = followed
            .into_iter()
            .filter_map(|followed| {
                let room = match ranking.places.get(&followed.room_id) {
                    Some(place) => ranking.rooms[*place as usize].clone(),
                    None => ListedRoom::of(
                        summaries.remove(&followed.room_id)?,
                        None,
                        None,
                        false,
                        &self.config.score,
                        now,
                    ),
                };
                Some(ListItem {
                    room,
                    pinned: false,
                    open: followed.open,
                })
            })
            .collect();
        Ok(ListPage { items, next })
    }
}

/// Why a scope given to a tab breaks its field's rule, if it does: the query parameter and
/// what is wrong. A region follows the rooms' region rule (it is matched against the regions
/// rooms were created in), a country and an agency the profiles' rules.
pub fn scope_problem(query: &ListQuery) -> Option<(&'static str, String)> {
    if let Some(region) = &query.region
        && (region.trim().is_empty() || room_domain::Field::Region.check(region).is_err())
    {
        return Some((
            "region",
            format!("{region:?} is not a region: 1 to 32 characters, not blank"),
        ));
    }
    let patch = ProfilePatch {
        country: query.country.clone().map_or(Change::Keep, Change::Set),
        agency: query.agency.clone().map_or(Change::Keep, Change::Set),
        ..ProfilePatch::default()
    };
    patch.problem()
}
