//! The conformance suite of [`RoomDirectory`]: short ids unique both ways, summaries written
//! by commits (every field, the cover set and cleared), the list of open rooms by heat with
//! cursor paging, the scan of open rooms by room id with their short ids, and cover claims
//! (one holder per cover, also when rooms claim it at once; take-over by compare and set).

use std::future::Future;
use std::sync::Arc;

use room_domain::RoomId;

use super::fixtures::{at, batch, ok, room, same, summary};
use crate::ports::{CellStore, CoverHolder, OpenRoom, RoomDirectory, RoomSummary};

/// Runs every [`RoomDirectory`] check, each against a fresh store from `fresh`. Summaries are
/// written only by [`CellStore::commit`], so the store must implement both.
pub async fn room_directory_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RoomDirectory + CellStore + 'static,
{
    short_ids_are_unique_both_ways(fresh().await).await;
    summaries_come_from_commits(fresh().await).await;
    summaries_are_read_many_at_once(fresh().await).await;
    open_rooms_by_heat_with_paging(fresh().await).await;
    open_rooms_scanned_by_room_id(fresh().await).await;
    a_cover_has_one_holder(fresh().await).await;
    rooms_claiming_one_cover_at_once_leave_one_holder(fresh().await).await;
}

async fn a_cover_has_one_holder<S: RoomDirectory>(store: Arc<S>) {
    let (a, b, c) = (room("room-a"), room("room-b"), room("room-c"));
    let cover = "https://cdn.example.com/covers/Sunset.png?v=2";
    let holder = |room_id: &RoomId, ms: i64| CoverHolder {
        room_id: room_id.clone(),
        claimed_at: at(ms),
    };
    same(
        ok(store.claim_cover(cover, &a, at(100)).await, "claim_cover"),
        holder(&a, 100),
        "a free cover is claimed",
    );
    same(
        ok(store.claim_cover(cover, &a, at(200)).await, "claim_cover"),
        holder(&a, 100),
        "claiming one's own cover again keeps the first claim",
    );
    same(
        ok(store.claim_cover(cover, &b, at(300)).await, "claim_cover"),
        holder(&a, 100),
        "another room's claim answers the holder",
    );
    let other = "https://cdn.example.com/covers/sunset.png?v=2";
    same(
        ok(store.claim_cover(other, &b, at(300)).await, "claim_cover"),
        holder(&b, 300),
        "covers differing in case are two covers",
    );
    assert!(
        !ok(
            store
                .take_over_cover(cover, &holder(&c, 100), &b, at(400))
                .await,
            "take_over_cover"
        ),
        "a take-over from a room that does not hold the cover moves nothing"
    );
    assert!(
        !ok(
            store
                .take_over_cover(cover, &holder(&a, 99), &b, at(400))
                .await,
            "take_over_cover"
        ),
        "a take-over of another claim of the holder moves nothing"
    );
    assert!(
        ok(
            store
                .take_over_cover(cover, &holder(&a, 100), &a, at(450))
                .await,
            "take_over_cover"
        ),
        "the holder renews its claim"
    );
    assert!(
        !ok(
            store
                .take_over_cover(cover, &holder(&a, 100), &b, at(460))
                .await,
            "take_over_cover"
        ),
        "a take-over of the claim before its renewal moves nothing"
    );
    assert!(
        ok(
            store
                .take_over_cover(cover, &holder(&a, 450), &b, at(500))
                .await,
            "take_over_cover"
        ),
        "a take-over of the holder's claim moves the cover"
    );
    same(
        ok(store.claim_cover(cover, &a, at(600)).await, "claim_cover"),
        holder(&b, 500),
        "the cover is the new holder's, from the take-over",
    );
    assert!(
        !ok(
            store
                .take_over_cover(cover, &holder(&a, 450), &c, at(700))
                .await,
            "take_over_cover"
        ),
        "a second take-over from the old holder moves nothing"
    );
    same(
        ok(store.get_cover(cover).await, "get_cover"),
        Some(holder(&b, 500)),
        "the claim reads back",
    );
    same(
        ok(
            store.get_cover("https://cdn.example.com/none.png").await,
            "get_cover",
        ),
        None,
        "a cover nobody claimed has no claim",
    );
    ok(
        store.release_cover(cover, &holder(&a, 450)).await,
        "release_cover",
    );
    ok(
        store.release_cover(cover, &holder(&b, 499)).await,
        "release_cover",
    );
    same(
        ok(store.claim_cover(cover, &c, at(800)).await, "claim_cover"),
        holder(&b, 500),
        "a release of another room's claim, or of the holder's claim before a renewal, lets nothing go",
    );
    ok(
        store.release_cover(cover, &holder(&b, 500)).await,
        "release_cover",
    );
    same(
        ok(store.claim_cover(cover, &c, at(900)).await, "claim_cover"),
        holder(&c, 900),
        "a cover let go is claimed anew",
    );
    let longest = format!("https://cdn.example.com/{}.png", "x".repeat(2020));
    assert_eq!(longest.len(), 2048);
    same(
        ok(
            store.claim_cover(&longest, &a, at(1000)).await,
            "claim_cover",
        ),
        holder(&a, 1000),
        "a cover of the longest allowed URL is claimed",
    );
}

