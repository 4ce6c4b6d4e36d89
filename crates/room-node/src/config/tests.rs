//! The settings' own tests: layers, defaults, the shipped file, and every refusal by name.

// figment's `Jail` closures must return its (large) error type.
#![allow(clippy::result_large_err)]

use std::path::Path;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::*;

#[test]
fn defaults_match_the_contract() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let settings = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(settings.http.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(settings.storage.url, "sqlite://data/room.db");
        assert!(settings.auth.uses_dev_secret());
        assert!(settings.rtc.callback_key.is_none());
        assert_eq!(settings.rtc.callback_window_secs, 300);
        assert_eq!(settings.presence.timeout_secs, 90);
        assert_eq!(settings.http.header_timeout_secs, 10);
        assert_eq!(settings.http.idle_timeout_secs, 60);
        assert_eq!(settings.http.max_connections, 10_000);
        assert_eq!(settings.sse.max_streams_per_user, 8);
        assert!(settings.limits.enabled);
        assert_eq!(settings.robots.id_prefix, "robot-");
        Ok(())
    });
}

#[test]
fn the_robot_prefix_comes_from_the_environment_and_must_be_an_id_start() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.set_env("ROOM__ROBOTS__ID_PREFIX", "bot_");
        let settings = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(settings.robots.id_prefix, "bot_");
        for bad in ["", "bot x", "a/b"] {
            let mut settings = Settings::default();
            settings.robots.id_prefix = bad.into();
            let error = settings.validate().unwrap_err().to_string();
            assert!(
                error.contains("ROOM__ROBOTS__ID_PREFIX"),
                "{bad:?}: {error}"
            );
        }
        Ok(())
    });
}

#[test]
fn the_file_then_the_environment_override_defaults() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.create_file(
            "room.toml",
            "[http]\naddr = \"0.0.0.0:9000\"\n[cell]\nmax_batch = 7\n",
        )?;
        jail.set_env("ROOM__HTTP__ADDR", "127.0.0.1:9001");
        jail.set_env(
            "ROOM__AUTH__JWT_SECRET",
            "s3cret-value-of-at-least-32-bytes",
        );
        jail.set_env("ROOM__RTC__CALLBACK_KEY", "rtc-key");
        let settings = Settings::load(Path::new("room.toml")).unwrap();
        assert_eq!(settings.http.addr.to_string(), "127.0.0.1:9001");
        assert_eq!(settings.cell.max_batch, 7);
        assert_eq!(
            settings.auth.jwt_secret.expose_secret(),
            "s3cret-value-of-at-least-32-bytes"
        );
        let debug = format!("{settings:?}");
        assert!(!debug.contains("s3cret-value"), "{debug}");
        assert!(!debug.contains("rtc-key"), "{debug}");
        Ok(())
    });
}

#[test]
fn the_shipped_file_documents_the_defaults() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let shipped = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../configs/room.toml"
        ));
        let from_file = Settings::load(shipped).unwrap();
        let defaults = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(format!("{from_file:?}"), format!("{defaults:?}"));
        Ok(())
    });
}

#[test]
fn a_callback_window_of_zero_or_over_a_day_is_refused() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        for (window, accepted) in [
            ("0", false),
            ("1", true),
            ("86400", true),
            ("86401", false),
            ("18446744073709551615", false),
        ] {
            jail.set_env("ROOM__RTC__CALLBACK_WINDOW_SECS", window);
            match Settings::load(Path::new("absent.toml")) {
                Ok(settings) => {
                    assert!(accepted, "{window} s was accepted");
                    assert_eq!(settings.rtc.callback_window_secs.to_string(), window);
                }
                Err(error) => {
                    assert!(!accepted, "{window} s was refused: {error}");
                    let message = error.to_string();
                    assert!(message.contains("rtc.callback_window_secs"), "{message}");
                }
            }
        }
        Ok(())
    });
    let mut settings = Settings::default();
    settings.rtc.callback_window_secs = 0;
    assert!(settings.validate().is_err());
}

