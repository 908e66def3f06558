//! A fleet rendered on worker threads and handed out in tenant order, a batch at a time.
//!
//! In: the tenant names, a batch size, how to render one tenant and what to do with each
//! batch. Out: the batches, in order, to the caller's thread. The workers live for the whole
//! fleet and each takes the next tenant as it finishes one (no barrier between batches, so a
//! slow tenant holds up no other thread), while the calling thread writes the batch before;
//! they stay at most [`AHEAD`] batches ahead of it, so memory holds a few batches' renders,
//! never the fleet's.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::render::TenantRender;

/// How many batches past the one being handed out (and written by the caller) the workers
/// may render.
const AHEAD: usize = 3;

/// What the workers and the handing thread share.
#[derive(Default)]
struct State {
    /// The next tenant (index in the names) to render.
    next: usize,
    /// The first tenant not yet handed out.
    handed: usize,
    /// Renders done and not yet handed out, by index.
    done: BTreeMap<usize, TenantRender>,
    /// The caller stopped (its `each` failed): workers take no more tenants.
    stop: bool,
}

/// The shared state and its one signal: a render finished, or a batch was handed out, or
/// the caller stopped.
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock (a thread panicked outside a render) still holds good state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// The next tenant for a worker, once it is within [`AHEAD`] batches of the one being
    /// handed out; `None` when every tenant is taken or the caller stopped.
    fn take(&self, total: usize, batch: usize) -> Option<usize> {
        let mut state = self.lock();
        loop {
            if state.stop || state.next >= total {
                return None;
            }
            if state.next < state.handed.saturating_add(AHEAD.saturating_mul(batch)) {
                state.next += 1;
                return Some(state.next - 1);
            }
            state = self.wait(state);
        }
    }

    /// The renders of tenants `start..end`, once all are done, removed from the state.
    fn batch(&self, start: usize, end: usize) -> Vec<TenantRender> {
        let mut state = self.lock();
        while state.done.range(start..end).count() < end - start {
            state = self.wait(state);
        }
        let rest = state.done.split_off(&end);
        let out = std::mem::replace(&mut state.done, rest);
        state.handed = end;
        self.changed.notify_all();
        out.into_values().collect()
    }
}

/// Render the `total` tenants (`render(i)` renders the `i`th) on `threads` workers and hand
/// them to `each` in order, `batch` at a time, on this thread. Stops at the first error of
/// `each` (the workers finish the tenant they hold and take no more).
pub(super) fn render_in_order<E>(
    total: usize,
    batch: usize,
    threads: usize,
    render: impl Fn(usize) -> TenantRender + Sync,
    mut each: impl FnMut(Vec<TenantRender>) -> Result<(), E>,
) -> Result<(), E> {
    let batch = batch.max(1);
    let shared = Shared {
        state: Mutex::default(),
        changed: Condvar::new(),
    };
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                while let Some(i) = shared.take(total, batch) {
                    let r = render(i);
                    shared.lock().done.insert(i, r);
                    shared.changed.notify_all();
                }
            });
        }
        let mut result = Ok(());
        for start in (0..total).step_by(batch) {
            let out = shared.batch(start, (start + batch).min(total));
            result = each(out);
            if result.is_err() {
                break;
            }
        }
        shared.lock().stop = true;
        shared.changed.notify_all();
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(i: usize) -> TenantRender {
        // Uneven work, so that workers finish out of order.
        std::thread::sleep(std::time::Duration::from_micros(
            ((i * 7919) % 13) as u64 * 50,
        ));
        TenantRender {
            tenant: format!("t{i:03}"),
            ..Default::default()
        }
    }

    #[test]
    fn every_tenant_is_handed_out_once_in_order_in_batches() {
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        let done = render_in_order(95, 10, 3, named, |batch| {
            sizes.push(batch.len());
            seen.extend(batch.into_iter().map(|r| r.tenant));
            Ok::<(), ()>(())
        });
        assert_eq!(done, Ok(()));
        assert_eq!(
            seen,
            (0..95).map(|i| format!("t{i:03}")).collect::<Vec<_>>()
        );
        assert_eq!(sizes, [10, 10, 10, 10, 10, 10, 10, 10, 10, 5]);
    }

    #[test]
    fn workers_stay_within_a_few_batches_and_stop_when_the_caller_fails() {
        let rendered = std::sync::atomic::AtomicUsize::new(0);
        let count = |i| {
            rendered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            named(i)
        };
        let mut batches = 0;
        let done = render_in_order(1000, 10, 2, count, |_| {
            batches += 1;
            if batches == 3 { Err("stop") } else { Ok(()) }
        });
        assert_eq!(done, Err("stop"));
        let rendered = rendered.into_inner();
        // Three batches handed out, at most AHEAD more batches rendered past them.
        assert!((30..=30 + AHEAD * 10).contains(&rendered), "{rendered}");
    }

    #[test]
    fn no_tenants_hand_out_no_batch() {
        let done = render_in_order(0, 10, 2, named, |_| Err(()));
        assert_eq!(done, Ok(()));
    }
}
