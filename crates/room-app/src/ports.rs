//! The ports: every way the application reaches outside itself. Adapters implement them; use
//! cases and the Room Cell runtime hold them as `Arc<dyn Port>`.
//!
//! Verbs are fixed: `get_*` returns `Ok(None)` for absence, `create` fails with
//! [`Error::AlreadyExists`](crate::Error::AlreadyExists), `create_or_get` is idempotent, lists
//! are `list_*`. Every adapter passes the conformance suite of its port in
//! `testkit` (feature `testkit`).
//!
//! One file per port or small family, each with its shared handle (`XRef`) and, with feature
//! `mock`, its mockall mock (`MockX`):
//!
//! - storage a room's cell writes in its commits: [`cell_store`](CellStore) (the command log),
//!   [`snapshots`](SnapshotStore), [`outbox`](Outbox) (with the [`EventPublisher`] it drains
//!   to), [`timers`](Timers), [`payouts`](Payouts), [`directory`](RoomDirectory);
//! - money: [`gift_orders`](GiftOrders), [`wallet`](Wallet), [`catalog`](GiftCatalog),
//!   [`billing`](BillingPolicies) (the billing policy's versions), [`income`](IncomeLedger)
//!   (what gifts paid people) and whose agency a user belongs to ([`Agencies`]),
//!   [`gift_tallies`](GiftTallies) (gift value by user, turnover by room and day),
//!   [`boards`](Boards) (leaderboards of senders, receivers and rooms) and their
//!   [`rewards`](BoardRewards);
//! - the cluster: [`lease`](Lease), [`forwarder`](Forwarder), [`work_claims`](WorkClaims),
//!   [`keyed_requests`](KeyedRequests) (idempotency keys);
//! - consumers of the durable facts: [`positions`](ConsumerPositions);
//! - the room lists: [`pins`](RoomPins) (rooms admins pin into a list), [`list_cache`](ListCache)
//!   (the ranked lists every node reads);
//! - people: [`presence`](Presence), [`follows`](RoomFollows) (the rooms users follow),
//!   [`password_attempts`](PasswordAttempts),
//!   [`rate_budgets`](RateBudgets) (per-user request budgets), [`open_streams`](OpenStreams)
//!   (the event streams users hold over the cluster),
//!   [`messenger`](Messenger) (display events);
//! - who people are: [`users`](UserDirectory) (nickname, avatar, region, country, agency),
//!   [`vip`](VipGrants) (VIP grants and the level table);
//! - robots: [`robot_rooms`](RobotRooms);
//! - the room rocket's levels as operators change them: [`rocket`](RocketSettingsStore);
//! - time and ids: [`clock`](Clock).

mod billing;
mod board_rewards;
mod boards;
mod catalog;
mod cell_store;
mod clock;
mod directory;
mod follows;
mod forwarder;
mod gift_orders;
mod gift_tallies;
mod income;
mod keyed_requests;
mod lease;
mod list_cache;
mod messenger;
mod open_streams;
mod outbox;
mod password_attempts;
mod payouts;
mod pins;
mod positions;
mod presence;
mod rate_budgets;
mod robot_rooms;
mod rocket;
mod snapshots;
mod timers;
mod users;
mod vip;
mod wallet;
mod work_claims;

