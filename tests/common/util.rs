//! Small helpers every test binary repeats: process output as text, files, the git CLI, free
//! loopback ports and polling.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Process output as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Write `body` to `root/path`, creating folders.
pub fn write(root: &Path, path: &str, body: impl AsRef<[u8]>) {
    let p = root.join(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("create test folder");
    }
    std::fs::write(&p, body).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

/// Run `git` in `dir` with no user or system configuration and a fixed identity; panics with
/// its output on failure; returns its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "fief test")
        .env("GIT_AUTHOR_EMAIL", "test@fief.invalid")
        .env("GIT_COMMITTER_NAME", "fief test")
        .env("GIT_COMMITTER_EMAIL", "test@fief.invalid")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the git CLI (is git installed?): {e}"));
    assert!(
        out.status.success(),
        "git {args:?} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout).trim().to_string()
}

/// A TCP port free on loopback right now.
pub fn free_port() -> u16 {
    free_port_on("127.0.0.1")
}

/// The ports handed out for test listeners: below the kernel's ephemeral range (32768 and up
/// by default), so an outgoing connection of a parallel test never takes a port between the
/// moment it is picked and the moment its listener binds it, and above the control plane's
/// own ports (20000–29999, `tools/start-control-plane.sh`).
const TEST_PORTS: std::ops::Range<u16> = 30000..32768;

/// A port free on `ip` now (bound, then let go), from [`TEST_PORTS`]; each is handed out at
/// most once per test process, starting at an offset drawn from the process id so test
/// binaries run one after another do not walk the same ports.
pub fn free_port_on(ip: &str) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(TEST_PORTS.end - TEST_PORTS.start);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..span {
        let step = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = TEST_PORTS.start + u16::try_from(step).unwrap_or(0);
        if std::net::TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
    panic!("no port free on {ip} in {TEST_PORTS:?}");
}

/// Poll `check` every 50 ms until it holds; returns how long it took, panics after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check() {
            return start.elapsed();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {timeout:?} waiting for {what}");
}

/// A raw HTTP/1.1 request (Connection: close); (status, body).
pub fn http_request(
    addr: impl std::net::ToSocketAddrs,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Option<(u16, String)> {
    http_response(addr, method, path, headers, body).map(|(code, _, body)| (code, body))
}

/// A raw HTTP/1.1 request (Connection: close); (status, response head, body).
pub fn http_response(
    addr: impl std::net::ToSocketAddrs,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Option<(u16, String, String)> {
    let addr = addr.to_socket_addrs().ok()?.next()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n");
    let (head, body) = match split {
        Some(at) => (&out[..at], &out[at + 4..]),
        None => (&out[..], &[][..]),
    };
    let head = String::from_utf8_lossy(head).into_owned();
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Some((code, head, String::from_utf8_lossy(&body).into_owned()))
}

/// A body sent with `Transfer-Encoding: chunked`, its chunks joined (what any HTTP/1.1 client
/// hands on); a body cut short keeps the chunks that arrived whole.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&rest[..eol]);
        let size = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            break;
        };
        let data = &rest[eol + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        rest = data[size..].strip_prefix(b"\r\n").unwrap_or(&data[size..]);
    }
    out
}

/// Run `cmd` with `stdin` piped in when given (else no stdin); its output.
pub fn output_with_stdin(
    mut cmd: std::process::Command,
    stdin: Option<&str>,
) -> std::process::Output {
    use std::process::Stdio;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes())
            .expect("cannot write to the child's stdin");
    }
    child.wait_with_output().expect("cannot wait for the child")
}

/// The rollout record in the ConfigMap `fief-rollout` (as `kubectl get -o json` printed it),
/// or null.
pub fn rollout_record(configmap: Option<serde_json::Value>) -> serde_json::Value {
    configmap
        .and_then(|cm| {
            cm["data"]["rollout.json"]
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
        })
        .unwrap_or(serde_json::Value::Null)
}

/// A `git daemon` serving every repository under a folder; stopped when dropped, or within
/// about a second of the test process ending (a daemon held in a static is never dropped).
#[derive(Debug)]
pub struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SIGTERM to the watching shell, which stops the daemon and waits for it.
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// The shell around `git-daemon`: it runs the daemon, stops it on SIGTERM, and stops it when
/// the test process (`$FIEF_TEST_PID`) is gone.
const WATCHED_DAEMON: &str = r#"daemon="$1"; shift
"$daemon" "$@" & pid=$!
trap 'kill $pid 2>/dev/null; wait $pid; exit 0' TERM INT
while kill -0 "$FIEF_TEST_PID" 2>/dev/null && kill -0 $pid 2>/dev/null; do
  sleep 1 & wait $!
done
kill $pid 2>/dev/null"#;

/// Start `git daemon` for every repository under `base` on `127.0.0.1:port` (URLs
/// `git://127.0.0.1:port/<folder>`); returns once it accepts connections (at most 10 s).
pub fn git_daemon(base: &Path, port: u16) -> Daemon {
    git_daemon_on(base, "127.0.0.1", port)
}

/// Start `git daemon` for every repository under `base` on `ip:port`; returns once it accepts
/// connections, panics after 10 s.
pub fn git_daemon_on(base: &Path, ip: &str, port: u16) -> Daemon {
    let exec = Command::new("git")
        .arg("--exec-path")
        .output()
        .expect("git --exec-path");
    let exec = String::from_utf8_lossy(&exec.stdout).trim().to_string();
    let child = Command::new("bash")
        .args(["-c", WATCHED_DAEMON, "git-daemon"])
        .arg(Path::new(&exec).join("git-daemon"))
        .args([
            "--export-all",
            "--reuseaddr",
            &format!("--listen={ip}"),
            &format!("--port={port}"),
            &format!("--base-path={}", base.display()),
        ])
        .env("FIEF_TEST_PID", std::process::id().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start git daemon");
    let daemon = Daemon(child);
    wait_until("git daemon listening", Duration::from_secs(10), || {
        TcpStream::connect((ip, port)).is_ok()
    });
    daemon
}
