//! The conformance suite of [`VipGrants`]: a grant written, replaced (last write wins),
//! repeated and revoked; expiry decided against the time asked about; levels bounded; the
//! level table changed by compare-and-set (a stale version refused, one winner of two puts of
//! one version).

use std::future::Future;
use std::sync::Arc;

use room_domain::{MAX_VIP_LEVELS, VipPrivileges};

use super::fixtures::{at, expect_err, ok, same, user};
use crate::Error;
use crate::ports::{VipGrant, VipGrants, VipLevels};

/// Runs every check of [`VipGrants`], each against a fresh store from `fresh`.
pub async fn vip_grants_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: VipGrants + 'static,
{
    grants_are_replaced_and_revoked(fresh().await).await;
    expiry_is_decided_against_now(fresh().await).await;
    levels_are_bounded(fresh().await).await;
    the_level_table_is_compared_and_set(fresh().await).await;
    one_of_two_puts_of_a_version_wins(fresh().await).await;
}

fn level(kick: bool, mute: bool, effect: Option<&str>, vehicle: Option<&str>) -> VipPrivileges {
    VipPrivileges {
        kick_shield: kick,
        mute_shield: mute,
        entry_effect_id: effect.map(str::to_owned),
        vehicle_id: vehicle.map(str::to_owned),
        // Every stored level says what the newer privileges say too.
        seat_priority: vehicle.is_some(),
        backgrounds: effect
            .map(|effect| vec![format!("https://cdn.example.com/bg/{effect}.png")])
            .unwrap_or_default(),
    }
}

async fn grants_are_replaced_and_revoked<S: VipGrants>(store: Arc<S>) {
    let alice = user("alice");
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        None,
        "no grant before the first",
    );
    same(
        ok(store.revoke_vip(&alice).await, "revoke"),
        false,
        "nothing to revoke",
    );
    ok(store.grant_vip(&alice, 3, at(60_000)).await, "grant");
    let first = VipGrant {
        level: 3,
        expires_at: at(60_000),
    };
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        Some(first),
        "the grant as written",
    );
    ok(store.grant_vip(&alice, 3, at(60_000)).await, "repeat");
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        Some(first),
        "a repeat changes nothing",
    );
    ok(store.grant_vip(&alice, 5, at(120_000)).await, "extend");
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        Some(VipGrant {
            level: 5,
            expires_at: at(120_000),
        }),
        "an extension with another level replaces the grant",
    );
    ok(store.grant_vip(&alice, 2, at(30_000)).await, "shorten");
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        Some(VipGrant {
            level: 2,
            expires_at: at(30_000),
        }),
        "the last write wins, shorter or lower too",
    );
    ok(
        store.grant_vip(&user("bob"), 7, at(30_000)).await,
        "grant bob",
    );
    same(
        ok(store.revoke_vip(&alice).await, "revoke"),
        true,
        "a grant was revoked",
    );
    same(ok(store.get_vip_grant(&alice).await, "get"), None, "gone");
    same(
        ok(store.get_vip_grant(&user("bob")).await, "get").map(|g| g.level),
        Some(7),
        "another user's grant stays",
    );
}

async fn expiry_is_decided_against_now<S: VipGrants>(store: Arc<S>) {
    let alice = user("alice");
    same(
        ok(store.vip_of(&alice, at(0)).await, "vip_of"),
        None,
        "no grant, no level",
    );
    ok(store.grant_vip(&alice, 4, at(10_000)).await, "grant");
    same(
        ok(store.vip_of(&alice, at(0)).await, "vip_of"),
        Some(4),
        "in force before the expiry",
    );
    same(
        ok(store.vip_of(&alice, at(9_999)).await, "vip_of"),
        Some(4),
        "in force a millisecond before it",
    );
    same(
        ok(store.vip_of(&alice, at(10_000)).await, "vip_of"),
        None,
        "over at the expiry",
    );
    same(
        ok(store.get_vip_grant(&alice).await, "get").map(|g| g.level),
        Some(4),
        "the expired grant is still stored",
    );
    ok(store.grant_vip(&alice, 4, at(20_000)).await, "extend");
    same(
        ok(store.vip_of(&alice, at(10_000)).await, "vip_of"),
        Some(4),
        "an extension brings it back",
    );
}