async fn rooms_claiming_one_cover_at_once_leave_one_holder<S: RoomDirectory + 'static>(
    store: Arc<S>,
) {
    let cover = "https://cdn.example.com/covers/raced.png";
    let claims: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let room_id = room(&format!("room-{i}"));
                let holder = store.claim_cover(cover, &room_id, at(i)).await;
                (room_id, holder)
            })
        })
        .collect();
    let mut holders = Vec::new();
    let mut winners = 0;
    for claim in claims {
        let (room_id, holder) = claim.await.expect("a claim");
        let holder = ok(holder, "claim_cover");
        if holder.room_id == room_id {
            winners += 1;
        }
        holders.push(holder);
    }
    assert_eq!(winners, 1, "one room got the cover: {holders:?}");
    assert!(
        holders.windows(2).all(|w| w[0] == w[1]),
        "every claim answered the same holder: {holders:?}"
    );
}

async fn short_ids_are_unique_both_ways<S: RoomDirectory>(store: Arc<S>) {
    let a = room("room-a");
    let b = room("room-b");
    same(
        ok(store.get_short_id(&a).await, "get_short_id"),
        None,
        "no short id at first",
    );
    same(
        ok(store.get_by_short_id(1001).await, "get_by_short_id"),
        None,
        "an unknown short id is absent",
    );
    assert!(
        ok(store.reserve_short_id(&a, 1001).await, "reserve"),
        "a free short id is reserved"
    );
    assert!(
        ok(store.reserve_short_id(&a, 1001).await, "reserve"),
        "reserving one's own short id again succeeds"
    );
    assert!(
        !ok(store.reserve_short_id(&b, 1001).await, "reserve"),
        "another room's short id is refused"
    );
    assert!(
        !ok(store.reserve_short_id(&a, 1002).await, "reserve"),
        "a room with a short id gets no second one"
    );
    same(
        ok(store.get_by_short_id(1002).await, "get_by_short_id"),
        None,
        "the refused second short id stays free",
    );
    assert!(
        ok(store.reserve_short_id(&b, 1002).await, "reserve"),
        "the free short id goes to another room"
    );
    same(
        ok(store.get_short_id(&a).await, "get_short_id"),
        Some(1001),
        "room a's short id",
    );
    same(
        ok(store.get_by_short_id(1001).await, "get_by_short_id"),
        Some(a),
        "short id 1001's room",
    );
    same(
        ok(store.get_by_short_id(1002).await, "get_by_short_id"),
        Some(b),
        "short id 1002's room",
    );
    assert!(
        ok(
            store.reserve_short_id(&room("room-c"), u32::MAX).await,
            "reserve"
        ),
        "the largest short id is reserved"
    );
    same(
        ok(store.get_by_short_id(u32::MAX).await, "get_by_short_id"),
        Some(room("room-c")),
        "the largest short id reads back",
    );
}

