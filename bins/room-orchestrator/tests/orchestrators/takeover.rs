//! A lost orchestrator's rooms run on the other: after `kill -9`, within a lease TTL and a
//! reconcile; after `SIGSTOP` past its lease, with every commit of every room made by the node
//! owning the room's epoch (matched through a trigger of the test's own and the processes'
//! connections in `/proc`), and once resumed the node runs again what it prefers.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use room_testkit::process::ownership;
use sqlx::{Connection, Executor, MySqlConnection};

use crate::support::{API_NODE, Cluster, ROOMS, TAKEOVER, metric, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_orchestrators_rooms_run_on_the_other() {
    let Some(cluster) = Cluster::start("killed").await else {
        return;
    };
    let (victim, survivor) = ("orch-b", "orch-a");
    let moved = cluster.rooms_on(victim).await;
    assert!(!moved.is_empty());
    let mut before = HashMap::new();
    for room in &moved {
        let (epoch, owner) = ownership(&cluster.shared.mysql_url, room).await;
        assert_eq!(owner, victim, "room {room}");
        before.insert(room.clone(), epoch);
    }

    cluster.orchestrator(victim).signal("-KILL");
    cluster
        .all_on("the killed node's rooms run on the survivor", survivor)
        .await;
    let survivors = vec![survivor.to_owned()];
    cluster
        .settle("the survivor's gauge counts all ten", &survivors)
        .await;
    for room in &moved {
        let (epoch, owner) = ownership(&cluster.shared.mysql_url, room).await;
        assert_eq!(owner, survivor, "room {room}");
        assert!(
            epoch > before[room],
            "room {room}: epoch {epoch} after {}",
            before[room]
        );
    }
    let text = cluster.orchestrator(survivor).metrics().await.unwrap();
    let starts = metric(&text, "room_robot_runtime_starts_total", None);
    assert!(
        starts >= ROOMS as f64,
        "{survivor} started {starts} runtimes"
    );
    cluster.finish().await;
}

/// The commits of the rooms, as the database saw them: a trigger records every change of
/// `room_cells` (an activation moves the epoch and names the owner; a commit moves the
/// version under the epoch it was fenced with) and the connection that made it.
async fn audit_commits(mysql_url: &str) {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    for statement in [
        "CREATE TABLE test_cell_audit (
             id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
             room_id VARCHAR(64) NOT NULL,
             old_epoch BIGINT NULL,
             new_epoch BIGINT NOT NULL,
             old_version BIGINT NULL,
             new_version BIGINT NOT NULL,
             owner_node VARCHAR(255) NOT NULL,
             connection_id BIGINT NOT NULL
         ) ENGINE = InnoDB",
        "CREATE TRIGGER test_cell_audit_insert AFTER INSERT ON room_cells FOR EACH ROW
             INSERT INTO test_cell_audit
                 (room_id, old_epoch, new_epoch, old_version, new_version, owner_node, connection_id)
             VALUES (NEW.room_id, NULL, NEW.epoch, NULL, NEW.version, NEW.owner_node, CONNECTION_ID())",
        "CREATE TRIGGER test_cell_audit_update AFTER UPDATE ON room_cells FOR EACH ROW
             INSERT INTO test_cell_audit
                 (room_id, old_epoch, new_epoch, old_version, new_version, owner_node, connection_id)
             VALUES (NEW.room_id, OLD.epoch, NEW.epoch, OLD.version, NEW.version, NEW.owner_node, CONNECTION_ID())",
    ] {
        // The text protocol: MariaDB prepares no CREATE TRIGGER.
        conn.execute(statement).await.unwrap();
    }
    let _ = conn.close().await;
}

/// A row of `test_cell_audit`: id, room, old and new epoch, old and new version, owner,
/// connection.
type AuditRow = (i64, String, Option<i64>, i64, Option<i64>, i64, String, i64);

/// The local ports of `pid`'s TCP connections to `server_port` (the MySQL server's). Only
/// those: the kernel gives two sockets one local port when their peers differ, so a port of a
/// connection to Redis could name another process's MySQL connection.
fn tcp_ports_of(pid: u32, server_port: u16) -> HashSet<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|fd| {
                let target = std::fs::read_link(fd.ok()?.path()).ok()?;
                let target = target.to_string_lossy();
                Some(
                    target
                        .strip_prefix("socket:[")?
                        .strip_suffix(']')?
                        .to_owned(),
                )
            })
            .collect()
        })
        .unwrap_or_default();
    // The port of an `address:port` field of the socket tables (hexadecimal).
    let port = |field: &str| u16::from_str_radix(field.rsplit(':').next()?, 16).ok();
    let mut ports = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9
                && inodes.contains(fields[9])
                && port(fields[2]) == Some(server_port)
            {
                ports.extend(port(fields[1]));
            }
        }
    }
    ports
}