#[test]
fn every_wrong_combination_of_storage_lease_and_cluster_is_refused_by_name() {
    let secret = "x".repeat(MIN_JWT_SECRET_BYTES);
    let clustered = || {
        let mut s = Settings::default();
        s.auth.jwt_secret = SecretString::from(secret.clone());
        s.storage.url = "mysql://room@db/room".into();
        s.lease.redis_url = Some(SecretString::from("redis://cache:6379"));
        s.cluster.internal_token = Some(SecretString::from(secret.clone()));
        s.cell.node_id = "api-1".into();
        s
    };
    assert!(clustered().validate().is_ok());
    assert_eq!(
        clustered().advertise_url().as_deref(),
        Some("http://127.0.0.1:8080")
    );
    let refused = |change: &dyn Fn(&mut Settings), key: &str| {
        let mut s = clustered();
        change(&mut s);
        let message = s.validate().unwrap_err().to_string();
        assert!(message.contains(key), "{key}: {message}");
    };
    refused(&|s| s.lease.redis_url = None, "ROOM__CLUSTER__SINGLE_NODE");
    refused(&|s| s.cluster.single_node = true, "contradict");
    refused(&|s| s.storage.url = "sqlite://x.db".into(), "mysql://");
    refused(
        &|s| s.cluster.internal_token = None,
        "ROOM__CLUSTER__INTERNAL_TOKEN",
    );
    refused(
        &|s| s.cluster.internal_token = Some(SecretString::from("short")),
        "ROOM__CLUSTER__INTERNAL_TOKEN",
    );
    refused(
        &|s| s.http.addr = "0.0.0.0:8080".parse().unwrap(),
        "ADVERTISE_URL",
    );
    refused(
        &|s| s.cluster.advertise_url = Some("https://10.0.0.5:8443".into()),
        "http://",
    );
    refused(&|s| s.cell.node_id = "local".into(), "ROOM__CELL__NODE_ID");
    refused(&|s| s.lease.ttl_ms = 2_999, "ROOM__LEASE__TTL_MS");
    // Recovery must leave the orders other nodes drive to them.
    refused(
        &|s| s.workers.recovery_older_than_secs = 0,
        "ROOM__WORKERS__RECOVERY_OLDER_THAN_SECS",
    );
    refused(
        &|s| s.workers.recovery_older_than_secs = s.http.request_timeout_secs,
        "ROOM__WORKERS__RECOVERY_OLDER_THAN_SECS",
    );
    refused(
        &|s| s.cluster.forward_timeout_ms = Some(10_000),
        "ROOM__CLUSTER__FORWARD_TIMEOUT_MS",
    );
    // A wildcard listener is fine with an advertised URL; one node on MySQL with the flag.
    let mut s = clustered();
    s.http.addr = "0.0.0.0:8080".parse().unwrap();
    s.cluster.advertise_url = Some("http://10.0.0.5:8080".into());
    assert!(s.validate().is_ok());
    let mut s = clustered();
    s.lease.redis_url = None;
    s.cluster.single_node = true;
    assert!(s.validate().is_ok());
}