/// Commits one batch to `room_id` whose summary is `summary`.
async fn commit_summary<S: CellStore>(store: &S, room_id: &RoomId, summary: RoomSummary) {
    let activation = ok(store.activate(room_id, "node-1").await, "activate");
    let mut b = batch(
        room_id,
        activation,
        activation.version,
        &[(&format!("s-{}", activation.version), 1)],
    );
    b.summary = Some(summary);
    ok(store.commit(&b).await, "commit");
}

async fn summaries_come_from_commits<S: RoomDirectory + CellStore>(store: Arc<S>) {
    let a = room("room-a");
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        None,
        "no summary before a commit",
    );
    let first = summary(&a, 10, true, 1);
    commit_summary(&*store, &a, first.clone()).await;
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        Some(first),
        "the commit's summary",
    );
    let mut second = summary(&a, 99, true, 2);
    second.locked = true;
    second.online = 0;
    second.name = "Renamed".into();
    second.region = "ap-south_2".into();
    second.cover_url = Some("https://img.example/covers/room-a.png?v=2".into());
    second.seats_taken = 20;
    second.created_at = at(-1);
    // Beyond 32 bits, and in the past of the commit: the lists decay it, the store keeps it.
    second.recent_heat_milli = 9_000_000_000_123;
    second.recent_heat_at = at(-5_000);
    commit_summary(&*store, &a, second.clone()).await;
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        Some(second.clone()),
        "a later commit's summary replaces the earlier, with its cover",
    );
    let mut third = second.clone();
    third.version = 3;
    third.cover_url = None;
    third.seats_taken = 0;
    third.recent_heat_milli = 0;
    third.recent_heat_at = at(7_000);
    commit_summary(&*store, &a, third.clone()).await;
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        Some(third.clone()),
        "a commit without a cover clears the one before",
    );
    let second = third;
    // A batch without a summary leaves the directory as it was.
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut b = batch(&a, activation, activation.version, &[("no-summary", 1)]);
    b.summary = None;
    ok(store.commit(&b).await, "commit");
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        Some(second),
        "a batch without a summary keeps the stored one",
    );
}

async fn summaries_are_read_many_at_once<S: RoomDirectory + CellStore>(store: Arc<S>) {
    same(
        ok(store.get_summaries(&[]).await, "get_summaries"),
        Vec::new(),
        "no rooms asked, none read",
    );
    let mut written = Vec::new();
    for (i, id) in ["room-a", "room-b", "room-c"].into_iter().enumerate() {
        let id = room(id);
        let s = summary(&id, 10 * i as i64, i != 1, 1);
        commit_summary(&*store, &id, s.clone()).await;
        written.push(s);
    }
    let asked = [
        room("room-c"),
        room("room-none"),
        room("room-a"),
        room("room-c"),
    ];
    let mut read = ok(store.get_summaries(&asked).await, "get_summaries");
    read.sort_by(|x, y| x.room_id.cmp(&y.room_id));
    same(
        read,
        vec![written[0].clone(), written[2].clone()],
        "each room asked that has a summary, once; closed or open alike",
    );
    let many: Vec<RoomId> = (0..=crate::ports::MAX_SUMMARIES_READ)
        .map(|i| room(&format!("room-{i}")))
        .collect();
    assert!(
        matches!(
            store.get_summaries(&many).await,
            Err(crate::Error::Invalid(_))
        ),
        "more than the bound is refused"
    );
    let at_bound = &many[..crate::ports::MAX_SUMMARIES_READ];
    ok(
        store.get_summaries(at_bound).await,
        "get_summaries at the bound",
    );
}