async fn levels_are_bounded<S: VipGrants>(store: Arc<S>) {
    let alice = user("alice");
    expect_err!(
        store.grant_vip(&alice, 0, at(1_000)).await,
        Error::Invalid(_),
        "level 0 is no grant"
    );
    let over = u8::try_from(MAX_VIP_LEVELS + 1).unwrap();
    expect_err!(
        store.grant_vip(&alice, over, at(1_000)).await,
        Error::Invalid(_),
        "a level above the most levels a table may have"
    );
    same(
        ok(store.get_vip_grant(&alice).await, "get"),
        None,
        "a refused grant writes nothing",
    );
    let top = u8::try_from(MAX_VIP_LEVELS).unwrap();
    ok(
        store.grant_vip(&alice, top, at(1_000)).await,
        "the top level",
    );
    expect_err!(
        store
            .put_vip_levels(0, &vec![VipPrivileges::default(); MAX_VIP_LEVELS + 1])
            .await,
        Error::Invalid(_),
        "a table of too many levels"
    );
    same(
        ok(store.vip_levels().await, "levels"),
        VipLevels::default(),
        "a refused table writes nothing",
    );
}

async fn the_level_table_is_compared_and_set<S: VipGrants>(store: Arc<S>) {
    same(
        ok(store.vip_levels().await, "levels"),
        VipLevels::default(),
        "version 0, no levels, before the first change",
    );
    let first = vec![
        level(false, false, Some("fx-1"), None),
        level(true, true, Some("fx-2"), Some("car-2")),
    ];
    expect_err!(
        store.put_vip_levels(1, &first).await,
        Error::Conflict(_),
        "version 1 is not the current one"
    );
    same(
        ok(store.put_vip_levels(0, &first).await, "put"),
        1,
        "the first change makes version 1",
    );
    same(
        ok(store.vip_levels().await, "levels"),
        VipLevels {
            version: 1,
            levels: first.clone(),
        },
        "the table as written, privileges and all",
    );
    let second = vec![level(true, false, None, Some("v-1"))];
    expect_err!(
        store.put_vip_levels(0, &second).await,
        Error::Conflict(_),
        "a stale version is refused"
    );
    same(
        ok(store.vip_levels().await, "levels").levels,
        first,
        "and changes nothing",
    );
    same(
        ok(store.put_vip_levels(1, &second).await, "put"),
        2,
        "the next version",
    );
    same(
        ok(store.put_vip_levels(2, &[]).await, "put"),
        3,
        "an empty table is a table",
    );
    same(
        ok(store.vip_levels().await, "levels"),
        VipLevels {
            version: 3,
            levels: Vec::new(),
        },
        "emptied",
    );
}

async fn one_of_two_puts_of_a_version_wins<S: VipGrants + 'static>(store: Arc<S>) {
    for version in 0..10 {
        let racers: Vec<_> = [true, false]
            .into_iter()
            .map(|kick| {
                let store = store.clone();
                tokio::spawn(async move {
                    store
                        .put_vip_levels(version, &[level(kick, !kick, None, None)])
                        .await
                })
            })
            .collect();
        let mut won = 0;
        for racer in racers {
            match racer.await.expect("the racer ran") {
                Ok(new) => {
                    same(new, version + 1, "the winner made the next version");
                    won += 1;
                }
                Err(Error::Conflict(_)) => {}
                Err(other) => panic!("a put of version {version}: {other:?}"),
            }
        }
        same(won, 1, "exactly one of two puts of one version wins");
        same(
            ok(store.vip_levels().await, "levels").version,
            version + 1,
            "the winner's version is current",
        );
    }
}