#[test]
fn what_a_role_needs_is_refused_by_name() {
    let secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
    let base = || {
        let mut s = Settings::default();
        s.auth.jwt_secret = secret.clone();
        s
    };
    let refused = |s: Settings, role: Role, key: &str| {
        let message = s.validate_for(role).unwrap_err().to_string();
        assert!(message.contains(key), "{key}: {message}");
    };
    assert!(base().validate_for(Role::Api).is_ok());
    refused(base(), Role::Worker, "SQLite");
    refused(base(), Role::Orchestrator, "room-orchestrator");
    let mut s = base();
    s.workers.in_process = false;
    refused(s, Role::Api, "ROOM__WORKERS__IN_PROCESS");
    let mut s = base();
    s.im.sdk_app_id = Some(1_400_000_000);
    refused(s, Role::Api, "ROOM__IM__SECRET_KEY");
    // IM without Kafka: the group effects read the durable facts from the outbox.
    let mut s = base();
    s.im = adapters_tencent_im::ImSettings::new(1_400_000_000, "key");
    assert!(s.validate_for(Role::Api).is_ok());
    for bad in ["", "has space", "ü", &"x".repeat(56)] {
        let mut s = base();
        s.workers.im_effects_group = bad.to_owned();
        refused(s, Role::Api, "ROOM__WORKERS__IM_EFFECTS_GROUP");
    }
    // The income consumer's name: a valid consumer name, not the IM group effects' one.
    let im_group = base().workers.im_effects_group;
    for bad in ["", "has space", &"x".repeat(56), im_group.as_str()] {
        let mut s = base();
        s.workers.income_group = bad.to_owned();
        refused(s, Role::Api, "ROOM__WORKERS__INCOME_GROUP");
    }
    // The tally consumer's name: a valid consumer name, not another consumer's.
    let income_group = base().workers.income_group;
    for bad in [
        "",
        "has space",
        &"x".repeat(56),
        im_group.as_str(),
        income_group.as_str(),
    ] {
        let mut s = base();
        s.workers.tallies_group = bad.to_owned();
        refused(s, Role::Api, "ROOM__WORKERS__TALLIES_GROUP");
    }
    // The billing time zone is an offset; the settlement's bounds hold.
    for (zone, ok) in [
        ("+08:00", true),
        ("Z", true),
        ("-03:30", true),
        ("Asia/Shanghai", false),
        ("+15:00", false),
        ("", false),
    ] {
        let mut s = base();
        s.billing.time_zone = zone.to_owned();
        if ok {
            assert!(s.validate_for(Role::Api).is_ok(), "{zone}");
        } else {
            refused(s, Role::Api, "ROOM__BILLING__TIME_ZONE");
        }
    }
    let mut s = base();
    s.billing.tally_keys_days = 0;
    refused(s, Role::Api, "ROOM__BILLING__TALLY_KEYS_DAYS");
    let mut s = base();
    s.billing.settle_delay_secs = MAX_SETTLE_DELAY_SECS + 1;
    refused(s, Role::Api, "ROOM__BILLING__SETTLE_DELAY_SECS");
    // IM on an API node that leaves the background work to workers needs no Kafka.
    let mut s = base();
    s.storage.url = "memory://".into();
    s.workers.in_process = false;
    s.im = adapters_tencent_im::ImSettings::new(1_400_000_000, "key");
    assert!(s.validate_for(Role::Api).is_ok());
}

#[test]
fn a_password_in_the_storage_url_is_never_printed() {
    let mut settings = Settings::default();
    settings.storage.url = "mysql://room:s3cret@db.internal:3306/room".into();
    assert_eq!(
        settings.storage.redacted_url(),
        "mysql://room:***@db.internal:3306/room"
    );
    assert!(!format!("{settings:?}").contains("s3cret"));
    settings.storage.url = "sqlite://data/room.db".into();
    assert_eq!(settings.storage.redacted_url(), "sqlite://data/room.db");
}

#[test]
fn unknown_keys_are_refused() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.create_file("room.toml", "[http]\nadress = \"0.0.0.0:9000\"\n")?;
        assert!(Settings::load(Path::new("room.toml")).is_err());
        Ok(())
    });
}

#[test]
fn the_development_secret_serves_loopback_only() {
    let mut settings = Settings::default();
    assert!(settings.auth.uses_dev_secret());
    for addr in ["127.0.0.1:8080", "[::1]:8080", "127.0.0.2:0"] {
        settings.http.addr = addr.parse().unwrap();
        assert!(settings.validate().is_ok(), "{addr}");
    }
    for addr in ["0.0.0.0:8080", "[::]:8080", "10.1.2.3:8080"] {
        settings.http.addr = addr.parse().unwrap();
        let message = settings.validate().unwrap_err().to_string();
        assert!(message.contains("ROOM__AUTH__JWT_SECRET"), "{message}");
        assert!(message.contains("loopback"), "{message}");
    }
    // With a real secret, any address.
    settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
    assert!(settings.validate().is_ok());
}

#[test]
fn short_secrets_and_empty_claims_are_refused() {
    let mut settings = Settings::default();
    settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES - 1));
    let message = settings.validate().unwrap_err().to_string();
    assert!(message.contains("at least 32 bytes"), "{message}");
    settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
    assert!(settings.validate().is_ok());
    settings.auth.issuer = Some(" ".into());
    assert!(settings.validate().is_err());
    settings.auth.issuer = Some("https://id.example".into());
    settings.auth.audience = Some("rooms".into());
    assert!(settings.validate().is_ok());
    let auth = settings.auth.authenticator().unwrap();
    let alice = room_domain::UserId::new("alice").unwrap();
    let token = auth.mint(&alice, false, Duration::from_secs(60)).unwrap();
    assert_eq!(auth.verify(&token).unwrap().user_id, alice);
    // A token minted without the claims does not pass.
    let plain = crate::auth::Authenticator::new(&settings.auth.jwt_secret)
        .unwrap()
        .mint(&alice, false, Duration::from_secs(60))
        .unwrap();
    assert!(auth.verify(&plain).is_err());
}

