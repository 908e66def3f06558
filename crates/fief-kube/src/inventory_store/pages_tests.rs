//! Tests of the paged reading: pages answered by the test (whole, cut, or not a list), the
//! ConfigMaps that reach the taker, and how the reading ends.

use std::collections::BTreeMap;
use std::io::Read;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::io::{AllowStdIo, AsyncRead, BufReader};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Body, read_pages};

/// A reader that gives the first `at` bytes of `text`, then fails as a dropped connection.
struct Cut {
    text: std::io::Cursor<Vec<u8>>,
    at: u64,
}

impl AsyncRead for Cut {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let left = self.at.saturating_sub(self.text.position());
        if left == 0 {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset",
            )));
        }
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        Poll::Ready(self.text.read(&mut buf[..n]))
    }
}

/// The text of a page of ConfigMaps `names`, continued by `next`.
fn page(names: &[&str], next: Option<&str>) -> String {
    let items: Vec<Value> = names
        .iter()
        .map(|n| json!({"metadata": {"name": n}, "data": {"inventory": "x".repeat(500)}}))
        .collect();
    json!({
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "7", "continue": next.unwrap_or_default()},
        "items": items,
    })
    .to_string()
}

/// The server of the test: pages by token, and for each token the byte at which its answer
/// is cut, once per entry (then whole).
#[derive(Clone, Default)]
struct Server {
    pages: BTreeMap<String, String>,
    cuts: Arc<Mutex<BTreeMap<String, Vec<u64>>>>,
    /// Tokens answered once with `410 Gone` (expired).
    gone: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn open(&self, token: Option<String>) -> Body {
        let token = token.unwrap_or_default();
        self.asked.lock().unwrap().push(token.clone());
        let text = self.pages[&token].clone().into_bytes();
        let cut = self
            .cuts
            .lock()
            .unwrap()
            .get_mut(&token)
            .and_then(|c| c.pop());
        // Read in small chunks, as an answer arrives.
        match cut {
            Some(at) => Box::pin(BufReader::with_capacity(
                700,
                Cut {
                    text: std::io::Cursor::new(text),
                    at,
                },
            )),
            None => Box::pin(BufReader::with_capacity(
                700,
                AllowStdIo::new(std::io::Cursor::new(text)),
            )),
        }
    }
}

/// Two pages: a, b, c then d, e.
fn two_pages() -> Server {
    let mut pages = BTreeMap::new();
    pages.insert(String::new(), page(&["a", "b", "c"], Some("t2")));
    pages.insert("t2".to_string(), page(&["d", "e"], None));
    Server {
        pages,
        ..Server::default()
    }
}

/// A byte inside the ConfigMap `name` of the first page (in its data, which comes before
/// its name).
fn inside(server: &Server, name: &str) -> u64 {
    let first = &server.pages[""];
    first.find(&format!("\"{name}\"")).unwrap() as u64 - 100
}

/// Start reading the pages of `server`: what reaches the taker, and the reading's task.
fn start(server: &Server) -> (mpsc::Receiver<super::Sent>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel(2);
    let s = server.clone();
    let open = move |t: Option<String>| {
        let mut gone = s.gone.lock().unwrap();
        let expired = t.as_ref().and_then(|t| gone.iter().position(|g| g == t));
        let opened = match expired {
            Some(i) => {
                gone.remove(i);
                s.asked
                    .lock()
                    .unwrap()
                    .push(format!("{} (gone)", t.unwrap_or_default()));
                Err(crate::ClusterError::Api {
                    what: "list".into(),
                    code: 410,
                    reason: "Expired".into(),
                    message: "the continue token expired".into(),
                })
            }
            None => Ok(s.open(t)),
        };
        Box::pin(async move { opened }) as futures::future::BoxFuture<'static, _>
    };
    (rx, tokio::spawn(read_pages(open, "list".to_string(), tx)))
}