pub use billing::{BillingPolicies, BillingPoliciesRef};
pub use board_rewards::{
    BoardPayout, BoardRewards, BoardRewardsRef, MAX_PAYOUT_PAGE, MAX_RANK_REWARD, MAX_REWARD_RANKS,
    MAX_REWARD_TABLES, RewardTable, RewardTables, check_board_payouts,
};
pub use boards::{
    BoardEntry, BoardGift, BoardId, BoardKind, BoardPeriod, BoardStanding, BoardSums, Boards,
    BoardsRef, MAX_BOARD_GIFTS, MAX_BOARD_PAGE, MAX_COUNTED_RANK, check_board_entries,
    check_board_gifts,
};
pub use catalog::{
    CatalogGift, GiftCatalog, GiftCatalogRef, MAX_GIFT_NAME_CHARS, MAX_GIFT_UNIT_VALUE,
};
pub use cell_store::{
    Activation, CellStore, CellStoreRef, CommandRecord, CommandReply, CommitBatch, StoredEvent,
};
pub use clock::{Clock, ClockRef, IdGen, IdGenRef};
pub use directory::{
    CoverHolder, MAX_OPEN_SCAN, MAX_SUMMARIES_READ, OpenRoom, RoomDirectory, RoomDirectoryRef,
    RoomSummary, check_summaries_read,
};
pub use follows::{FollowOutcome, FollowedRoom, MAX_FOLLOW_PAGE, RoomFollows, RoomFollowsRef};
pub use forwarder::{
    BatchStanding, ForwardedCommand, Forwarder, ForwarderRef, Membership, Peer, ReadKind,
};
pub use gift_orders::{GiftOrders, GiftOrdersRef, OrderCursor};
pub use gift_tallies::{
    GiftTallies, GiftTalliesRef, GiftTally, GiftValues, MAX_TALLY_COUNT, MAX_TURNOVER_PAGE,
    PERIOD_DAY, PERIOD_LIFETIME, PERIOD_MONTH, PERIOD_WEEK, RoomTurnover, TallySums,
    TurnoverSettlement, ValueTotals, check_tallies, period_keys,
};
pub use income::{
    Agencies, AgenciesRef, IncomeEntry, IncomeLedger, IncomeLedgerRef, IncomeRecord,
    MAX_INCOME_CREDIT, MAX_INCOME_PAGE, NoAgencies, check_income_entries,
};
pub use keyed_requests::{
    KeyClaim, KeyedAnswer, KeyedRecord, KeyedRequests, KeyedRequestsRef, MAX_KEYED_ANSWER_BYTES,
};
pub use lease::{Lease, LeaseHolder, LeaseRef};
pub use list_cache::{CachedLists, ListCache, ListCacheRef, MAX_LIST_CACHE_BYTES};
pub use messenger::{DisplayMessage, Messenger, MessengerRef};
pub use open_streams::{OpenStreams, OpenStreamsRef};
pub use outbox::{
    DeadLetter, EventPublisher, EventPublisherRef, Outbox, OutboxMessage, OutboxRef, Published,
};
pub use password_attempts::{Counted, PasswordAttempts, PasswordAttemptsRef};
pub use payouts::{Payout, Payouts, PayoutsRef};
pub use pins::{
    MAX_LIVE_PINS, MAX_PIN_ID_BYTES, MAX_PIN_PAGE, MAX_PIN_POSITION, PinnedList, RoomPin, RoomPins,
    RoomPinsRef,
};
pub use positions::{ConsumerPositions, ConsumerPositionsRef};
pub use presence::{Presence, PresenceRef, StaleCursor, StaleMember};
pub use rate_budgets::{RateBudgets, RateBudgetsRef, gcra};
pub use robot_rooms::{
    GiftShare, MAX_GIFT_MIX, MAX_GIFT_WEIGHT, MAX_ROBOT_GIFTS_PER_MINUTE, MAX_ROBOT_ROOM_PAGE,
    MAX_ROBOTS, RobotProfile, RobotRoomConfig, RobotRoomProblem, RobotRooms, RobotRoomsRef,
    check_cover_url, is_robot_id,
};
pub use rocket::{RocketSettingsStore, RocketSettingsStoreRef};
pub use snapshots::{SnapshotStore, SnapshotStoreRef};
pub use timers::{Timer, TimerCursor, Timers, TimersRef};
pub use users::{
    Change, MAX_AGENCY_CHARS, MAX_NICKNAME_CHARS, MAX_PROFILE_BATCH, MAX_REGION_CHARS,
    ProfilePatch, UserDirectory, UserDirectoryRef, UserProfile, batch_too_large,
};
pub use vip::{VipGrant, VipGrants, VipGrantsRef, VipLevels, check_grant_level, check_level_count};
pub use wallet::{CreditKind, DebitStatus, Wallet, WalletRef};
pub use work_claims::{WorkClaims, WorkClaimsRef};

#[cfg(any(test, feature = "mock"))]
pub use self::{
    billing::MockBillingPolicies,
    board_rewards::MockBoardRewards,
    boards::MockBoards,
    catalog::MockGiftCatalog,
    cell_store::MockCellStore,
    clock::{MockClock, MockIdGen},
    directory::MockRoomDirectory,
    follows::MockRoomFollows,
    forwarder::MockForwarder,
    gift_orders::MockGiftOrders,
    gift_tallies::MockGiftTallies,
    income::{MockAgencies, MockIncomeLedger},
    keyed_requests::MockKeyedRequests,
    lease::MockLease,
    list_cache::MockListCache,
    messenger::MockMessenger,
    open_streams::MockOpenStreams,
    outbox::{MockEventPublisher, MockOutbox},
    password_attempts::MockPasswordAttempts,
    payouts::MockPayouts,
    pins::MockRoomPins,
    positions::MockConsumerPositions,
    presence::MockPresence,
    rate_budgets::MockRateBudgets,
    robot_rooms::MockRobotRooms,
    rocket::MockRocketSettingsStore,
    snapshots::MockSnapshotStore,
    timers::MockTimers,
    users::MockUserDirectory,
    vip::MockVipGrants,
    wallet::MockWallet,
    work_claims::MockWorkClaims,
};
