//! What the bench prints: one line per figure, and the machine it ran on.

/// Prints one figure: what it is, then its value.
pub fn report(what: &str, value: &str) {
    eprintln!("{what:<45} {value}");
}

/// The CPU model and the cores of this machine.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}