/// The database connections of each process, by MariaDB's connection id: the orchestrators'
/// under their node ids, this process's (the `room-api` node's and the test's own) under
/// [`API_NODE`].
async fn connections_of(mysql_url: &str, processes: &[(String, u32)]) -> HashMap<i64, String> {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT ID, HOST FROM information_schema.PROCESSLIST")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let (server_port,): (i64,) = sqlx::query_as("SELECT CAST(@@port AS SIGNED)")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let server_port = u16::try_from(server_port).unwrap();
    let _ = conn.close().await;
    let by_port: HashMap<u16, i64> = rows
        .into_iter()
        .filter_map(|(id, host)| Some((host.rsplit(':').next()?.parse().ok()?, id)))
        .collect();
    let mut nodes = HashMap::new();
    for (node, pid) in processes {
        for port in tcp_ports_of(*pid, server_port) {
            if let Some(id) = by_port.get(&port)
                && let Some(other) = nodes.insert(*id, node.clone())
            {
                assert_eq!(&other, node, "connection {id} seen in two processes");
            }
        }
    }
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_orchestrator_commits_nothing_after_its_rooms_are_taken_over() {
    let Some(cluster) = Cluster::start("paused").await else {
        return;
    };
    let url = cluster.shared.mysql_url.clone();
    audit_commits(&url).await;
    let (paused, other) = ("orch-b", "orch-a");
    let processes: Vec<(String, u32)> = cluster
        .orchestrators
        .iter()
        .map(|o| (o.id.clone(), o.child.id().unwrap()))
        .chain([(API_NODE.to_owned(), std::process::id())])
        .collect();
    let mut connections = connections_of(&url, &processes).await;
    let taken = cluster.rooms_on(paused).await;
    assert!(!taken.is_empty());
    let node = cluster.orchestrator(paused);
    let before = node.metrics().await.unwrap();
    let mut epochs = HashMap::new();
    for room in &taken {
        let (epoch, owner) = ownership(&url, room).await;
        assert_eq!(owner, paused, "room {room}");
        epochs.insert(room.clone(), epoch);
    }

    // Paused past its lease (and for at least six seconds), the node loses its rooms.
    node.signal("-STOP");
    let paused_at = Instant::now();
    cluster
        .all_on("the paused node's rooms run on the other", other)
        .await;
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(paused_at.elapsed())).await;
    let mut takeover = HashMap::new();
    for room in &taken {
        // The lease moves first; the new owner's activation writes the cell's epoch after it.
        let epoch = wait_until(
            &format!("room {room} activated on {other}"),
            TAKEOVER,
            || async {
                let (epoch, owner) = ownership(&url, room).await;
                if owner == other && epoch > epochs[room] {
                    Ok(epoch)
                } else {
                    Err(format!("epoch {epoch} on {owner}, {} before", epochs[room]))
                }
            },
        )
        .await;
        takeover.insert(room.clone(), epoch);
    }

    // Resumed, its runtimes find their cells fenced and stop; it runs again only what it
    // takes back through the lease (the rooms prefer it), under new epochs.
    node.signal("-CONT");
    let ids = cluster.ids();
    cluster
        .settle(
            "the resumed node runs what it prefers, its gauge says so",
            &ids,
        )
        .await;
    let after = node.metrics().await.unwrap();
    let lost = metric(
        &after,
        "room_robot_runtime_stops_total",
        Some("reason=\"lease_lost\""),
    ) - metric(
        &before,
        "room_robot_runtime_stops_total",
        Some("reason=\"lease_lost\""),
    );
    assert_eq!(
        lost,
        taken.len() as f64,
        "the paused node's runtimes stopped as their lease was lost"
    );
    for room in &taken {
        let (epoch, owner) = ownership(&url, room).await;
        assert!(
            epoch > takeover[room],
            "room {room} is back under a new epoch"
        );
        assert_eq!(owner, paused, "room {room}");
    }

    // Every change of every room's cell row, since the audit began, was made by the node
    // that owned the epoch it was made under.
    connections.extend(connections_of(&url, &processes).await);
    let mut conn = MySqlConnection::connect(&url).await.unwrap();
    let rows: Vec<AuditRow> = sqlx::query_as(
        "SELECT id, room_id, old_epoch, new_epoch, old_version, new_version, owner_node, \
             connection_id FROM test_cell_audit ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    let mut commits_after_takeover = 0;
    let mut written_by: HashMap<&str, (usize, usize)> = HashMap::new();
    for (id, room, old_epoch, new_epoch, old_version, new_version, owner, connection) in &rows {
        let by = connections.get(connection).map(String::as_str);
        let counts = written_by.entry(by.unwrap_or("nobody known")).or_default();
        if old_epoch == &Some(*new_epoch) {
            counts.1 += 1;
        } else {
            counts.0 += 1;
        }
        assert_eq!(
            by,
            Some(owner.as_str()),
            "audit row {id}: room {room} epoch {old_epoch:?} -> {new_epoch}, version \
             {old_version:?} -> {new_version}, owned by {owner}, written by connection \
             {connection} of {by:?}"
        );
        if takeover.get(room) == Some(new_epoch) && old_epoch == &Some(*new_epoch) {
            commits_after_takeover += 1;
        }
    }
    eprintln!("cell row changes (activations, commits) by node: {written_by:?}");
    assert!(
        commits_after_takeover > 0,
        "{other} committed in the rooms it took over"
    );
    assert!(
        written_by
            .get(paused)
            .is_some_and(|(activations, _)| *activations >= taken.len()),
        "{paused} took its rooms back: {written_by:?}"
    );
    let resumed = node.metrics().await.unwrap();
    eprintln!(
        "{paused} after the pause: cells fenced {}, leases lost {}, robot commands refused as \
         not owner {}; its warnings:\n{}",
        metric(&resumed, "room_cell_fenced_total", None),
        metric(&resumed, "room_leases_lost_total", None),
        metric(
            &resumed,
            "room_robot_commands_total",
            Some("outcome=\"not_owner\"")
        ),
        node.problems_after_start().join("\n")
    );
    cluster.finish().await;
}
