//! `room-worker` refuses to start where it cannot work, and says why: on SQLite (one process
//! serves it: `room-api` runs every job there), without the lease Redis (it runs beside other
//! nodes), with arguments (it is configured by the environment).

use std::process::Command;

const SECRET: &str = "refusals-test-secret-of-at-least-32-bytes";

/// Runs the worker with `env` and returns its exit success and its stderr.
fn run(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_room-worker"))
        .args(args)
        .current_dir(&dir)
        .env("ROOM__AUTH__JWT_SECRET", SECRET)
        .envs(env.iter().copied())
        .output()
        .expect("room-worker runs");
    let _ = std::fs::remove_dir_all(&dir);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// An empty working directory, so that no `configs/room.toml` is read.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "room-worker-refusals-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn sqlite_storage_is_refused_with_the_reason() {
    let (ok, stderr) = run(&[], &[("ROOM__STORAGE__URL", "sqlite://room.db")]);
    assert!(!ok, "the worker must not start on SQLite");
    assert!(
        stderr.contains("SQLite") && stderr.contains("room-api runs every"),
        "{stderr}"
    );
}

#[test]
fn a_worker_without_the_lease_redis_is_refused() {
    let (ok, stderr) = run(
        &[],
        &[
            ("ROOM__STORAGE__URL", "mysql://room:room@127.0.0.1:1/room"),
            ("ROOM__CLUSTER__SINGLE_NODE", "true"),
        ],
    );
    assert!(!ok, "the worker must not start without Redis");
    assert!(stderr.contains("ROOM__LEASE__REDIS_URL"), "{stderr}");
}

#[test]
fn arguments_are_refused() {
    let (ok, stderr) = run(&["serve"], &[]);
    assert!(!ok);
    assert!(stderr.contains("takes no arguments"), "{stderr}");
}
