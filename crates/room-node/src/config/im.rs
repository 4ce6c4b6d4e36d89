//! `[im]` in the reference: what each key of [`adapters_tencent_im::ImSettings`] is for.
//! The settings are adapters-tencent-im's own; their descriptions live here, beside the other
//! sections'.

use super::reference::Section;

/// What `[im]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "im",
    about: "Tencent IM (the settings of `adapters-tencent-im`). With `sdk_app_id` and \
        `secret_key`, display events go to the rooms' IM groups as well as to the event stream, \
        the groups follow the rooms, and `GET /v1/me/im-credentials` answers; without them, \
        display goes to the event stream only.",
    keys: &[
        ("sdk_app_id", "The IM app's SDKAppID."),
        (
            "secret_key",
            "The app's secret key, as the console shows it.",
        ),
        (
            "admin_id",
            "The app admin account every REST call is made as.",
        ),
        (
            "base_url",
            "The scheme and host of the REST API, without a path: the region's host \
             (`https://adminapisgp.im.qcloud.com` for Singapore, ...).",
        ),
        (
            "user_sig_ttl_secs",
            "The lifetime of the UserSigs given to clients, in seconds.",
        ),
        (
            "admin_sig_ttl_secs",
            "The lifetime of the admin's UserSig, in seconds; a new one is signed when less than \
             half of it remains.",
        ),
        (
            "request_timeout_ms",
            "How long one HTTP request may take, in milliseconds; above Tencent's own 3 s.",
        ),
        (
            "max_attempts",
            "The most attempts of one call that meets retryable failures (at least 1).",
        ),
        (
            "retry_backoff_ms",
            "The wait before the first retry, in milliseconds; it doubles with each retry.",
        ),
        (
            "max_backoff_ms",
            "The longest wait between retries, in milliseconds.",
        ),
        (
            "bad_sig_wait_ms",
            "The wait before the one retry after Tencent's 70050 (too many bad signatures), in \
             milliseconds; Tencent asks for a minute.",
        ),
        (
            "pool_max_idle",
            "The most idle keep-alive connections kept per host.",
        ),
        (
            "display.queue_capacity",
            "Commits' display batches waiting for the dispatcher, for the whole node; a commit \
             that finds it full is dropped (counted).",
        ),
        (
            "display.room_rate_per_sec",
            "Messages per second to one room's group; Tencent drops beyond 40.",
        ),
        (
            "display.room_burst",
            "Messages one room may send at once after a quiet spell; `room_burst + \
             room_rate_per_sec` must stay below 40.",
        ),
        (
            "display.room_queue_max",
            "Events one room may have waiting; beyond, the oldest of the lowest priority is shed.",
        ),
        (
            "display.coalesce_ms",
            "How long a coalescible event (fuel, heat, rank) waits for newer values of its key, in \
             milliseconds; only the newest is sent.",
        ),
        (
            "display.max_in_flight",
            "The most sends in flight at once on this node, across rooms (each room has at most \
             one).",
        ),
        (
            "display.app_rate_per_sec",
            "`send_group_msg` calls per second from this node, across rooms. Tencent allows an app \
             200 calls a second, shared by every node: set about 150 divided by the nodes (a rate \
             and burst above 200 stop the start).",
        ),
        (
            "display.app_burst",
            "Calls this node may make at once above `app_rate_per_sec` after a quiet spell.",
        ),
        (
            "display.max_held_events",
            "Events held across all rooms (queued, held for coalescing, or waiting for their \
             group); beyond, new events are dropped, whatever their priority.",
        ),
        (
            "display.max_age_ms",
            "The oldest an event may be when its turn to be sent comes, in milliseconds; an older \
             one is dropped.",
        ),
        (
            "display.no_group_retry_ms",
            "How long a message refused because its room's group does not exist yet is kept and \
             sent again (after 1 s, then 2 s, 4 s, ...), in milliseconds.",
        ),
        (
            "display.max_message_bytes",
            "The most bytes a message's `MsgBody`, as JSON, may take (at most 12,032: Tencent \
             refuses a request beyond 12 KiB, counted whole); the default leaves a margin.",
        ),
        (
            "display.drain_ms",
            "How long a graceful stop keeps sending what is queued, in milliseconds.",
        ),
    ],
};
