//! Per-commit benchmark: the agent's source side of a one-tenant change —
//! git fetch over `git://` from a local `git daemon`, then [`fief::source::revision::read_commit`]
//! (snapshot, load, input hashes) — at a small and a large fleet, in one run. No cluster.
//!
//! Prints, per size and for two layouts of `tenants/` (one folder; folders of 100), the median CPU time of the calling thread (from
//! `CLOCK_THREAD_CPUTIME_ID`) for the fetch and for the read, over several
//! one-tenant commits, and the large/small ratio. A change to one tenant should cost the same
//! at any fleet size.
//!
//! Then, for the same sizes, the wall time of the same kind of commit fetched by the git CLI
//! (`git fetch` over `file://`: client and server, as any git client pays it), with the tenant
//! files in one directory and grouped in directories of 100: what the layout of `tenants/`
//! costs git itself, whatever reads the commit.
//!
//! `cargo bench --bench commit [-- SMALL LARGE CHANGES]` (default 100 1000 21)

#[path = "../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests; each bench uses part of it
mod synth;
#[path = "../tests/common/util.rs"]
#[allow(dead_code)]
mod util;

use util::{free_port, git, git_daemon};

use fief::source::git::{GitAuth, GitSource};
use fief::source::revision::{ReadCache, read_commit};

/// CPU nanoseconds the calling thread has run so far (`CLOCK_THREAD_CPUTIME_ID`, exact to
/// the call, unlike the tick-sampled `/proc` counters).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// A git repo at `dir/repo` with the synthetic repo of `tenants` committed, its tenant files in
/// `tenants/` or (`grouped`) in folders of 100 under it.
fn committed_repo(dir: &std::path::Path, tenants: usize, grouped: bool) -> std::path::PathBuf {
    let repo = dir.join("repo");
    let mut files = synth::repo_files(tenants);
    if grouped {
        files = synth::in_folders(files, 100);
    }
    synth::write_files(&repo, &files).expect("write synthetic repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    repo
}

/// Fetch and read CPU µs of each of `changes` one-tenant commits, in order; the tenant files
/// in `tenants/` or (`grouped`) in folders of 100 under it.
fn measure(tenants: usize, changes: usize, grouped: bool) -> (Vec<u64>, Vec<u64>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = committed_repo(dir.path(), tenants, grouped);
    let port = free_port();
    let _daemon = git_daemon(dir.path(), port);
    let url = format!("git://127.0.0.1:{port}/repo");
    let source =
        GitSource::open_or_clone(&url, "main", &dir.path().join("cache"), GitAuth::default())
            .expect("clone");
    let mut cache = ReadCache::default();
    let head = source.fetch().expect("fetch");
    read_commit(&source, &head, &mut cache, None).expect("read");
    let tenant_file = synth::tenant_file(&repo, &synth::tenant_name(1)).expect("tenant file");
    let original = std::fs::read_to_string(&tenant_file).expect("tenant file");
    let (mut fetch, mut read) = (Vec::new(), Vec::new());
    for i in 0..changes {
        let text = original.replace(
            "    - name: worker\n",
            &format!("    - name: worker\n      values: {{queues: [q{i}]}}\n"),
        );
        std::fs::write(&tenant_file, text).expect("write tenant");
        git(&repo, &["commit", "-q", "-am", &format!("change {i}")]);
        let t0 = thread_cpu_ns();
        let head = source.fetch().expect("fetch");
        let t1 = thread_cpu_ns();
        let (rev, _, hashed) = read_commit(&source, &head, &mut cache, None).expect("read");
        let t2 = thread_cpu_ns();
        assert_eq!(hashed.tenants_hashed, 1, "one tenant changed");
        drop(rev);
        fetch.push((t1 - t0) / 1000);
        read.push((t2 - t1) / 1000);
    }
    (fetch, read)
}

/// Median wall µs of `git fetch` (the git CLI, over `file://`) of each of `changes`
/// one-tenant commits to a repo of `tenants` tenant files, all in `tenants/` or (`grouped`)
/// in directories of 100 under it.
fn git_cli_fetch(tenants: usize, changes: usize, grouped: bool) -> u64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = committed_repo(dir.path(), tenants, grouped);
    let tenant_path = synth::tenant_file(&repo, &synth::tenant_name(1)).expect("tenant file");
    // Over `file://`: git-upload-pack on a pipe, as a server runs it, with no daemon.
    let url = format!("file://{}", repo.display());
    let clone = dir.path().join("clone");
    git(dir.path(), &["clone", "-q", &url, &clone.to_string_lossy()]);
    let mut walls = Vec::new();
    for i in 0..changes {
        std::fs::write(&tenant_path, format!("# change {i}\n")).expect("write");
        git(&repo, &["commit", "-q", "-am", &format!("change {i}")]);
        let start = std::time::Instant::now();
        git(&clone, &["fetch", "-q", "origin"]);
        walls.push(start.elapsed().as_micros() as u64);
    }
    median(walls)
}

