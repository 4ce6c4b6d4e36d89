//! What the tests that run the service's binaries as processes share (room-api's,
//! room-worker's and room-orchestrator's): a free loopback port, signals, the shipped catalog
//! with rockets that never move, and a room's ownership as the database holds it. A
//! binary's path is known only to its own package's tests (`env!("CARGO_BIN_EXE_...")`),
//! so they spawn it themselves.

use std::path::{Path, PathBuf};

use sqlx::{Connection, MySqlConnection};

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Sends process `pid` a signal (`-TERM`, `-KILL`, `-STOP`, `-CONT`) with kill(1).
pub fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .arg(signal)
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(sent.success(), "kill {signal} {pid}");
}

/// The shipped catalog and rules (`configs/gifts.toml`).
pub fn shipped_catalog() -> String {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/gifts.toml");
    std::fs::read_to_string(shipped).expect("shipped catalog")
}

/// The shipped catalog with rockets that never move (no gift fuels them), written as
/// `gifts.toml` in `dir`: no reward enters the books.
pub fn catalog_without_rocket_fuel(dir: &Path) -> PathBuf {
    let text = shipped_catalog().replace("fuel = 10 ", "fuel = 0 ");
    assert!(text.contains("fuel = 0 "), "the rose's fuel line moved");
    let path = dir.join("gifts.toml");
    std::fs::write(&path, text).expect("write catalog");
    path
}

/// The room's epoch and owner as the database at `mysql_url` holds them.
pub async fn ownership(mysql_url: &str, room_id: &str) -> (i64, String) {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    let row: (i64, String) =
        sqlx::query_as("SELECT epoch, owner_node FROM room_cells WHERE room_id = ?")
            .bind(room_id)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    let _ = conn.close().await;
    row
}
