//! The web view's handlers: access check, then the page.
//!
//! In: HTTP requests under `/ui/`. Out: HTML with headers that keep it from being framed,
//! cached or sniffed, and a Content-Security-Policy allowing no script and no request
//! elsewhere; 401 (with the login form) without the token when one is required, 404 for an
//! unknown tenant or page, 303 after a login.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::Web;
use crate::Shared;

/// The headers of every page.
fn html(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    let h = r.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    r
}

/// A page with a title and a message (errors, 404).
fn message(web: &Web, status: StatusCode, title: &str, text: &str) -> Response {
    #[derive(Serialize)]
    struct Ctx<'a> {
        title: &'a str,
        text: &'a str,
    }
    let body = web
        .view
        .render("message.html", Ctx { title, text })
        .unwrap_or_else(|_| text.to_string());
    html(status, body)
}

/// Render `template` with `context`, or a 500 page saying why it could not be.
fn page<S: Serialize>(web: &Web, template: &str, context: S) -> Response {
    match web.view.render(template, context) {
        Ok(body) => html(StatusCode::OK, body),
        Err(e) => {
            tracing::error!(template, error = %e, "web view page failed");
            message(
                web,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                "this page could not be rendered; the agent's log says why",
            )
        }
    }
}

/// The view, when the request may see it; else the answer to send.
fn guard<'a>(shared: &'a Shared, headers: &HeaderMap) -> Result<&'a Web, Box<Response>> {
    let Some(web) = shared.report.web() else {
        return Err(Box::new(StatusCode::NOT_FOUND.into_response()));
    };
    if web.access.allows(headers) {
        return Ok(web);
    }
    let mut r = login_page(web, false);
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"fief\""),
    );
    Err(Box::new(r))
}

fn login_page(web: &Web, failed: bool) -> Response {
    #[derive(Serialize)]
    struct Ctx {
        failed: bool,
    }
    page(web, "login.html", Ctx { failed })
}

/// `/ui` → `/ui/`.
pub(super) async fn to_overview() -> Response {
    (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, "/ui/")]).into_response()
}

/// `/` → `/ui/` while the view is on: a temporary redirect, since `/` is the agent's and the
/// view may be turned off.
pub(super) async fn root_to_overview() -> Response {
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, "/ui/")]).into_response()
}

/// `GET /ui/`.
pub(super) async fn overview(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let web = match guard(&shared, &headers) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    let context = super::overview::view(&shared, web);
    page(web, "overview.html", context)
}

/// `GET /ui/tenants?...`.
pub(super) async fn tenants(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let web = match guard(&shared, &headers) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    let held = super::fleet::Held::gather(&shared, web);
    let rows = held.rows();
    let now = crate::metrics::unix_now();
    match super::render_table(&web.view, &rows, uri.query().unwrap_or(""), now) {
        Ok(body) => html(StatusCode::OK, body),
        Err(e) => {
            tracing::error!(error = %e, "web view table failed");
            message(
                web,
                StatusCode::INTERNAL_SERVER_ERROR,
                "Error",
                "the table could not be rendered; the agent's log says why",
            )
        }
    }
}

/// `GET /ui/tenants/{name}`.
pub(super) async fn tenant(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let web = match guard(&shared, &headers) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    let (rev, row) = {
        let held = super::fleet::Held::gather(&shared, web);
        let row = held.one(&name).map(super::table::Row::into_owned);
        (held.rev.clone(), row)
    };
    let Some(row) = row else {
        return message(
            web,
            StatusCode::NOT_FOUND,
            "No such tenant",
            &format!(
                "the fetched revision has no tenant `{name}`, and no orphaned inventory of that name is known"
            ),
        );
    };
    let context = super::tenant::view(&shared, web, row, rev).await;
    page(web, "tenant.html", context)
}

/// `GET /ui/{anything else}`.
pub(super) async fn not_found(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match guard(&shared, &headers) {
        Ok(web) => message(web, StatusCode::NOT_FOUND, "Not found", "no such page"),
        Err(r) => *r,
    }
}

/// `GET /ui/login`.
pub(super) async fn login_form(State(shared): State<Arc<Shared>>) -> Response {
    match shared.report.web() {
        Some(web) => login_page(web, false),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `POST /ui/login` (form field `token`): a session cookie and the overview, or the form again.
pub(super) async fn login(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let Some(web) = shared.report.web() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if !web.access.required() {
        return to_overview_after_login(None);
    }
    let given = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    match web.access.login(&given) {
        Some(cookie) => to_overview_after_login(Some(cookie)),
        None => {
            tracing::warn!("web view login with a wrong token refused");
            let mut r = login_page(web, true);
            *r.status_mut() = StatusCode::UNAUTHORIZED;
            r
        }
    }
}

fn to_overview_after_login(cookie: Option<String>) -> Response {
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/ui/")]).into_response();
    if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(header::SET_COOKIE, value);
    }
    r
}
