//! A mock API server for the fast unit tests of this crate (compiled for tests only).
//!
//! In: a [`Scenario`]: the objects the cluster holds before the test, by API path, and the
//! requests the server should refuse (method, path, HTTP status). Out: a `kube::Client` whose
//! every request is answered in-process by a task playing the API server — GET, server-side
//! apply and strategic-merge PATCH, POST, DELETE, by path, on an in-memory store — and a
//! [`MockApiServer`] holding the log of those requests and the store, for tests to assert
//! on. Built on tower-test's mock service pair, as kube-rs's controller-rs does: no network,
//! no control plane, a test runs in milliseconds. Integration tests (`tests/`) still run
//! against a real kube-apiserver and etcd.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use tokio::sync::RwLock;

use super::{Resource, ResourceMap, Resources};

/// The content type of a server-side apply.
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// What the cluster holds when a test starts, and what it refuses.
#[derive(Debug, Default, Clone)]
pub(crate) struct Scenario {
    objects: BTreeMap<String, Value>,
    failures: Vec<(Method, String, u16)>,
}

impl Scenario {
    /// An empty cluster that answers every request.
    pub(crate) fn new() -> Scenario {
        Scenario::default()
    }

    /// The cluster holds `object` at `path` (e.g. `/api/v1/namespaces/acme-prod`).
    pub(crate) fn with_object(mut self, path: &str, object: Value) -> Scenario {
        self.objects.insert(path.to_string(), object);
        self
    }

    /// Every `method` request to `path` is answered with the error status `code`.
    pub(crate) fn failing(mut self, method: Method, path: &str, code: u16) -> Scenario {
        self.failures.push((method, path.to_string(), code));
        self
    }
}

/// One request the mock API server answered.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// The HTTP method.
    pub(crate) method: Method,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query parameters.
    pub(crate) query: BTreeMap<String, String>,
    /// The `Content-Type` header (empty when none).
    pub(crate) content_type: String,
    /// The `Impersonate-User` header, when the request was sent as someone else.
    pub(crate) impersonate: Option<String>,
    /// The body as JSON (`Null` when empty).
    pub(crate) body: Value,
}

impl Recorded {
    /// Whether this is a server-side apply (a PATCH with the apply content type).
    pub(crate) fn is_apply(&self) -> bool {
        self.method == Method::PATCH && self.content_type == APPLY_PATCH
    }

    /// A query parameter's value.
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }
}

/// What the server task and the test share: the request log and the objects by path.
#[derive(Debug, Default)]
struct State {
    log: Vec<Recorded>,
    objects: BTreeMap<String, Value>,
    failures: Vec<(Method, String, u16)>,
    next_uid: u64,
}

/// The running mock API server: its request log and the objects it holds.
pub(crate) struct MockApiServer {
    state: Arc<Mutex<State>>,
}

impl MockApiServer {
    /// Every request answered so far, in the order they arrived.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.lock().log.clone()
    }

    /// The requests that would change the cluster (everything but GET).
    pub(crate) fn writes(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method != Method::GET)
            .collect()
    }

    /// The paths of the server-side applies.
    pub(crate) fn applied_paths(&self) -> Vec<String> {
        let requests = self.requests();
        requests
            .iter()
            .filter(|r| r.is_apply())
            .map(|r| r.path.clone())
            .collect()
    }

    /// The paths of the DELETEs.
    pub(crate) fn deleted_paths(&self) -> Vec<String> {
        let requests = self.requests();
        requests
            .iter()
            .filter(|r| r.method == Method::DELETE)
            .map(|r| r.path.clone())
            .collect()
    }

    /// The object the cluster now holds at `path`.
    pub(crate) fn object(&self, path: &str) -> Option<Value> {
        self.lock().objects.get(path).cloned()
    }

    /// Change the object the cluster holds at `path`, as someone else would.
    pub(crate) fn edit(&self, path: &str, change: impl FnOnce(&mut Value)) {
        if let Some(object) = self.lock().objects.get_mut(path) {
            change(object);
        }
    }

    /// From now on, every `method` request to `path` is answered with the error `code`.
    pub(crate) fn fail(&self, method: Method, path: &str, code: u16) {
        self.lock().failures.push((method, path.to_string(), code));
    }

    /// Forget the requests answered so far (the objects stay).
    pub(crate) fn clear_log(&self) {
        self.lock().log.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A client talking to a new mock API server that plays `scenario`. Must be called inside a
/// tokio runtime (the server is a task of it).
pub(crate) fn mock_api_server(scenario: Scenario) -> (Client, MockApiServer) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let state = Arc::new(Mutex::new(State {
        objects: scenario.objects,
        failures: scenario.failures,
        ..State::default()
    }));
    let shared = state.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let recorded = record(request).await;
            let response = {
                let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
                let response = answer(&mut state, &recorded);
                state.log.push(recorded);
                response
            };
            send.send_response(response);
        }
    });
    let client = Client::new(service, "default");
    (client, MockApiServer { state })
}

