//! The room command that applies an order ([`gift_apply_command`]) and its id
//! ([`gift_command_id`]): the same for every drive of one order, so the room applies it once.

use room_domain::{Command, CommandId, CommandKind, GiftOrder, OrderKeys};

/// The id of the room command that applies `order`.
///
/// An order is its sender's, so its command id derives from the sender and the order id: two
/// senders' orders with one order id are two gifts, in one room too. It is
/// [`crate::SYSTEM_ID_PREFIX`]`gift-`, the order's creation time in milliseconds as 12 hex
/// digits, `-`, and 32 hex digits (128 bits) of the SHA-256 of the sender and the order id:
/// 54 characters, within the id length rule. The time comes first so that a room's commands
/// are stored in about the order they arrive: a hash alone would put each one on a random page
/// of the room's command log, and a group commit would rewrite many pages instead of a few.
/// The stored order keeps its creation time, so every drive of one order names the same
/// command. No other command can take it: clients' order ids may not start with the system
/// prefix, and no system command uses this form. An order stored before
/// ([`OrderKeys::OrderId`]) was applied under its order id, and keeps it, so its stored
/// command still answers its repeats.
pub fn gift_command_id(order: &GiftOrder) -> CommandId {
    match order.keys {
        OrderKeys::OrderId => order.order_id.clone().into(),
        OrderKeys::SenderAndOrderId => {
            // The sender and the order id, each behind its length: independent of how the
            // wallet names the order's operations.
            let digest = crate::digest::length_prefixed_sha256([
                order.sender.as_str().as_bytes(),
                order.order_id.as_str().as_bytes(),
            ]);
            let mut id = String::with_capacity(GIFT_COMMAND_ID_CHARS);
            id.push_str(crate::ids::SYSTEM_ID_PREFIX);
            id.push_str("gift-");
            // Each gift names its command once per drive: hex digits by hand, not through
            // the formatter.
            let time = u64::try_from(order.created_at.0).unwrap_or(0);
            if time < 1 << 48 {
                crate::digest::push_hex(&mut id, &time.to_be_bytes()[2..]);
            } else {
                // Past the year 10889: as many digits as it takes.
                id.push_str(&format!("{time:012x}"));
            }
            id.push('-');
            crate::digest::push_hex(&mut id, &digest[..16]);
            CommandId::new(id).expect("hex digits with a short prefix are a valid id")
        }
    }
}

/// The length of a [`gift_command_id`] of an [`OrderKeys::SenderAndOrderId`] order.
const GIFT_COMMAND_ID_CHARS: usize =
    crate::ids::SYSTEM_ID_PREFIX.len() + "gift-".len() + 12 + 1 + 32;

/// The command that applies `order` to its room, by the system: its
/// [`gift_command_id`] and its `ApplyGift`. Every drive of the order sends this same command,
/// so the room applies it once.
pub fn gift_apply_command(order: &GiftOrder) -> Command {
    Command::new(
        gift_command_id(order),
        CommandKind::ApplyGift(order.apply_command()),
    )
    .with_display(order.sender_display.clone())
}
