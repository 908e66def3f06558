//! Scale benchmark: `fief validate REPO` and `fief render REPO >/dev/null` (the built binary,
//! as a user runs it) on a synthetic repo of SMALL and of LARGE tenants (default 1,000 and
//! 10,000), RUNS times each, interleaved so both sizes see the same machine. Per command and
//! size: the median wall time and the median peak RSS of the process (`ru_maxrss` of its own
//! `wait4`), its median CPU time (user + system: on a shared machine, the figure other
//! processes disturb least), and the ratios LARGE/SMALL against the goals (wall time at most
//! 11 times, peak RSS at most 2 times, for ten times the tenants). Prints a table and writes
//! `target/scale.json`.
//!
//! `cargo bench --bench scale [-- SMALL LARGE RUNS]`

#[path = "../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests; each bench uses part of it
mod synth;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Largest ratio of wall times (LARGE/SMALL) the goal allows, for 10 times the tenants.
const WALL_GOAL: f64 = 11.0;
/// Largest ratio of peak RSS (LARGE/SMALL) the goal allows.
const RSS_GOAL: f64 = 2.0;
/// The commands measured: `fief <command> REPO`, stdout discarded.
const COMMANDS: [&str; 2] = ["validate", "render"];

/// One run of the binary: wall time, CPU time (user + system) and peak resident memory in
/// KiB.
#[derive(Clone, Copy)]
struct Run {
    wall: Duration,
    cpu: Duration,
    rss_kib: u64,
}

/// Run `fief <command> <repo>` with stdout to /dev/null; its wall time and peak RSS.
fn run(command: &str, repo: &Path) -> Run {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args([command, repo.to_str().expect("utf-8 temp path")])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start fief");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid, writable for the duration of the call; `pid` is
    // our own child, not yet waited for (`child` is dropped without waiting).
    #[allow(unsafe_code)]
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "fief {command} {} failed (wait status {status})",
        repo.display()
    );
    drop(child);
    let seconds = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run {
        wall,
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        rss_kib: usage.ru_maxrss as u64,
    }
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort_unstable();
    v[v.len() / 2]
}

/// The medians of `runs`: wall seconds, CPU seconds and peak RSS in MiB.
fn medians(runs: &[Run]) -> (f64, f64, f64) {
    let wall = median(runs.iter().map(|r| r.wall).collect());
    let cpu = median(runs.iter().map(|r| r.cpu).collect());
    let rss = median(runs.iter().map(|r| r.rss_kib).collect());
    (wall.as_secs_f64(), cpu.as_secs_f64(), rss as f64 / 1024.0)
}

/// `runs` runs of every command on a synthetic repo of each size, interleaved so that both
/// sizes share the machine: `[command][size]`.
fn measure(sizes: &[usize], runs: usize) -> Vec<Vec<Vec<Run>>> {
    let dirs: Vec<tempfile::TempDir> = sizes
        .iter()
        .map(|&n| {
            let dir = tempfile::tempdir().expect("temp dir");
            synth::write_repo(dir.path(), n).expect("write synthetic repo");
            dir
        })
        .collect();
    let mut measured = vec![vec![Vec::new(); sizes.len()]; COMMANDS.len()];
    for _ in 0..runs {
        for (c, command) in COMMANDS.iter().enumerate() {
            for (s, dir) in dirs.iter().enumerate() {
                measured[c][s].push(run(command, dir.path()));
            }
        }
    }
    measured
}

fn main() {
    // `cargo test --all-targets` builds and runs bench targets too; only `cargo bench` (which
    // passes --bench) measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .filter_map(|a| a.parse().ok())
        .collect();
    let small = args.first().copied().unwrap_or(1000);
    let large = args.get(1).copied().unwrap_or(10_000);
    let runs = args.get(2).copied().unwrap_or(3).max(1);
    let sizes = [small, large];
    let measured = measure(&sizes, runs);
    println!(
        "scale benchmark: {small} and {large} tenants, {runs} runs, {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        env!("CARGO_BIN_EXE_fief")
    );
    println!(
        "  {:<9} {:>10} {:>10} {:>7} {:>11} {:>11} {:>7}",
        "command",
        format!("wall {small}"),
        format!("wall {large}"),
        "ratio",
        format!("RSS {small}"),
        format!("RSS {large}"),
        "ratio"
    );
    let mut json = Vec::new();
    let mut met = true;
    for (c, command) in COMMANDS.iter().enumerate() {
        let (wall_s, cpu_s, rss_s) = medians(&measured[c][0]);
        let (wall_l, cpu_l, rss_l) = medians(&measured[c][1]);
        let (wall_ratio, rss_ratio) = (wall_l / wall_s, rss_l / rss_s);
        met &= wall_ratio <= WALL_GOAL && rss_ratio <= RSS_GOAL;
        println!(
            "  {command:<9} {wall_s:>8.2} s {wall_l:>8.2} s {wall_ratio:>7.2} {rss_s:>7.1} MiB {rss_l:>7.1} MiB {rss_ratio:>7.2}"
        );
        println!(
            "  {:<9} {cpu_s:>8.2} s {cpu_l:>8.2} s {:>7.2}   (CPU, user + system)",
            "",
            cpu_l / cpu_s
        );
        json.push(serde_json::json!({
            "command": command,
            "tenants": sizes,
            "wall_seconds": [wall_s, wall_l],
            "cpu_seconds": [cpu_s, cpu_l],
            "cpu_ratio": cpu_l / cpu_s,
            "peak_rss_mib": [rss_s, rss_l],
            "wall_ratio": wall_ratio,
            "rss_ratio": rss_ratio,
            "runs": runs,
        }));
    }
    println!(
        "  goals: wall ratio <= {WALL_GOAL}, RSS ratio <= {RSS_GOAL}: {}",
        if met { "met" } else { "NOT met" }
    );
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/scale.json");
    let text = serde_json::to_string_pretty(&json).expect("serialize") + "\n";
    std::fs::write(&out, text).expect("write target/scale.json");
    println!("  written to {}", out.display());
}
