//! One running helper process shared by every render thread of a fief process.
//!
//! In: request lines (JSON, each with an id). Out: each request's answer line, or why the
//! helper could not answer. Requests are written whole under a lock, so several are in flight
//! at once; one reader thread takes the answers as the helper finishes them (in any order) and
//! hands each to the thread waiting on its id. The helper renders one request per core, so one
//! process keeps the cores busy while holding each loaded chart once. A helper idle for
//! [`IDLE_EXIT`] is ended (it holds its loaded charts and its heap) and started again by the
//! next request.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// How long a helper may go without a request before it is ended.
pub(super) const IDLE_EXIT: Duration = Duration::from_secs(60);

/// An answer line, or why none came.
type Reply = std::io::Result<String>;

/// A started helper: its input, the requests waiting for an answer, the keys whose files it
/// was sent.
pub(super) struct Process {
    child: Mutex<Child>,
    stdin: Mutex<BufWriter<ChildStdin>>,
    waiting: Mutex<Waiting>,
    next_id: AtomicU64,
    /// Keys whose files went to this helper (a request naming one sends the key alone).
    pub(super) sent: Mutex<HashSet<String>>,
    /// When the last request finished, and how many are in flight.
    activity: Mutex<(Instant, usize)>,
}

/// The requests in flight by id; `broken` once the helper's output ended (no answer will come).
#[derive(Default)]
struct Waiting {
    by_id: HashMap<u64, SyncSender<Reply>>,
    broken: Option<String>,
}

/// `m` locked, whether or not a thread panicked holding it.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A thread that panicked holding the lock left the data as consistent as any: the maps
    // and counters are updated in single statements.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Process {
    /// Drive `child` (its pipes taken out): starts the thread reading its answers.
    pub(super) fn new(child: Child, stdin: ChildStdin, stdout: ChildStdout) -> Arc<Process> {
        let process = Arc::new(Process {
            child: Mutex::new(child),
            stdin: Mutex::new(BufWriter::new(stdin)),
            waiting: Mutex::default(),
            next_id: AtomicU64::new(0),
            sent: Mutex::default(),
            activity: Mutex::new((Instant::now(), 0)),
        });
        let weak = Arc::downgrade(&process);
        std::thread::Builder::new()
            .name("fief-render-helper-answers".into())
            .spawn(move || read_answers(&weak, BufReader::new(stdout)))
            .map_or_else(|e| process.fail(&format!("no reader thread: {e}")), drop);
        process
    }

    /// Send the request `line(id)` builds and wait for its answer line. `line` runs while no
    /// other request is written, so what it decides (whether to send a package's files) holds
    /// in the order the helper reads the requests.
    pub(super) fn exchange(&self, line: impl FnOnce(u64) -> std::io::Result<Vec<u8>>) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let answer = self.expect(id)?;
        self.busy(1);
        let reply = self.send(id, line).and_then(|()| {
            answer
                .recv()
                .unwrap_or_else(|_| Err(std::io::Error::other("the helper's answers ended")))
        });
        self.busy(-1);
        if reply.is_err() {
            lock(&self.waiting).by_id.remove(&id);
        }
        reply
    }

    /// Register `id` as waiting; an error when the helper's output has ended.
    fn expect(&self, id: u64) -> std::io::Result<Receiver<Reply>> {
        let (tx, rx) = sync_channel(1);
        let mut waiting = lock(&self.waiting);
        if let Some(why) = &waiting.broken {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                why.clone(),
            ));
        }
        waiting.by_id.insert(id, tx);
        Ok(rx)
    }

    fn send(
        &self,
        id: u64,
        line: impl FnOnce(u64) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<()> {
        let mut stdin = lock(&self.stdin);
        let line = line(id)?;
        stdin.write_all(&line)?;
        stdin.write_all(b"\n")?;
        stdin.flush()
    }

    fn busy(&self, change: isize) {
        let mut activity = lock(&self.activity);
        activity.0 = Instant::now();
        activity.1 = activity.1.saturating_add_signed(change);
    }

    /// No request in flight for `idle` or more.
    pub(super) fn idle_for(&self, idle: Duration) -> bool {
        let activity = lock(&self.activity);
        activity.1 == 0 && activity.0.elapsed() >= idle
    }

    /// The helper can answer no more: every waiting request gets `why`, and later ones too.
    fn fail(&self, why: &str) {
        let mut waiting = lock(&self.waiting);
        waiting.broken.get_or_insert_with(|| why.to_string());
        for (_, tx) in waiting.by_id.drain() {
            let _ = tx.send(Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                why.to_string(),
            )));
        }
    }

    /// Whether the helper's output ended.
    pub(super) fn is_broken(&self) -> bool {
        lock(&self.waiting).broken.is_some()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Ending the helper ends its output too, and with it the reader thread; wait so it
        // leaves no zombie.
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The reader thread: each answer line to the request waiting on its id, until the helper's
/// output ends or the process is dropped.
fn read_answers(process: &Weak<Process>, mut stdout: BufReader<ChildStdout>) {
    loop {
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let Some(process) = process.upgrade() else {
            return;
        };
        match read {
            Ok(0) => return process.fail("the helper closed its output"),
            Err(e) => return process.fail(&format!("reading the helper's answers: {e}")),
            Ok(_) => {}
        }
        let Some(id) = answer_id(&line) else {
            return process.fail(&format!("an answer without an id: {}", line.trim_end()));
        };
        let Some(tx) = lock(&process.waiting).by_id.remove(&id) else {
            return process.fail(&format!("an answer to request {id}, which is not waiting"));
        };
        let _ = tx.send(Ok(line));
    }
}

/// The `id` of an answer line: read from its start (the helper writes it first), else from
/// the whole line.
fn answer_id(line: &str) -> Option<u64> {
    let fast = line.strip_prefix("{\"id\":").and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        matches!(rest.as_bytes().get(digits), Some(b',' | b'}'))
            .then(|| rest[..digits].parse().ok())?
    });
    fast.or_else(|| {
        #[derive(serde::Deserialize)]
        struct Id {
            id: u64,
        }
        serde_json::from_str::<Id>(line).ok().map(|a| a.id)
    })
}

