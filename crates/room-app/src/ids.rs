//! Ids the service makes up itself: the prefix that sets them apart from every id a client
//! may choose.

/// The prefix of command ids the service makes up itself from outside facts (an RTC
/// callback's event, say). Such ids can be predicted, so no client-chosen id may start with
/// it: a gift's order id, which becomes its command id, is refused when it does.
pub const SYSTEM_ID_PREFIX: &str = "sys-";
