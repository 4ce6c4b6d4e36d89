//! Display events as the Room Cell hands them to a messenger.

#![allow(dead_code)]

use room_app::ports::DisplayMessage;
use room_domain::{
    Coins, DayKey, Event, EventEnvelope, GiftId, GiftSent, ImPriority, LeaveReason, OrderId,
    RoomId, Timestamp, UserId, WeekKey,
};

/// A room id.
pub fn room(id: &str) -> RoomId {
    RoomId::new(id).unwrap()
}

/// `event` of `room` at `seq`, with the priority and coalescing key its delivery says.
pub fn display(room: &RoomId, seq: u64, event: Event) -> DisplayMessage {
    let delivery = event.delivery();
    DisplayMessage {
        envelope: EventEnvelope::new(room.clone(), seq, Timestamp(1_764_460_800_000), &event),
        priority: delivery.im.expect("a display event"),
        coalesce_key: delivery.coalesce_key,
    }
}

/// `event` of `room` at `seq` with the priority given and no coalescing key.
pub fn display_as(room: &RoomId, seq: u64, event: Event, priority: ImPriority) -> DisplayMessage {
    DisplayMessage {
        priority,
        coalesce_key: None,
        ..display(room, seq, event)
    }
}

/// A gift of one rose from `u-{n % 50}` to the host (High).
pub fn gift(n: u64) -> Event {
    Event::RoomGiftSent(GiftSent {
        order_id: OrderId::new(format!("o-{n}")).unwrap(),
        sender: UserId::new(format!("u-{}", n % 50)).unwrap(),
        recipients: vec![UserId::new("host").unwrap()],
        gift_id: GiftId::new("rose").unwrap(),
        count: 1,
        unit_price: Coins(10),
        total_value: Coins(10),
        heat_added: 10,
        fuel_added: 10,
        lucky: None,
        robot: false,
        billing_version: None,
        sender_nickname: None,
        sender_avatar_url: None,
    })
}

/// The rocket's fuel (Low, coalesced by `rocket_fuel`).
pub fn fuel(fuel: i64) -> Event {
    Event::RoomRocketFuelChanged {
        level: 1,
        fuel,
        threshold: 1_000_000,
    }
}

/// The room's heat (Low, coalesced by `heat`).
pub fn heat(heat: i64) -> Event {
    Event::RoomHeatChanged { heat, delta: 10 }
}

/// A contribution (Low, coalesced by `rank`).
pub fn rank(n: u64) -> Event {
    Event::RoomRankChanged {
        user: UserId::new(format!("u-{}", n % 50)).unwrap(),
        day_key: DayKey(20_422),
        week_key: WeekKey(2_917),
        day_total: Coins(n as i64 * 10),
        week_total: Coins(n as i64 * 10),
    }
}

/// A user left (Normal).
pub fn left(n: u64) -> Event {
    Event::RoomUserLeft {
        user: UserId::new(format!("u-{n}")).unwrap(),
        reason: LeaveReason::Left,
        robot: false,
    }
}

/// A profile update whose notice has `notice_bytes` bytes (Normal).
pub fn profile(notice_bytes: usize) -> Event {
    Event::RoomProfileUpdated {
        name: "room".to_owned(),
        notice: "n".repeat(notice_bytes),
        cover_url: None,
        by: None,
    }
}