/// [`Resources`] over `client` that know the kinds the tests use, without discovery.
pub(crate) fn resources(client: Client) -> Resources {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
    let known = [
        (ApiResource::erase::<Namespace>(&()), false),
        (ApiResource::erase::<ConfigMap>(&()), true),
        (ApiResource::erase::<ServiceAccount>(&()), true),
    ];
    let mut map = ResourceMap::new();
    for (api, namespaced) in known {
        let key = (api.group.clone(), api.version.clone(), api.kind.clone());
        map.insert(key, Resource { api, namespaced });
    }
    Resources {
        client,
        discovery: Arc::new(RwLock::new(map)),
    }
}

/// The request as the log keeps it.
async fn record(request: Request<Body>) -> Recorded {
    let (parts, body) = request.into_parts();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let query = parts
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let bytes = body.collect_bytes().await.unwrap_or_default();
    Recorded {
        method: parts.method.clone(),
        path: parts.uri.path().to_string(),
        query,
        content_type: header("content-type").unwrap_or_default(),
        impersonate: header("impersonate-user"),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

/// The API server's answer to one request, changing the store as the request asks.
fn answer(state: &mut State, r: &Recorded) -> Response<Body> {
    let refused = state
        .failures
        .iter()
        .find(|(method, path, _)| *method == r.method && *path == r.path);
    if let Some((_, _, code)) = refused {
        return status(*code, "Refused", "refused by the test scenario");
    }
    match r.method {
        Method::GET => match state.objects.get(&r.path) {
            Some(object) => ok(StatusCode::OK, object),
            None => not_found(&r.path),
        },
        Method::PATCH => patch(state, r),
        Method::POST => create(state, r),
        Method::DELETE => match state.objects.remove(&r.path) {
            Some(_) => status(200, "", "deleted"),
            None => not_found(&r.path),
        },
        _ => status(
            405,
            "MethodNotAllowed",
            "the mock API server does not serve it",
        ),
    }
}

/// A server-side apply stores the body as sent; any other patch is merged into the object.
fn patch(state: &mut State, r: &Recorded) -> Response<Body> {
    let stored = if r.is_apply() {
        r.body.clone()
    } else {
        let Some(mut object) = state.objects.get(&r.path).cloned() else {
            return not_found(&r.path);
        };
        merge(&mut object, &r.body);
        object
    };
    let object = state.store(&r.path, stored);
    ok(StatusCode::OK, &object)
}

/// A POST creates the object under the collection path, unless it exists.
fn create(state: &mut State, r: &Recorded) -> Response<Body> {
    let name = r.body["metadata"]["name"].as_str().unwrap_or_default();
    let path = format!("{}/{name}", r.path);
    if state.objects.contains_key(&path) {
        return status(409, "AlreadyExists", &format!("{path} already exists"));
    }
    let object = state.store(&path, r.body.clone());
    ok(StatusCode::CREATED, &object)
}

impl State {
    /// Store `object` at `path` as the server would: with a uid (kept across writes), a new
    /// resourceVersion and fief as its field manager.
    fn store(&mut self, path: &str, mut object: Value) -> Value {
        self.next_uid += 1;
        let uid = self
            .objects
            .get(path)
            .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_string))
            .unwrap_or_else(|| format!("uid-{}", self.next_uid));
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.insert("uid".into(), json!(uid));
            meta.insert("resourceVersion".into(), json!(self.next_uid.to_string()));
            meta.insert(
                "managedFields".into(),
                json!([{"manager": super::FIELD_MANAGER, "operation": "Apply"}]),
            );
        }
        self.objects.insert(path.to_string(), object.clone());
        object
    }
}

/// A strategic merge patch of maps (enough for the ConfigMaps fief merge-patches): keys of
/// `patch` replace those of `object`, maps merge, `null` removes.
fn merge(object: &mut Value, patch: &Value) {
    match (object, patch) {
        (Value::Object(object), Value::Object(patch)) => {
            for (k, v) in patch {
                if v.is_null() {
                    object.remove(k);
                } else {
                    merge(object.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (object, patch) => *object = patch.clone(),
    }
}

fn ok(code: StatusCode, object: &Value) -> Response<Body> {
    response(code.as_u16(), object)
}

fn not_found(path: &str) -> Response<Body> {
    status(404, "NotFound", &format!("{path} not found"))
}

/// A `Status` answer, as the API server sends for errors (and for a DELETE).
fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    let outcome = if code < 400 { "Success" } else { "Failure" };
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": outcome,
        "reason": reason,
        "message": message,
        "code": code,
    });
    response(code, &body)
}

fn response(code: u16, body: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