/// Read every page of `server`: the names that reached the taker, and the error last sent.
async fn read(server: &Server) -> (Vec<String>, Option<String>) {
    let (mut rx, reader) = start(server);
    let (mut names, mut error) = (Vec::new(), None);
    while let Some(sent) = rx.recv().await {
        match sent {
            Ok(cm) => names.push(cm["metadata"]["name"].as_str().unwrap().to_string()),
            Err(e) => error = Some(e.to_string()),
        }
    }
    reader.await.unwrap();
    (names, error)
}

#[tokio::test]
async fn every_configmap_of_every_page_is_sent_once_in_order() {
    let server = two_pages();
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(error, None);
    assert_eq!(*server.asked.lock().unwrap(), ["", "t2"]);
}

#[tokio::test]
async fn a_page_cut_midway_is_read_again_from_its_token_and_sends_nothing_twice() {
    let server = two_pages();
    // The first page is cut inside its second ConfigMap, then inside its third.
    let (in_b, in_c) = (inside(&server, "b"), inside(&server, "c"));
    server
        .cuts
        .lock()
        .unwrap()
        .insert(String::new(), vec![in_c, in_b]);
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(error, None);
    assert_eq!(*server.asked.lock().unwrap(), ["", "", "", "t2"]);
}

#[tokio::test]
async fn an_expired_token_starts_the_list_again_and_sends_nothing_twice() {
    let server = two_pages();
    server.gone.lock().unwrap().push("t2".to_string());
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(error, None);
    assert_eq!(*server.asked.lock().unwrap(), ["", "t2 (gone)", "", "t2"]);
}

#[tokio::test]
async fn a_token_that_keeps_expiring_ends_the_reading_with_its_error() {
    let server = two_pages();
    server
        .gone
        .lock()
        .unwrap()
        .extend(vec!["t2".to_string(); 10]);
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a", "b", "c"]);
    assert!(error.expect("an error").contains("410"));
}

#[tokio::test]
async fn a_page_cut_again_and_again_at_one_place_ends_the_reading_with_an_error() {
    let server = two_pages();
    let at = inside(&server, "b");
    server
        .cuts
        .lock()
        .unwrap()
        .insert(String::new(), vec![at; 10]);
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a"], "what came before the cut is sent once");
    let error = error.expect("an error");
    assert!(error.contains("cut off 4 times in a row"), "{error}");
    assert_eq!(server.asked.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn an_answer_that_is_not_a_list_ends_the_reading_with_an_error() {
    let mut server = two_pages();
    server
        .pages
        .insert("t2".to_string(), r#"{"items": 3}"#.to_string());
    let (names, error) = read(&server).await;
    assert_eq!(names, ["a", "b", "c"]);
    assert!(error.expect("an error").contains("not a list"));
}

#[tokio::test]
async fn a_list_whose_metadata_follows_its_items_or_whose_items_are_null_is_read() {
    let mut server = Server::default();
    server.pages.insert(
        String::new(),
        r#"{"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "n"}}"#.to_string(),
    );
    server.pages.insert(
        "n".to_string(),
        r#"{"metadata": {}, "items": null}"#.to_string(),
    );
    let (names, error) = read(&server).await;
    assert_eq!((names, error), (vec!["a".to_string()], None));
}

#[tokio::test]
async fn a_taker_that_stops_stops_the_reading() {
    let mut server = two_pages();
    let many: Vec<String> = (0..100).map(|i| format!("n{i:03}")).collect();
    let names: Vec<&str> = many.iter().map(String::as_str).collect();
    server.pages.insert(String::new(), page(&names, Some("t2")));
    let (mut rx, reader) = start(&server);
    let first = rx.recv().await.expect("one").expect("a ConfigMap");
    assert_eq!(first["metadata"]["name"], "n000");
    drop(rx);
    reader.await.unwrap();
    assert_eq!(
        *server.asked.lock().unwrap(),
        [""],
        "no page after the stop"
    );
}