async fn open_rooms_by_heat_with_paging<S: RoomDirectory + CellStore>(store: Arc<S>) {
    let rooms = [
        ("room-c", 50, true),
        ("room-a", 50, true),
        ("room-b", 80, true),
        ("room-closed", 1000, false),
        ("room-d", 10, true),
        ("room-e", 50, true),
        ("room-cold", 0, true),
    ];
    for (id, heat, open) in rooms {
        let r = room(id);
        commit_summary(&*store, &r, summary(&r, heat, open, 1)).await;
    }
    let names = |list: &[RoomSummary]| -> Vec<String> {
        list.iter().map(|s| s.room_id.to_string()).collect()
    };
    let all = ok(
        store.list_open_by_heat(None, 100).await,
        "list_open_by_heat",
    );
    same(
        names(&all),
        [
            "room-b",
            "room-a",
            "room-c",
            "room-e",
            "room-d",
            "room-cold",
        ]
        .map(String::from)
        .to_vec(),
        "open rooms, hottest first, ties by room id; closed rooms excluded",
    );
    same(
        all[0].clone(),
        summary(&room("room-b"), 80, true, 1),
        "listed summaries are whole",
    );

    // Paging with the last item as the cursor walks the same list.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = ok(
            store.list_open_by_heat(cursor.clone(), 2).await,
            "list_open_by_heat",
        );
        assert!(page.len() <= 2, "a page is at most `limit` long");
        let Some(last) = page.last() else { break };
        cursor = Some((last.heat, last.room_id.clone()));
        paged.extend(page);
        assert!(paged.len() <= all.len(), "paging does not end");
    }
    same(names(&paged), names(&all), "pages add up to the whole list");

    same(
        names(&ok(
            store.list_open_by_heat(Some((50, room("room-a"))), 2).await,
            "list_open_by_heat",
        )),
        ["room-c", "room-e"].map(String::from).to_vec(),
        "after a cursor inside a tie: the rest of the tie by room id",
    );
    same(
        names(&ok(
            store.list_open_by_heat(Some((60, room("zzz"))), 10).await,
            "list_open_by_heat",
        )),
        ["room-a", "room-c", "room-e", "room-d", "room-cold"]
            .map(String::from)
            .to_vec(),
        "a cursor between heats need not name a listed room",
    );

    // The room heats up, then closes.
    let c = room("room-c");
    commit_summary(&*store, &c, summary(&c, 500, true, 2)).await;
    let top = ok(store.list_open_by_heat(None, 1).await, "list_open_by_heat");
    same(
        names(&top),
        vec!["room-c".to_owned()],
        "a hotter room moves up",
    );
    commit_summary(&*store, &c, summary(&c, 500, false, 3)).await;
    let all = ok(
        store.list_open_by_heat(None, 100).await,
        "list_open_by_heat",
    );
    assert!(
        all.iter().all(|s| s.room_id != c),
        "a room closed by a later commit leaves the list"
    );
    same(all.len(), 5, "the other open rooms stay");
}

