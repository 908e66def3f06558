//! Local HTTP receivers for the notification tests: a std `TcpListener` on 127.0.0.1 that
//! records every request's path and JSON body and answers 200 (keep-alive), or one that
//! reads requests and never answers (a receiver that hangs). Stopped on drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request path.
    pub path: String,
    /// The body, as JSON (a string when it is not JSON).
    pub body: Value,
}

/// A receiver on 127.0.0.1.
pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    /// A receiver that answers 200 to every request.
    pub fn start() -> Receiver {
        Receiver::serve(true)
    }

    /// A receiver that takes connections and requests and never answers.
    pub fn hanging() -> Receiver {
        Receiver::serve(false)
    }

    fn serve(answer: bool) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a receiver");
        let port = listener.local_addr().expect("local addr").port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (g, s) = (got.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (g, s) = (g.clone(), s.clone());
                std::thread::spawn(move || connection(conn, answer, &g, &s));
            }
        });
        Receiver { port, got, stop }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Every body so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }

    /// Wait until a body matches `matches`; return it.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let start = Instant::now();
        loop {
            if let Some(v) = self.bodies().into_iter().find(&matches) {
                return v;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out after {timeout:?} waiting for {what}; received: {:#?}",
                self.bodies()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serve one connection: read requests (Content-Length bodies) until EOF; record each;
/// answer 200 or, when `answer` is false, hold the connection until the receiver stops.
fn connection(conn: TcpStream, answer: bool, got: &Mutex<Vec<Received>>, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut writer = conn.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(conn);
    loop {
        let Some(received) = read_request(&mut reader, stop) else {
            return;
        };
        got.lock().unwrap().push(received);
        if !answer {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
            return;
        }
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if writer.write_all(ok.as_bytes()).is_err() {
            return;
        }
    }
}

/// One request off the connection (`None`: closed, or the receiver stopped).
fn read_request(reader: &mut BufReader<TcpStream>, stop: &AtomicBool) -> Option<Received> {
    let mut head = Vec::new();
    let mut line = String::new();
    loop {
        // A timeout keeps what was read of the line: the next read goes on with it.
        match reader.read_line(&mut line) {
            Ok(0) => return None,
            Ok(_) if line == "\r\n" && !head.is_empty() => break,
            Ok(_) => head.push(line.trim_end().to_string()),
            Err(_) if stop.load(Ordering::Relaxed) => return None,
            Err(_) => continue,
        }
        line.clear();
    }
    let path = head[0].split_whitespace().nth(1).unwrap_or("").to_string();
    let length: usize = head
        .iter()
        .find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    let mut read = 0;
    while read < length {
        match reader.read(&mut body[read..]) {
            Ok(0) => return None,
            Ok(n) => read += n,
            Err(_) if stop.load(Ordering::Relaxed) => return None,
            Err(_) => {}
        }
    }
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    Some(Received { path, body })
}
