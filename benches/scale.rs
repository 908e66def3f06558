//! Scale benchmark: `fief validate REPO` and `fief render REPO >/dev/null` (the built binary,
//! as a user runs it) on a synthetic repo of each of SIZES tenants (default 1,000 and 10,000;
//! `-- 10000 100000 3` for 10,000 and 100,000), RUNS times each, interleaved so every size
//! sees the same machine. Per command and size: the median wall time and the median peak RSS
//! of the process (`ru_maxrss` of its own `wait4`), its median CPU time (user + system: on a
//! shared machine, the figure other processes disturb least), and the ratios of each size to
//! the one before against the goals (wall time at most 11 times, peak RSS at most 2 times,
//! for ten times the tenants). Prints a table and writes `target/scale.json`.
//!
//! `cargo bench --bench scale [-- SIZES... RUNS]` (with one or two numbers: sizes only)

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
    let mut args: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .filter_map(|a| a.parse().ok())
        .collect();
    let runs = if args.len() >= 3 { args.pop() } else { None };
    let runs = runs.unwrap_or(3).max(1);
    let sizes = match args.len() {
        0 => vec![1000, 10_000],
        1 => vec![1000, args[0]],
        _ => args,
    };
    let measured = measure(&sizes, runs);
    println!(
        "scale benchmark: {sizes:?} tenants, {runs} runs, {} cores, {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        env!("CARGO_BIN_EXE_fief")
    );
    println!(
        "  {:<9} {:>8} {:>10} {:>10} {:>11} {:>10} {:>9}",
        "command", "tenants", "wall", "CPU", "peak RSS", "wall ×", "RSS ×"
    );
    let mut json = Vec::new();
    let mut met = true;
    for (c, command) in COMMANDS.iter().enumerate() {
        let figures: Vec<(f64, f64, f64)> = measured[c].iter().map(|r| medians(r)).collect();
        for (s, &(wall, cpu, rss)) in figures.iter().enumerate() {
            let ratios = s.checked_sub(1).map(|p| {
                let (pw, _, pr) = figures[p];
                (wall / pw, rss / pr)
            });
            if let Some((w, r)) = ratios {
                met &= w <= WALL_GOAL && r <= RSS_GOAL;
            }
            let shown = |x: Option<f64>| x.map_or("".to_string(), |x| format!("{x:.2}"));
            println!(
                "  {command:<9} {:>8} {wall:>8.2} s {cpu:>8.2} s {rss:>7.1} MiB {:>10} {:>9}",
                sizes[s],
                shown(ratios.map(|r| r.0)),
                shown(ratios.map(|r| r.1)),
            );
        }
        json.push(serde_json::json!({
            "command": command,
            "tenants": sizes,
            "wall_seconds": figures.iter().map(|f| f.0).collect::<Vec<_>>(),
            "cpu_seconds": figures.iter().map(|f| f.1).collect::<Vec<_>>(),
            "peak_rss_mib": figures.iter().map(|f| f.2).collect::<Vec<_>>(),
            "runs": runs,
        }));
    }
    println!(
        "  goals, each size to the one before (ten times the tenants): wall ratio <= {WALL_GOAL}, RSS ratio <= {RSS_GOAL}: {}",
        if met { "met" } else { "NOT met" }
    );
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/scale.json");
    let text = serde_json::to_string_pretty(&json).expect("serialize") + "\n";
    std::fs::write(&out, text).expect("write target/scale.json");
    println!("  written to {}", out.display());
}
