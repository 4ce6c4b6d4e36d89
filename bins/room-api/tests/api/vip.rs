//! VIP levels through the API: platform admins read and change the level table by
//! compare-and-set and grant, read and revoke users' levels, with stable codes for bad input;
//! and the levels' privileges in rooms (shields against room admins, the entry effect and
//! vehicle in `RoomUserJoined`), a grant's expiry counting mid-session.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code};

/// Far enough ahead for any test (2100-01-01).
const LATER: i64 = 4_102_444_800_000;

async fn put_levels(t: &TestApp, body: Value) -> (StatusCode, Value) {
    t.call(
        Method::PUT,
        "/v1/admin/vip-levels",
        Some(&t.admin_token()),
        Some(body),
    )
    .await
}

async fn put_vip(t: &TestApp, user: &str, body: Value) -> (StatusCode, Value) {
    t.call(
        Method::PUT,
        &format!("/v1/admin/users/{user}/vip"),
        Some(&t.admin_token()),
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_change_the_level_table_by_compare_and_set() {
    let t = TestApp::new().await;
    let (status, table) = t.get("/v1/admin/vip-levels", &t.admin_token()).await;
    assert_eq!(status, StatusCode::OK, "{table}");
    assert_eq!(table, json!({ "version": 0, "levels": [] }));

    let levels = json!([
        { "entry_effect_id": "fx-1" },
        { "kick_shield": true, "mute_shield": true, "entry_effect_id": "fx-2", "vehicle_id": "car.2" },
    ]);
    let (status, written) =
        put_levels(&t, json!({ "expected_version": 0, "levels": levels })).await;
    assert_eq!(status, StatusCode::OK, "{written}");
    assert_eq!(written["version"], 1);
    assert_eq!(written["levels"][1]["vehicle_id"], "car.2");
    assert_eq!(written["levels"][0]["kick_shield"], false);
    let (_, read) = t.get("/v1/admin/vip-levels", &t.admin_token()).await;
    assert_eq!(read, written);

    // The same change again: the version moved on.
    let (status, body) = put_levels(&t, json!({ "expected_version": 0, "levels": [] })).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "VIP_LEVELS_STALE"),
        "{body}"
    );

    // Bad tables: too many levels, a bad id, an unknown field; nothing written.
    let many: Vec<Value> = (0..33).map(|_| json!({})).collect();
    for bad in [
        json!({ "expected_version": 1, "levels": many }),
        json!({ "expected_version": 1, "levels": [{ "vehicle_id": "a b" }] }),
        json!({ "expected_version": 1, "levels": [{ "entry_effect_id": "" }] }),
        json!({ "expected_version": 1, "levels": [{ "vehicle_id": "v".repeat(65) }] }),
    ] {
        let (status, body) = put_levels(&t, bad.clone()).await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_VIP_LEVELS"),
            "{bad}: {body}"
        );
    }
    let (status, body) = put_levels(
        &t,
        json!({ "expected_version": 1, "levels": [{ "sparkles": true }] }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (_, read) = t.get("/v1/admin/vip-levels", &t.admin_token()).await;
    assert_eq!(read["version"], 1, "nothing written: {read}");

    // Platform admins only.
    for (method, path) in [
        (Method::GET, "/v1/admin/vip-levels"),
        (Method::PUT, "/v1/admin/vip-levels"),
    ] {
        let (status, body) = t
            .call(
                method,
                path,
                Some(&t.token("carol")),
                Some(json!({ "expected_version": 1, "levels": [] })),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::FORBIDDEN, "FORBIDDEN"),
            "{path}"
        );
    }
    let (status, _) = t
        .call(Method::GET, "/v1/admin/vip-levels", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_grant_read_and_revoke_a_users_level() {
    let t = TestApp::new().await;
    // No table yet: every level is unknown.
    let (status, body) = put_vip(&t, "vera", json!({ "level": 1, "expires_at_ms": LATER })).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "INVALID_VIP_GRANT"),
        "{body}"
    );
    let (status, _) = put_levels(
        &t,
        json!({ "expected_version": 0, "levels": [{}, { "kick_shield": true }] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, body) = t.get("/v1/admin/users/vera/vip", &t.admin_token()).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "NOT_FOUND")
    );
    let (status, grant) = put_vip(&t, "vera", json!({ "level": 2, "expires_at_ms": LATER })).await;
    assert_eq!(status, StatusCode::OK, "{grant}");
    assert_eq!(
        grant,
        json!({ "user_id": "vera", "level": 2, "expires_at_ms": LATER, "active": true })
    );
    let (status, read) = t.get("/v1/admin/users/vera/vip", &t.admin_token()).await;
    assert_eq!((status, &read), (StatusCode::OK, &grant));
    // A change: the last write wins.
    let (status, changed) = put_vip(
        &t,
        "vera",
        json!({ "level": 1, "expires_at_ms": LATER + 1 }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(changed["level"], 1);

    // Bad grants: a level the table lacks, level 0, a level beyond a byte, an expiry in the
    // past, a fraction, a missing field.
    for (bad, code) in [
        (
            json!({ "level": 3, "expires_at_ms": LATER }),
            "INVALID_VIP_GRANT",
        ),
        (
            json!({ "level": 0, "expires_at_ms": LATER }),
            "INVALID_VIP_GRANT",
        ),
        (
            json!({ "level": 300, "expires_at_ms": LATER }),
            "INVALID_VIP_GRANT",
        ),
        (
            json!({ "level": 1, "expires_at_ms": 1_000 }),
            "INVALID_VIP_GRANT",
        ),
        (
            json!({ "level": 1.5, "expires_at_ms": LATER }),
            "INVALID_BODY",
        ),
        (json!({ "level": 1 }), "INVALID_BODY"),
    ] {
        let (status, body) = put_vip(&t, "vera", bad.clone()).await;
        let expected = if code == "INVALID_VIP_GRANT" {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_eq!(
            (status, error_code(&body)),
            (expected, code),
            "{bad}: {body}"
        );
    }
    let (_, read) = t.get("/v1/admin/users/vera/vip", &t.admin_token()).await;
    assert_eq!(read, changed, "no refused grant wrote anything");
    let (status, body) = put_vip(
        &t,
        "bad%2Fid",
        json!({ "level": 1, "expires_at_ms": LATER }),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_ID")
    );

    // Not an admin.
    for method in [Method::PUT, Method::GET, Method::DELETE] {
        let (status, body) = t
            .call(
                method.clone(),
                "/v1/admin/users/vera/vip",
                Some(&t.token("vera")),
                Some(json!({ "level": 1, "expires_at_ms": LATER })),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::FORBIDDEN, "FORBIDDEN"),
            "{method}"
        );
    }

    // Revoked, twice: the same answer.
    for _ in 0..2 {
        let (status, _) = t
            .call(
                Method::DELETE,
                "/v1/admin/users/vera/vip",
                Some(&t.admin_token()),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    let (status, _) = t.get("/v1/admin/users/vera/vip", &t.admin_token()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_level_shields_its_holder_from_room_admins() {
    let t = TestApp::new().await;
    let (status, _) = put_levels(
        &t,
        json!({ "expected_version": 0, "levels": [
            {},
            { "kick_shield": true, "mute_shield": true, "entry_effect_id": "fx-2" },
        ] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = put_vip(&t, "vera", json!({ "level": 2, "expires_at_ms": LATER })).await;
    assert_eq!(status, StatusCode::OK);

    let room_id = t.room_with_members(0).await;
    let base = format!("/v1/rooms/{room_id}");
    let (status, _) = t
        .call(
            Method::PUT,
            &format!("{base}/admins/bob"),
            Some(&t.token("alice")),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    t.join(&room_id, "vera").await;
    let (status, online) = t
        .get(&format!("{base}/online-users"), &t.token("bob"))
        .await;
    assert_eq!(status, StatusCode::OK, "{online}");
    let vera = online["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == "vera")
        .cloned()
        .unwrap();
    assert_eq!(vera["vip_level"], 2, "{online}");

    // bob, a room admin, is held back by both shields.
    for (path, body) in [
        ("mute", json!({ "user_id": "vera", "seconds": 60 })),
        ("kick", json!({ "user_id": "vera" })),
    ] {
        let (status, answer) = t
            .post(&format!("{base}/{path}"), &t.token("bob"), body)
            .await;
        assert_eq!(
            (status, error_code(&answer)),
            (StatusCode::FORBIDDEN, "VIP_PROTECTED"),
            "{path}: {answer}"
        );
    }
    // Revoked: bob mutes and kicks her.
    let (status, _) = t
        .call(
            Method::DELETE,
            "/v1/admin/users/vera/vip",
            Some(&t.admin_token()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for (path, body) in [
        ("mute", json!({ "user_id": "vera", "seconds": 60 })),
        ("kick", json!({ "user_id": "vera" })),
    ] {
        let (status, answer) = t
            .post(&format!("{base}/{path}"), &t.token("bob"), body)
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{path}: {answer}");
    }
}

/// The gold background level 2 makes exclusive.
const GOLD: &str = "https://cdn.example.com/bg/gold.png";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_background_and_a_vip_seat_need_their_level() {
    let t = TestApp::new().await;
    let (status, body) = put_levels(
        &t,
        json!({ "expected_version": 0, "levels": [
            {},
            { "seat_priority": true, "backgrounds": [GOLD] },
        ] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["levels"][1]["backgrounds"][0], GOLD);
    assert_eq!(body["levels"][1]["seat_priority"], true);
    // A background that is no image URL, or too many of them, is refused whole.
    for bad in [
        json!([{ "backgrounds": ["ftp://cdn.example.com/x.png"] }]),
        json!([{ "backgrounds": vec![GOLD; 17] }]),
    ] {
        let (status, body) = put_levels(&t, json!({ "expected_version": 1, "levels": bad })).await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_VIP_LEVELS"),
            "{body}"
        );
    }

    let room_id = t.room_with_members(0).await;
    let (path, alice) = (format!("/v1/rooms/{room_id}"), t.token("alice"));
    let patch_to_gold = || {
        t.call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({ "name": "Gold room", "background_url": GOLD })),
        )
    };
    let (status, body) = patch_to_gold().await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "VIP_BACKGROUND"),
        "{body}"
    );
    assert_eq!(
        t.room(&room_id).await["name"],
        "Night talk",
        "nothing applied"
    );

    let (status, body) = put_vip(&t, "alice", json!({ "level": 2, "expires_at_ms": LATER })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, room) = patch_to_gold().await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["background_url"], GOLD);

    // A seat reserved for VIP: bob (no grant) is refused, alice (level 2) takes it.
    let (status, room) = t
        .post(
            &format!("/v1/rooms/{room_id}/seats/5/vip"),
            &t.token("alice"),
            json!({ "vip_only": true }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["seats"][5]["vip_only"], true);
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/seats/5/take"),
            &t.token("bob"),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "VIP_SEAT")
    );
    let room = t.seat(&room_id, "alice", 5, "take").await;
    assert_eq!(room["seats"][5]["user_id"], "alice");
}
