//! The JSON bodies of the API, one module per resource: requests as clients send them (ids as
//! plain strings, validated in the handlers so that a bad one gets the `INVALID_ID` code) and
//! responses built from the use cases' types. Times are milliseconds since the Unix epoch;
//! coins are integers. The schemas that state what the server enforces on strings and lists
//! are in `schema`; how request fields are read beyond serde's defaults, in `fields`.

mod billing;
mod boards;
mod events;
mod fields;
mod gifts;
mod lists;
mod me;
mod messages;
mod ops;
mod outbox;
mod robot_rooms;
mod rocket;
mod rooms;
mod schema;
mod tallies;
mod users;
mod vip;
mod wallet;

pub use billing::{BillingPolicyResponse, IncomeResponse, PutBillingRequest};
pub use boards::{
    BoardItem, BoardOf, BoardPayoutsResponse, BoardResponse, BoardRewardsResponse,
    BoardStandingResponse, PutBoardRewardsRequest,
};
pub use events::StreamEvent;
pub use gifts::{
    GiftCatalogEntry, GiftCatalogResponse, GiftErrorResponse, GiftResponse, PutGiftRequest,
    RecipientsField, SendGiftRequest,
};
pub use lists::{CreatePinRequest, PinListResponse, PinResponse, RoomListResponse};
pub use me::{CurrentRoomResponse, ImCredentialsResponse};
pub use messages::{SystemMessageRequest, SystemMessageResponse, TargetField};
pub use ops::{HealthResponse, RtcAck};
pub use outbox::{DeadLetterListResponse, DeadLetterResponse};
pub use robot_rooms::{
    CreateRobotRoomRequest, GiftShareRequest, PatchRobotRoomRequest, RobotProfileRequest,
    RobotRoomListResponse, RobotRoomResponse,
};
pub use rocket::{PutRocketRequest, RocketSettingsResponse};
pub use rooms::{
    BannedUsersResponse, ChatMuteRequest, CreateRoomRequest, FollowResponse, FollowedRoomItem,
    FollowedRoomsResponse, InviteRequest, InviteResponse, JoinRequest, KickRequest,
    LockSeatRequest, MuteSeatRequest, OnlineUsersResponse, PatchRoomRequest, RankResponse,
    RevokeRequest, RoomResponse, SeatVipRequest, UnbanRequest,
};
pub use schema::{
    Audience, Country, GiftName, Id, ImageUrl, MessageTargetSchema, MessageText, Nickname, Notice,
    OrderIdSchema, Reason, Recipients, Region, RobotPool, RoomName, UserRegion, VipBackgroundUrl,
};
pub use tallies::{GiftValueResponse, TurnoverResponse};
pub use users::{
    PatchMyProfileRequest, PutUserRequest, PutUsersRequest, PutUsersResponse, UserProfileResponse,
};
pub use vip::{PutVipLevelsRequest, PutVipRequest, VipGrantResponse, VipLevelsResponse};
pub use wallet::{CreditRequest, CreditResponse, WalletResponse};
