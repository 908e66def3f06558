//! Render benchmark: a synthetic repo of N tenants (default 1,000), rendered and validated
//! in memory, and serialized to the YAML stream `fief render` prints, and that stream read back
//! (fast path and full parser alone, same run). Prints the median and
//! the spread of several runs.
//!
//! `cargo bench --bench render [-- TENANTS RUNS]`

#[path = "../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests; each bench uses part of it
mod synth;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fief::core::model::Repo;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo test --all-targets` builds and runs bench targets too; only `cargo bench` (which
    // passes --bench) measures.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark compiled; run it with `cargo bench`");
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let tenants: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(7);
    let dir = tempfile::tempdir().expect("temp dir");
    synth::write_repo(dir.path(), tenants).expect("write synthetic repo");

    let (mut read, mut render, mut stream, mut total) = (vec![], vec![], vec![], vec![]);
    let (mut parse_fast, mut parse_full) = (vec![], vec![]);
    let mut stream_before = vec![];
    let mut objects = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let snapshot = fief::source::fs::read_dir(dir.path()).expect("read repo");
        let repo = Repo::load(Arc::new(snapshot));
        let t1 = Instant::now();
        let renders = fief::core::pipeline::render_all(&repo, &[]);
        let t2 = Instant::now();
        let text = fief::cli::output::stream(&renders, false).expect("serialize");
        let t3 = Instant::now();
        assert!(renders.iter().all(|r| r.is_ok()));
        objects = renders.iter().map(|r| r.objects.len()).sum();
        // The stream as serialized before the block emitter (serde-saphyr's serializer),
        // measured in the same run for comparison; not part of `total`.
        let t4 = Instant::now();
        std::hint::black_box(serde_saphyr_stream(&renders));
        stream_before.push(t4.elapsed());
        // Reading objects back: the stream's documents through `parse_value` (fast path) and
        // through the full event parser alone (as every rendered document was read before).
        let docs = fief::core::yaml::split_documents(&text);
        let t5 = Instant::now();
        for d in &docs {
            std::hint::black_box(fief::core::yaml::parse_value(d).expect("parse"));
        }
        let t6 = Instant::now();
        for d in &docs {
            std::hint::black_box(fief::core::yaml::parse_value_full(d).expect("parse"));
        }
        parse_fast.push(t6 - t5);
        parse_full.push(t6.elapsed());
        read.push(t1 - t0);
        render.push(t2 - t1);
        stream.push(t3 - t2);
        total.push(t3 - t0);
    }
    println!(
        "render benchmark: {tenants} tenants, {objects} objects, {runs} runs, {} threads",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!("  read + parse repo      median {}", ms(median(read)));
    println!("  render + validate      median {}", ms(median(render)));
    println!("  serialize YAML stream  median {}", ms(median(stream)));
    println!(
        "  (same stream through serde-saphyr's serializer, as before: median {})",
        ms(median(stream_before))
    );
    println!(
        "  read the stream back    median {} (full parser alone: {})",
        ms(median(parse_fast)),
        ms(median(parse_full))
    );
    let mut sorted = total.clone();
    sorted.sort();
    println!(
        "  total                  median {} (min {}, max {})",
        ms(median(total)),
        ms(sorted[0]),
        ms(sorted[sorted.len() - 1])
    );
}

/// The YAML stream as `fief render` built it before the block emitter.
fn serde_saphyr_stream(renders: &[fief::core::render::TenantRender]) -> String {
    let mut out = String::new();
    for r in renders.iter().filter(|r| r.is_ok()) {
        for o in &r.objects {
            let body = if fief::core::redact::is_secret(&o.object) {
                fief::core::yaml::to_string(&fief::core::redact::redact(&o.object))
            } else {
                fief::core::yaml::to_string(&o.object)
            }
            .expect("serialize");
            out.push_str(&format!(
                "---\n# Source: {} (tenant {}, env {})\n{}",
                o.source, r.tenant, o.env, body
            ));
        }
    }
    out
}