async fn open_rooms_scanned_by_room_id<S: RoomDirectory + CellStore>(store: Arc<S>) {
    same(
        ok(store.scan_open(None, 10).await, "scan_open"),
        Vec::new(),
        "no rooms, nothing scanned",
    );
    // Short ids for some rooms only, one of them the largest; one for a room without a
    // summary, which the scan never shows.
    for (id, short_id) in [
        ("room-a", 101),
        ("room-c", u32::MAX),
        ("room-closed", 103),
        ("room-unsummarised", 104),
    ] {
        assert!(
            ok(store.reserve_short_id(&room(id), short_id).await, "reserve"),
            "{id}'s short id is reserved"
        );
    }
    let rooms = [
        ("room-d", 10, true),
        ("room-b", 80, true),
        ("room-closed", 1000, false),
        ("room-a", 50, true),
        ("room-e", 0, true),
        ("room-c", 50, true),
    ];
    let mut written = std::collections::HashMap::new();
    for (id, heat, open) in rooms {
        let r = room(id);
        let mut s = summary(&r, heat, open, 1);
        if id == "room-c" {
            s.cover_url = Some("https://img.example/c.png".into());
        }
        commit_summary(&*store, &r, s.clone()).await;
        written.insert(id, s);
    }
    let open_room = |id: &str, short_id: Option<u32>| OpenRoom {
        summary: written[id].clone(),
        short_id,
    };
    let names = |list: &[OpenRoom]| -> Vec<String> {
        list.iter().map(|r| r.summary.room_id.to_string()).collect()
    };

    let all = ok(store.scan_open(None, 100).await, "scan_open");
    same(
        all.clone(),
        vec![
            open_room("room-a", Some(101)),
            open_room("room-b", None),
            open_room("room-c", Some(u32::MAX)),
            open_room("room-d", None),
            open_room("room-e", None),
        ],
        "open rooms in room id order, whole, each with its short id or none; closed rooms \
         and short ids without a room left out",
    );

    // Paging with the last room as `after` walks the same list.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = ok(store.scan_open(after.clone(), 2).await, "scan_open");
        assert!(page.len() <= 2, "a page is at most `limit` long");
        let Some(last) = page.last() else { break };
        after = Some(last.summary.room_id.clone());
        paged.extend(page);
        assert!(paged.len() <= all.len(), "paging does not end");
    }
    same(paged, all.clone(), "pages add up to the whole scan");

    same(
        names(&ok(
            store.scan_open(Some(room("room-bb")), 2).await,
            "scan_open",
        )),
        ["room-c", "room-d"].map(String::from).to_vec(),
        "`after` need not name a room, and the limit holds after it",
    );
    same(
        names(&ok(
            store.scan_open(Some(room("room-closed")), 10).await,
            "scan_open",
        )),
        ["room-d", "room-e"].map(String::from).to_vec(),
        "after a closed room: the open rooms past its id",
    );
    same(
        ok(store.scan_open(Some(room("room-e")), 10).await, "scan_open"),
        Vec::new(),
        "nothing after the last open room",
    );
    same(
        ok(store.scan_open(None, 0).await, "scan_open"),
        Vec::new(),
        "a limit of 0 scans nothing",
    );
    same(
        ok(store.scan_open(None, u32::MAX).await, "scan_open"),
        all,
        "a limit past the bound scans up to the bound",
    );

    // A room closes, another opens.
    let d = room("room-d");
    commit_summary(&*store, &d, summary(&d, 10, false, 2)).await;
    let closed = room("room-closed");
    commit_summary(&*store, &closed, summary(&closed, 1000, true, 2)).await;
    same(
        names(&ok(store.scan_open(None, 100).await, "scan_open")),
        ["room-a", "room-b", "room-c", "room-closed", "room-e"]
            .map(String::from)
            .to_vec(),
        "a room closed by a later commit leaves the scan, a reopened one joins it",
    );
}

/// What a store upgraded to cover claims holds, given that before the upgrade rooms `room-a`
/// and `room-b` (open) showed `https://img.example/a.png` and `room-c` (closed) showed
/// `https://img.example/c.png`: the open rooms' cover is claimed for the first of them by room
/// id, at time 0, and the closed room's cover is free.
pub async fn covers_claimed_by_the_upgrade<S: RoomDirectory>(store: &S) {
    let now = at(1_000);
    same(
        ok(
            store
                .claim_cover("https://img.example/a.png", &room("room-z"), now)
                .await,
            "claim_cover",
        ),
        CoverHolder {
            room_id: room("room-a"),
            claimed_at: room_domain::Timestamp(0),
        },
        "the open rooms' cover is claimed, by the first of them",
    );
    same(
        ok(
            store
                .claim_cover("https://img.example/c.png", &room("room-z"), now)
                .await,
            "claim_cover",
        )
        .room_id,
        room("room-z"),
        "a closed room's cover is not claimed",
    );
}
