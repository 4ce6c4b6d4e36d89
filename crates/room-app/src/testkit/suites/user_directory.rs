//! The conformance suite of [`UserDirectory`]: an upsert creates or patches (keeping, setting
//! and clearing each field), reads of many are by user id, each once, and bounded; a batch is
//! applied in order and all at once, refused whole over the bound; patches of different
//! fields at once all hold.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{expect_err, ok, same, user};
use crate::Error;
use crate::ports::{
    Change, MAX_NICKNAME_CHARS, MAX_PROFILE_BATCH, ProfilePatch, UserDirectory, UserProfile,
};

fn set(value: &str) -> Change<String> {
    Change::Set(value.to_owned())
}

/// A patch that sets every field of `id`'s profile to a recognizable value.
fn full(id: &str) -> ProfilePatch {
    ProfilePatch {
        nickname: set(&format!("Nick {id}")),
        avatar_url: set(&format!("https://img.example/{id}.png")),
        region: set("mena"),
        country: set("SA"),
        agency: set(&format!("agency-of-{id}")),
    }
}

/// The profile [`full`] writes.
fn full_profile(id: &str) -> UserProfile {
    UserProfile {
        user_id: user(id),
        nickname: Some(format!("Nick {id}")),
        avatar_url: Some(format!("https://img.example/{id}.png")),
        region: Some("mena".into()),
        country: Some("SA".into()),
        agency: Some(format!("agency-of-{id}")),
    }
}

/// Runs every [`UserDirectory`] check, each against a fresh store from `fresh`.
pub async fn user_directory_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: UserDirectory + 'static,
{
    upsert_creates_and_patches(fresh().await).await;
    long_and_non_ascii_values_read_back(fresh().await).await;
    get_many_is_by_id_once_and_bounded(fresh().await).await;
    a_batch_applies_in_order(fresh().await).await;
    a_batch_over_the_bound_writes_nothing(fresh().await).await;
    patches_of_different_fields_at_once_all_hold(fresh().await).await;
}

async fn upsert_creates_and_patches<S: UserDirectory>(store: Arc<S>) {
    same(
        ok(store.get_profile(&user("ann")).await, "get"),
        None,
        "an unknown user has no profile",
    );
    let written = ok(
        store.upsert_profile(&user("ann"), &full("ann")).await,
        "upsert creating",
    );
    same(written, full_profile("ann"), "upsert returns what it wrote");
    same(
        ok(store.get_profile(&user("ann")).await, "get"),
        Some(full_profile("ann")),
        "a created profile reads back whole",
    );
    let patch = ProfilePatch {
        nickname: set("Ann B."),
        avatar_url: Change::Clear,
        agency: Change::Clear,
        ..ProfilePatch::default()
    };
    let expected = UserProfile {
        nickname: Some("Ann B.".into()),
        avatar_url: None,
        agency: None,
        ..full_profile("ann")
    };
    same(
        ok(store.upsert_profile(&user("ann"), &patch).await, "upsert"),
        expected.clone(),
        "a patch sets, clears and keeps each field",
    );
    same(
        ok(store.get_profile(&user("ann")).await, "get"),
        Some(expected.clone()),
        "the patched profile reads back",
    );
    same(
        ok(
            store
                .upsert_profile(&user("ann"), &ProfilePatch::default())
                .await,
            "empty upsert",
        ),
        expected,
        "an empty patch changes nothing",
    );
    same(
        ok(
            store
                .upsert_profile(&user("bo"), &ProfilePatch::default())
                .await,
            "empty upsert creating",
        ),
        UserProfile::empty(user("bo")),
        "an empty patch of an unknown user creates a profile with no field set",
    );
    same(
        ok(store.get_profile(&user("bo")).await, "get"),
        Some(UserProfile::empty(user("bo"))),
        "the profile with no field set reads back",
    );
    same(
        ok(store.get_profile(&user("ann")).await, "get")
            .and_then(|p| p.nickname)
            .as_deref(),
        Some("Ann B."),
        "writing another user's profile leaves this one",
    );
}

async fn long_and_non_ascii_values_read_back<S: UserDirectory>(store: Arc<S>) {
    let nickname: String = "名🎤é".chars().cycle().take(MAX_NICKNAME_CHARS).collect();
    let url = format!(
        "https://img.example/{}",
        "a".repeat(room_domain::MAX_IMAGE_URL_BYTES - "https://img.example/".len())
    );
    let patch = ProfilePatch {
        nickname: Change::Set(nickname.clone()),
        avatar_url: Change::Set(url.clone()),
        region: set(&"r".repeat(crate::ports::MAX_REGION_CHARS)),
        country: set("EG"),
        agency: set(&"a".repeat(crate::ports::MAX_AGENCY_CHARS)),
    };
    let expected = patch.apply(UserProfile::empty(user("cy")));
    ok(store.upsert_profile(&user("cy"), &patch).await, "upsert");
    same(
        ok(store.get_profile(&user("cy")).await, "get"),
        Some(expected),
        "values at every field's limit, and characters outside ASCII, read back unchanged",
    );
}