#[test]
fn config_doc_describes_every_setting_and_only_settings() {
    let problems = reference::problems(&Settings::default_tree(), &SECTIONS);
    assert!(
        problems.is_empty(),
        "the reference and the settings disagree (describe each key in the SECTION table of \
         its section's module):\n{}",
        problems.join("\n")
    );
}

#[test]
fn config_doc_is_the_rendering_of_the_settings() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/configuration.md"
    ));
    let rendered = Settings::reference();
    // In a jail: the tests that clear the environment do it in theirs, one jail at a time.
    figment::Jail::expect_with(|_| {
        if std::env::var_os("ROOM_WRITE_DOCS").is_some_and(|value| value == "1") {
            std::fs::write(path, &rendered).expect("docs/configuration.md is writable");
        }
        Ok(())
    });
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        written == rendered,
        "docs/configuration.md is not the rendering of the settings: run \
         `ROOM_WRITE_DOCS=1 cargo test -p room-node config_doc` and commit the file"
    );
}

#[test]
fn the_profile_cache_is_bounded() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let defaults = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(defaults.profiles.cache().capacity, 50_000);
        assert_eq!(defaults.profiles.cache().ttl, Duration::from_secs(10));
        for (key, value, accepted) in [
            ("ROOM__PROFILES__CACHE_CAPACITY", "0", true),
            ("ROOM__PROFILES__CACHE_CAPACITY", "10000000", true),
            ("ROOM__PROFILES__CACHE_CAPACITY", "10000001", false),
            ("ROOM__PROFILES__CACHE_TTL_MS", "600000", true),
            ("ROOM__PROFILES__CACHE_TTL_MS", "600001", false),
        ] {
            jail.set_env(key, value);
            let loaded = Settings::load(Path::new("absent.toml"));
            assert_eq!(loaded.is_ok(), accepted, "{key}={value}: {loaded:?}");
            jail.clear_env();
        }
        Ok(())
    });
}

#[test]
fn the_vip_cache_is_bounded() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let defaults = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(defaults.vip.cache().capacity, 50_000);
        assert_eq!(defaults.vip.cache().ttl, Duration::from_secs(5));
        for (key, value, accepted) in [
            ("ROOM__VIP__CACHE_CAPACITY", "0", true),
            ("ROOM__VIP__CACHE_CAPACITY", "10000000", true),
            ("ROOM__VIP__CACHE_CAPACITY", "10000001", false),
            ("ROOM__VIP__CACHE_TTL_MS", "60000", true),
            ("ROOM__VIP__CACHE_TTL_MS", "60001", false),
        ] {
            jail.set_env(key, value);
            let loaded = Settings::load(Path::new("absent.toml"));
            assert_eq!(loaded.is_ok(), accepted, "{key}={value}: {loaded:?}");
            jail.clear_env();
        }
        Ok(())
    });
}

#[test]
fn the_follow_cap_is_1000_by_default_and_bounded() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let settings = Settings::load(Path::new("absent.toml")).unwrap();
        assert_eq!(settings.lists.max_follows_per_user, 1000);
        for (cap, accepted) in [("0", false), ("1", true), ("10000", true), ("10001", false)] {
            jail.set_env("ROOM__LISTS__MAX_FOLLOWS_PER_USER", cap);
            match Settings::load(Path::new("absent.toml")) {
                Ok(settings) => {
                    assert!(accepted, "{cap} was accepted");
                    assert_eq!(settings.lists.max_follows_per_user.to_string(), cap);
                }
                Err(error) => {
                    assert!(!accepted, "{cap} was refused: {error}");
                    let message = error.to_string();
                    assert!(
                        message.contains("ROOM__LISTS__MAX_FOLLOWS_PER_USER"),
                        "{message}"
                    );
                }
            }
        }
        Ok(())
    });
}