/// Ends the helper in `slot` once it has been idle for `idle`: checks every quarter of
/// `idle`; stops when the slot no longer holds `process` (replaced or dropped) or the
/// renderer is gone.
pub(super) fn end_when_idle(
    slot: Weak<Mutex<Option<Arc<Process>>>>,
    process: Weak<Process>,
    idle: Duration,
) {
    let every = (idle / 4).max(Duration::from_millis(10));
    let _ = std::thread::Builder::new()
        .name("fief-render-helper-idle".into())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                let Some(slot) = slot.upgrade() else { return };
                let mut current = lock(&slot);
                let same = match (current.as_ref(), process.upgrade()) {
                    (Some(c), Some(p)) => Arc::ptr_eq(c, &p),
                    _ => false,
                };
                if !same {
                    return;
                }
                if current.as_ref().is_some_and(|c| c.idle_for(idle)) {
                    // Dropped outside the lock: ending the helper waits for it to exit.
                    let ended = current.take();
                    drop(current);
                    drop(ended);
                    return;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::answer_id;

    #[test]
    fn an_answer_id_is_read_from_its_start_or_from_the_whole_line() {
        assert_eq!(answer_id("{\"id\":12,\"documents\":[]}\n"), Some(12));
        assert_eq!(answer_id("{\"id\":7}\n"), Some(7));
        assert_eq!(answer_id("{\"error\":\"x\",\"id\":3}\n"), Some(3));
        assert_eq!(answer_id("{\"error\":\"not JSON\"}\n"), None);
        assert_eq!(answer_id("garbage"), None);
    }
}
