//! What a case is made of: the pool of users and robots, the rules, and the steps, each
//! naming its actor, targets and seats by rule so that they resolve against the state when
//! the step runs.

use room_domain::RoomRules;

/// Users in the pool; user 0 creates the room, user 7 is a platform admin.
pub const USERS: usize = 8;
/// Robots in the pool, besides the users.
pub const ROBOTS: usize = 3;
pub const OWNER: usize = 0;
pub const PLATFORM_ADMIN: usize = 7;
/// 2025-11-30T00:00:00Z.
pub const EPOCH: i64 = 1_764_460_800_000;
pub const MS_PER_DAY: i64 = 86_400_000;
/// Cases per run: enough that each rare path the coverage check asks for (a gift stamped on an
/// earlier day, a launch on a later one) is reached about ten times in a run.
pub const DEFAULT_CASES: u32 = 512;

/// One generated run against one room.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub rules: RoomRules,
    pub vip_levels: [u8; USERS],
    /// Milliseconds after [`EPOCH`] of the first command.
    pub start: i64,
    /// Whether user 0 creates the room before the random steps (otherwise only a random
    /// `CreateRoom` step may create it).
    pub create_first: bool,
    pub seat_count: Option<u8>,
    /// Users who join right after the creation, before the random steps.
    pub joiners: Vec<usize>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub advance: Advance,
    pub actor: Who,
    /// Whether the command comes from someone who may send it (the system for timers and
    /// callbacks, a moderator for moderation, a member for seats and gifts); otherwise from
    /// `actor`, whoever that is.
    pub fitting_actor: bool,
    /// The `Ctx::random` of the command.
    pub random: u64,
    /// Whether to restore the state from a JSON snapshot after this step and replay the rest of
    /// the log onto it.
    pub snapshot: bool,
    pub op: Op,
}

#[derive(Debug, Clone, Copy)]
pub enum Advance {
    /// Milliseconds forward.
    Millis(i64),
    /// To the start of the next local day, plus these milliseconds.
    NextDay(i64),
    /// Milliseconds backward: the room moved to a node whose clock is behind.
    Back(i64),
    /// Backward to these milliseconds before the start of the current local day: a clock
    /// behind by enough to be on the previous day. Up to an hour, so that the steps after it
    /// (mostly seconds) stay on the previous day long enough for gifts to be stamped there.
    BackOverMidnight(i64),
}

/// Who acts, resolved against the state when the step runs so that most commands come from
/// someone who may send them.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    /// The k-th member (modulo their number), or user k if the room is empty.
    Member(usize),
    /// The k-th of the owner, the appointed admins and the platform admin.
    Moderator(usize),
    /// User k of the pool, member or not.
    Anyone(usize),
    /// Robot k of the pool, member or not.
    Robot(usize),
    /// The k-th robot member (modulo their number), or robot k if none is present.
    RobotMember(usize),
    System,
}

/// A user a command is about, resolved against the state like [`Who`].
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// The k-th member (modulo their number), or user k if the room is empty.
    Member(usize),
    /// The k-th user with a ban entry (current or past), or user k if there is none.
    Banned(usize),
    /// The holder of the k-th occupied seat (modulo their number), or user k.
    Seated(usize),
    /// User k of the pool, member or not.
    Anyone(usize),
}

/// A seat a command is about, resolved against the state like [`Who`].
#[derive(Debug, Clone, Copy)]
pub enum SeatPick {
    /// Seat k modulo the room's seat count.
    Any(usize),
    /// The k-th occupied seat (modulo their number), or seat 0.
    Occupied(usize),
    /// The acting user's seat, or seat 0.
    Own,
    /// This index, often beyond the room's seats.
    Raw(u8),
}

#[derive(Debug, Clone)]
pub enum Op {
    CreateRoom {
        name: String,
        seat_count: Option<u8>,
        region: String,
    },
    UpdateProfile {
        name: Option<String>,
        notice: Option<String>,
        cover_url: Option<String>,
    },
    ChangeBackground(Option<String>),
    /// Which resources (bits 0-3: name, notice, cover, background; none is refused) and
    /// whether the reason is blank (refused).
    Revoke {
        resources: u8,
        blank_reason: bool,
    },
    /// A system message; a blank one is refused.
    SystemMessage {
        blank: bool,
    },
    SetChatEnabled(bool),
    SetLock(Option<u8>),
    CloseRoom,
    Join {
        password_verified: bool,
    },
    Leave,
    Evict(Target),
    TakeSeat(SeatPick),
    /// Reserve a seat for VIP or open it again.
    SetSeatVip(SeatPick, bool),
    /// Invite a user to the room, or to a seat.
    Invite(Target, Option<SeatPick>),
    /// Show another room's big gift (the system only).
    GiftBroadcast,
    LeaveSeat(SeatPick),
    LockSeat(SeatPick, bool),
    MuteSeat(SeatPick, bool),
    RemoveFromSeat(SeatPick),
    ConfirmMicPublish(Target),
    MicPublishTimeout {
        pick: SeatPick,
        /// Names the seat's current session if it has one (otherwise `session`).
        current_session: bool,
        /// Moves time to the publish deadline first.
        wait: bool,
        session: u64,
    },
    RtcUserLeft(Target),
    Kick {
        user: Target,
        ban_seconds: Option<u32>,
    },
    Unban(Target),
    ChatMute {
        user: Target,
        seconds: u32,
    },
    SetAdmin {
        user: Target,
        admin: bool,
    },
    Gift(GiftOp),
    /// A robot joins (any robot when fitting).
    RobotJoin,
    /// A robot member leaves (when fitting).
    RobotLeave,
    /// A robot member sends a free gift (when fitting); the op's sender and actor are not used.
    RobotGift(GiftOp),
    Launch(LaunchOp),
    ResetRocket,
}

#[derive(Debug, Clone)]
pub struct GiftOp {
    pub sender: Target,
    pub by: GiftActor,
    pub recipients: Recipients,
    pub gift_id: &'static str,
    pub price: i64,
    pub heat: i64,
    pub fuel: i64,
    pub lucky: bool,
    pub count: u32,
    pub lucky_draw: u64,
}

#[derive(Debug, Clone)]
pub enum Recipients {
    /// `n` distinct members from the `start`-th on (fewer if fewer are present).
    Members { start: usize, n: usize },
    /// These users, maybe repeated, maybe absent.
    Listed(Vec<Target>),
}

#[derive(Debug, Clone, Copy)]
pub enum GiftActor {
    /// The gift saga.
    System,
    /// The sender themselves.
    Sender,
}

#[derive(Debug, Clone, Copy)]
pub enum LaunchOp {
    /// The timer of the current ignition (if any), maybe tampered with.
    Current { wait: bool, tweak: Tweak },
    /// A made-up timer.
    Arbitrary {
        rocket_id: u64,
        level: u32,
        scheduled_in: i64,
    },
}

#[derive(Debug, Clone, Copy)]
pub enum Tweak {
    None,
    RocketId,
    Level,
    ScheduledAt,
}
