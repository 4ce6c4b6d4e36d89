//! The conformance suite of [`RoomDirectory`]: short ids unique both ways, summaries written
//! by commits, and the list of open rooms by heat with cursor paging.

use std::future::Future;
use std::sync::Arc;

use room_domain::RoomId;

use super::fixtures::{batch, ok, room, same, summary};
use crate::ports::{CellStore, RoomDirectory, RoomSummary};

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
    commit_summary(&*store, &a, second.clone()).await;
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        Some(second.clone()),
        "a later commit's summary replaces the earlier",
    );
    // A batch without a summary leaves the directory as it was.
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut b = batch(&a, activation, 2, &[("no-summary", 1)]);
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
