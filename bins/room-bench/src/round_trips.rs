//! With `--storage mysql`: what a gift costs the database server in commands, from the server's
//! own counters (`SHOW GLOBAL STATUS`), read before and after a measured loop. Every command a
//! client sends and waits for is one round trip (the driver does not pipeline): the statements
//! (`Questions`, which leaves out pings and prepares), the pings (`Com_admin_commands`) and the
//! prepares (`Com_stmt_prepare`, once per statement text and connection). `Com_commit` counts
//! the transactions. The counters are the whole server's: the figures hold when nothing else
//! uses it meanwhile.

use anyhow::{Context, Result};
use sqlx::{Connection, MySqlConnection};

use crate::nodes::Storage;
use crate::report::report;

/// The server's counters at the start of a loop.
pub struct RoundTrips {
    server: String,
    start: [u64; 4],
}

const COUNTERS: [&str; 4] = [
    "Questions",
    "Com_admin_commands",
    "Com_commit",
    "Com_stmt_prepare",
];

async fn read(server: &str) -> Result<[u64; 4]> {
    let mut conn = MySqlConnection::connect(server)
        .await
        .with_context(|| format!("cannot reach MySQL at {server}"))?;
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SHOW GLOBAL STATUS WHERE Variable_name IN
         ('Questions', 'Com_admin_commands', 'Com_commit', 'Com_stmt_prepare')",
    )
    .fetch_all(&mut conn)
    .await?;
    let _ = conn.close().await;
    let mut counters = [0; 4];
    for (name, value) in rows {
        if let Some(i) = COUNTERS.iter().position(|c| c.eq_ignore_ascii_case(&name)) {
            counters[i] = value.parse().with_context(|| format!("{name} = {value}"))?;
        }
    }
    Ok(counters)
}

impl RoundTrips {
    /// The counters now, on MySQL storage; `None` on SQLite.
    pub async fn start(storage: &Storage) -> Result<Option<RoundTrips>> {
        let Storage::MySql(server) = storage else {
            return Ok(None);
        };
        Ok(Some(RoundTrips {
            start: read(server).await?,
            server: server.clone(),
        }))
    }

    /// Reports the commands per gift since [`RoundTrips::start`], for `gifts` gifts.
    pub async fn report(self, phase: &str, gifts: f64) -> Result<()> {
        let end = read(&self.server).await?;
        let per_gift = |i: usize| end[i].saturating_sub(self.start[i]) as f64 / gifts.max(1.0);
        report(
            &format!("{phase}: MySQL round trips per gift"),
            &format!(
                "{:.1} (statements {:.1}, pings {:.2}, prepares {:.2}; commits {:.2})",
                per_gift(0) + per_gift(1) + per_gift(3),
                per_gift(0),
                per_gift(1),
                per_gift(3),
                per_gift(2)
            ),
        );
        Ok(())
    }
}