async fn get_many_is_by_id_once_and_bounded<S: UserDirectory>(store: Arc<S>) {
    same(
        ok(store.get_profiles(&[]).await, "get many of none"),
        Vec::new(),
        "no ids: no profiles",
    );
    for id in ["u3", "u1", "u2"] {
        ok(store.upsert_profile(&user(id), &full(id)).await, "upsert");
    }
    same(
        ok(
            store
                .get_profiles(&[user("u2"), user("nobody"), user("u1"), user("u2")])
                .await,
            "get many",
        ),
        vec![full_profile("u1"), full_profile("u2")],
        "the known users' profiles, by user id, each once; unknown ids are left out",
    );
    let most: Vec<_> = (0..MAX_PROFILE_BATCH)
        .map(|i| user(&format!("m{i:04}")))
        .chain([user("u3")])
        .skip(1)
        .collect();
    same(
        ok(store.get_profiles(&most).await, "get many at the bound"),
        vec![full_profile("u3")],
        "a read of as many ids as the bound allows is served",
    );
    let too_many: Vec<_> = (0..=MAX_PROFILE_BATCH)
        .map(|i| user(&format!("m{i:04}")))
        .collect();
    expect_err!(
        store.get_profiles(&too_many).await,
        Error::Invalid(_),
        "a read of more ids than the bound is refused"
    );
}

async fn a_batch_applies_in_order<S: UserDirectory>(store: Arc<S>) {
    ok(store.upsert_profiles(&[]).await, "an empty batch");
    ok(
        store.upsert_profile(&user("old"), &full("old")).await,
        "upsert",
    );
    let batch = vec![
        (user("new"), full("new")),
        (
            user("old"),
            ProfilePatch {
                country: set("EG"),
                agency: Change::Clear,
                ..ProfilePatch::default()
            },
        ),
        (
            user("new"),
            ProfilePatch {
                nickname: set("Renamed"),
                ..ProfilePatch::default()
            },
        ),
    ];
    ok(store.upsert_profiles(&batch).await, "batch");
    same(
        ok(
            store.get_profiles(&[user("new"), user("old")]).await,
            "get many",
        ),
        vec![
            UserProfile {
                nickname: Some("Renamed".into()),
                ..full_profile("new")
            },
            UserProfile {
                country: Some("EG".into()),
                agency: None,
                ..full_profile("old")
            },
        ],
        "a batch creates and patches, and a later patch of the same user applies after an \
         earlier one",
    );
    let most: Vec<_> = (0..MAX_PROFILE_BATCH)
        .map(|i| (user(&format!("b{i:04}")), full(&format!("b{i:04}"))))
        .collect();
    ok(store.upsert_profiles(&most).await, "batch at the bound");
    same(
        ok(
            store
                .get_profile(&user(&format!("b{:04}", MAX_PROFILE_BATCH - 1)))
                .await,
            "get",
        ),
        Some(full_profile(&format!("b{:04}", MAX_PROFILE_BATCH - 1))),
        "a batch as large as the bound is written whole",
    );
}

async fn a_batch_over_the_bound_writes_nothing<S: UserDirectory>(store: Arc<S>) {
    ok(
        store.upsert_profile(&user("b0000"), &full("keep")).await,
        "upsert",
    );
    let too_many: Vec<_> = (0..=MAX_PROFILE_BATCH)
        .map(|i| (user(&format!("b{i:04}")), full(&format!("b{i:04}"))))
        .collect();
    expect_err!(
        store.upsert_profiles(&too_many).await,
        Error::Invalid(_),
        "a batch over the bound is refused"
    );
    same(
        ok(store.get_profile(&user("b0000")).await, "get"),
        Some(UserProfile {
            user_id: user("b0000"),
            ..full_profile("keep")
        }),
        "a refused batch changed no profile",
    );
    same(
        ok(store.get_profile(&user("b0001")).await, "get"),
        None,
        "a refused batch created no profile",
    );
}

async fn patches_of_different_fields_at_once_all_hold<S: UserDirectory + 'static>(store: Arc<S>) {
    for round in 0..5 {
        let id = user(&format!("race{round}"));
        let patches = [
            ProfilePatch {
                nickname: set("Racer"),
                ..ProfilePatch::default()
            },
            ProfilePatch {
                avatar_url: set("https://img.example/r.png"),
                ..ProfilePatch::default()
            },
            ProfilePatch {
                region: set("mena"),
                ..ProfilePatch::default()
            },
            ProfilePatch {
                country: set("SA"),
                ..ProfilePatch::default()
            },
            ProfilePatch {
                agency: set("agency-r"),
                ..ProfilePatch::default()
            },
        ];
        let tasks: Vec<_> = patches
            .into_iter()
            .enumerate()
            .map(|(i, patch)| {
                let (store, id) = (store.clone(), id.clone());
                tokio::spawn(async move {
                    if i % 2 == 0 {
                        store.upsert_profile(&id, &patch).await.map(|_| ())
                    } else {
                        store.upsert_profiles(&[(id, patch)]).await
                    }
                })
            })
            .collect();
        for task in tasks {
            ok(task.await.expect("the task ends"), "concurrent upsert");
        }
        same(
            ok(store.get_profile(&id).await, "get"),
            Some(UserProfile {
                user_id: id.clone(),
                nickname: Some("Racer".into()),
                avatar_url: Some("https://img.example/r.png".into()),
                region: Some("mena".into()),
                country: Some("SA".into()),
                agency: Some("agency-r".into()),
            }),
            "every one of five patches of different fields at once holds",
        );
    }
}