/// Median total (fetch + read) µs of the first and of the last fifth of the commits: whether a
/// commit's cost grows with the commits fetched before it.
fn drift(fetch: &[u64], read: &[u64]) -> (u64, u64) {
    let total: Vec<u64> = fetch.iter().zip(read).map(|(f, r)| f + r).collect();
    let fifth = (total.len() / 5).max(1);
    (
        median(total[..fifth].to_vec()),
        median(total[total.len() - fifth..].to_vec()),
    )
}

/// The fetch and read table of one layout of `tenants/`.
fn report(small: usize, large: usize, changes: usize, grouped: bool) {
    let (small_fetch, small_read) = measure(small, changes, grouped);
    let (large_fetch, large_read) = measure(large, changes, grouped);
    // A merge of the cache's packs (one fetch in MAX_PACKS) is an outlier the medians leave
    // out; the mean and the slowest fetch show it.
    let mean = |v: &[u64]| v.iter().sum::<u64>() / (v.len().max(1) as u64);
    let slowest = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    let merges = format!(
        "fetch mean / slowest (pack merges included): {small} tenants {} / {} µs, {large} tenants {} / {} µs",
        mean(&small_fetch),
        slowest(&small_fetch),
        mean(&large_fetch),
        slowest(&large_fetch)
    );
    let (small_early, small_late) = drift(&small_fetch, &small_read);
    let (large_early, large_late) = drift(&large_fetch, &large_read);
    let (sf, sr) = (median(small_fetch), median(small_read));
    let (lf, lr) = (median(large_fetch), median(large_read));
    let layout = if grouped {
        "tenant files in folders of 100"
    } else {
        "tenant files in one folder"
    };
    println!("\none-tenant commit, {layout}, CPU of the reading thread (median of {changes}):");
    println!("| tenants | fetch | read | total |");
    println!("|---|---|---|---|");
    println!("| {small} | {sf} µs | {sr} µs | {} µs |", sf + sr);
    println!("| {large} | {lf} µs | {lr} µs | {} µs |", lf + lr);
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    println!(
        "ratio {large}/{small}: fetch {:.2}, read {:.2}, total {:.2}",
        ratio(lf, sf),
        ratio(lr, sr),
        ratio(lf + lr, sf + sr)
    );
    println!("{merges}");
    println!(
        "first / last fifth of the commits (total): {small} tenants {small_early} / {small_late} µs, {large} tenants {large_early} / {large_late} µs"
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .filter_map(|a| a.parse().ok())
        .collect();
    let small = args.first().copied().unwrap_or(100);
    let large = args.get(1).copied().unwrap_or(1000);
    let changes = args.get(2).copied().unwrap_or(21);
    for grouped in [false, true] {
        report(small, large, changes, grouped);
    }
    println!("\none-tenant commit, `git fetch` by the git CLI, wall (median of {changes}):");
    println!("| tenants | tenant files in one directory | in directories of 100 |");
    println!("|---|---|---|");
    for n in [small, large] {
        let flat = git_cli_fetch(n, changes, false);
        let grouped = git_cli_fetch(n, changes, true);
        println!("| {n} | {flat} µs | {grouped} µs |");
    }
}
