//! CPU time of the servers and of the machine, from `/proc`: the servers' CPU per gift, their
//! context switches, and the share the hypervisor stole meanwhile.

use anyhow::{Context, Result};

use crate::report::report;

/// The counters of the processes `pids` (one entry each, in their order) and of the machine
/// now.
pub fn sample(pids: &[u32]) -> Result<CpuSample> {
    let (steal_ticks, total_ticks) = machine_ticks()?;
    let nodes = pids
        .iter()
        .map(|&pid| {
            Ok(NodeCpu {
                ticks: process_ticks(pid)?,
                switches: context_switches(pid)?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(CpuSample {
        nodes,
        steal_ticks,
        total_ticks,
    })
}

/// The user and system time of process `pid` so far, in clock ticks.
fn process_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name, which is in parentheses and may hold spaces:
    // state is the first of them, utime the 12th and stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("no command name in /proc/<pid>/stat")?
        .1
        .split_whitespace()
        .collect();
    let ticks =
        |i: usize| -> Result<u64> { Ok(fields.get(i).context("short /proc/<pid>/stat")?.parse()?) };
    Ok(ticks(11)? + ticks(12)?)
}

/// The context switches of every thread of process `pid` so far (voluntary: the thread
/// waited; involuntary: it was preempted), from `/proc/<pid>/task/*/status`. Threads that
/// ended are not counted, and the server's threads live as long as it does.
fn context_switches(pid: u32) -> Result<u64> {
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread may end between the listing and the read.
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            if let Some(count) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += count.trim().parse::<u64>()?;
            }
        }
    }
    Ok(switches)
}

/// One server's counters at one moment.
#[derive(Debug, Clone, Copy)]
struct NodeCpu {
    /// User and system time, in clock ticks.
    ticks: u64,
    /// Context switches of its threads.
    switches: u64,
}

/// CPU time of the servers and of the whole machine at one moment, from `/proc`.
pub struct CpuSample {
    /// Each server's counters.
    nodes: Vec<NodeCpu>,
    /// The machine's time stolen by the hypervisor, and all its accounted time, in ticks.
    steal_ticks: u64,
    total_ticks: u64,
}

/// What happened between two [`CpuSample`]s.
pub struct CpuUse {
    /// Seconds of CPU each server used.
    pub node_secs: Vec<f64>,
    /// Context switches of each server's threads.
    node_switches: Vec<u64>,
    /// The share of the machine's CPU time the hypervisor gave to other guests: when it is
    /// high, the figures of the run say more about the host than about the service.
    steal_share: f64,
}

/// `/proc` counts in USER_HZ ticks, 100 per second on Linux.
const TICKS_PER_SEC: f64 = 100.0;

impl CpuUse {
    /// Reports the servers' CPU time per gift and the host's steal (with several servers,
    /// also each one's CPU time and context switches per gift); answers the servers' CPU time
    /// per gift, in microseconds.
    pub fn report(&self, gifts: u64) -> f64 {
        let gifts = gifts.max(1) as f64;
        let per_gift = self.node_secs.iter().sum::<f64>() * 1e6 / gifts;
        report(
            "  server CPU per gift, host steal",
            &format!("{per_gift:.0} us, {:.0} %", self.steal_share * 100.0),
        );
        if self.node_secs.len() < 2 {
            return per_gift;
        }
        let by_node: Vec<String> = self
            .node_secs
            .iter()
            .zip(&self.node_switches)
            .map(|(secs, switches)| {
                format!(
                    "{:.0} us, {:.1}",
                    secs * 1e6 / gifts,
                    *switches as f64 / gifts
                )
            })
            .collect();
        report(
            "  by server: CPU, context switches per gift",
            &by_node.join(" | "),
        );
        per_gift
    }
}

impl CpuSample {
    pub fn since(&self, before: &CpuSample) -> CpuUse {
        let total = self.total_ticks.saturating_sub(before.total_ticks).max(1);
        let pairs = || self.nodes.iter().zip(&before.nodes);
        CpuUse {
            node_secs: pairs()
                .map(|(now, then)| now.ticks.saturating_sub(then.ticks) as f64 / TICKS_PER_SEC)
                .collect(),
            node_switches: pairs()
                .map(|(now, then)| now.switches.saturating_sub(then.switches))
                .collect(),
            steal_share: self.steal_ticks.saturating_sub(before.steal_ticks) as f64 / total as f64,
        }
    }
}

/// Reads the `cpu` line of `/proc/stat`: (steal, the sum of user to steal).
fn machine_ticks() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("cpu "))
        .context("no cpu line in /proc/stat")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let accounted = fields.get(..8).context("short cpu line in /proc/stat")?;
    Ok((accounted[7], accounted.iter().sum()))
}
