//! Where a loaded repo's memory goes, structure by structure: the live heap bytes (counted by
//! a global allocator that wraps the system one, so the figures do not depend on the
//! allocator) after each step of loading a synthetic repo from disk, whole ([`Repo::load`]) and
//! indexed ([`Indexed`]), per tenant.
//!
//! `cargo test -p fief-source --release --test load_memory -- --ignored --nocapture` prints
//! the table for 10,000 and 100,000 tenants (`FIEF_MEMORY_TENANTS=1000,10000` for others);
//! the test that runs by default checks that the indexed repo holds a small index per tenant.

#[path = "../../../tests/common/synth.rs"]
#[allow(dead_code)] // shared with the tests; this one writes a repo
mod synth;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fief_core::model::{Indexed, Repo};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a counter is added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by it.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Bytes each structure holds, whole and indexed.
#[derive(Debug, Default)]
struct Measured {
    tenants: usize,
    snapshot: usize,
    model: usize,
    across: usize,
    whole: usize,
    listed_snapshot: usize,
    indexed: usize,
    one_tenant: usize,
}

fn measure(tenants: usize) -> Measured {
    let dir = tempfile::tempdir().expect("temp dir");
    synth::write_repo(dir.path(), tenants).expect("write synthetic repo");
    let mut m = Measured {
        tenants,
        ..Default::default()
    };
    let start = live();
    let snapshot = fief_source::fs::read_dir(dir.path()).expect("read repo");
    m.snapshot = live() - start;
    let repo = Repo::load(Arc::new(snapshot));
    m.model = live() - start - m.snapshot;
    repo.across();
    m.whole = live() - start;
    m.across = m.whole - m.snapshot - m.model;
    drop(repo);
    let start = live();
    let listed = fief_source::fs::read_dir_indexed(dir.path()).expect("read repo");
    m.listed_snapshot = live() - start;
    let indexed = Indexed::load(
        listed.snapshot,
        listed.tenant_files,
        Arc::new(listed.reader),
    );
    m.indexed = live() - start;
    let before = live();
    let one = indexed.tenant_repo(&synth::tenant_name(tenants / 2));
    m.one_tenant = live() - before;
    drop(one);
    drop(indexed);
    m
}

fn row(what: &str, bytes: usize, tenants: usize) {
    println!(
        "  {what:<52} {:>8.1} MiB {:>7.0} B/tenant",
        bytes as f64 / (1024.0 * 1024.0),
        bytes as f64 / tenants as f64
    );
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn where_the_memory_of_a_loaded_repo_goes() {
    let sizes = std::env::var("FIEF_MEMORY_TENANTS").unwrap_or_else(|_| "10000,100000".into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse().ok()) {
        let m = measure(n);
        println!("{n} tenants, live heap bytes:");
        row("whole: snapshot (every file's text)", m.snapshot, n);
        row(
            "whole: parsed model (tenants, their files, the rest)",
            m.model,
            n,
        );
        row("whole: cross-tenant index", m.across, n);
        row("whole: all", m.whole, n);
        row(
            "indexed: snapshot without the tenant files",
            m.listed_snapshot,
            n,
        );
        row(
            "indexed: all (names, paths, cross-tenant index, hashes)",
            m.indexed,
            n,
        );
        row(
            "indexed: one tenant's repo while it renders",
            m.one_tenant,
            1,
        );
    }
}

#[test]
fn an_indexed_repo_holds_a_small_index_per_tenant_not_the_tenant_files() {
    let m = measure(2000);
    let per_tenant = |bytes: usize| bytes / m.tenants;
    assert!(
        per_tenant(m.indexed) * 3 < per_tenant(m.whole),
        "{m:?}: the index holds more than a third of the whole repo"
    );
    assert!(per_tenant(m.indexed) < 1024, "{m:?}");
}
