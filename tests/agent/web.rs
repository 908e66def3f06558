//! The agent's read-only web view (`fief agent --web`), against the real control plane: an
//! agent holding 1,000 tenants, one of them failing to render, browsed in headless Chromium
//! (its DOM checked, screenshots kept under target/web-screenshots/), and the same pages over
//! plain HTTP for what a browser does not show: the token, 404s, and that no Secret value is
//! ever served.

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::agent::{Agent, GitServer, fief_apply, small_repo};
use common::browser::Chromium;
use common::synth::{FAILING_TEMPLATE, LIGHT_SECRET, light_failing, light_repo};
use common::util::{http_response, wait_until};

const TENANTS: usize = 1000;
const FAILING: usize = 500;

fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/web-screenshots")
}

/// GET `path` from the agent, timed; (status, body, elapsed).
fn timed_get(agent: &Agent, path: &str) -> (u16, String, Duration) {
    let start = Instant::now();
    let (code, body) = agent.get(path).expect("the agent answers");
    (code, body, start.elapsed())
}

#[test]
fn an_agent_of_1000_tenants_is_browsable_and_names_the_failing_template_and_line() {
    let chromium = Chromium::find();
    let agent_ns = common::unique("fief-web");
    let prefix = common::unique("wv");
    let good = light_repo(&agent_ns, &prefix, TENANTS);
    let dir = tempfile::tempdir().unwrap();
    common::synth::write_files(dir.path(), &good).unwrap();
    let cold = Instant::now();
    fief_apply(dir.path());
    eprintln!("cold fief apply of {TENANTS} tenants: {:?}", cold.elapsed());

    // The agent starts on a commit where one tenant's template fails.
    let server = GitServer::new(&good);
    server.commit(&light_failing(&prefix, FAILING), "one tenant breaks");
    let agent = Agent::spawn(&server.url(), &["--interval", "300s", "--web"], &[]);
    agent.wait_ready(Duration::from_secs(300));
    let failing = format!("{prefix}-{FAILING:04}");
    let healthy = format!("{prefix}-0001");
    wait_until(
        "the failing tenant's sync recorded",
        Duration::from_secs(60),
        || {
            agent
                .get(&format!("/ui/tenants/{failing}"))
                .is_some_and(|(_, body)| body.contains("badge s-failed"))
        },
    );

    // Over plain HTTP: each page answers, quickly, with what the browser will show.
    let (code, overview, took) = timed_get(&agent, "/ui/");
    assert_eq!(code, 200, "{overview}");
    eprintln!("overview: {took:?}");
    let (code, table, took) = timed_get(&agent, "/ui/tenants?state=failed");
    assert_eq!(code, 200, "{table}");
    eprintln!("table: {took:?}");
    let (code, page, took) = timed_get(&agent, &format!("/ui/tenants/{failing}"));
    assert_eq!(code, 200, "{page}");
    eprintln!("tenant page: {took:?}");

    let base = format!("http://127.0.0.1:{}", agent.port);
    the_overview_counts_the_fleet(&chromium, &base, &failing, &server);
    the_tenant_table_filters_and_searches(&chromium, &base, &failing, &prefix);
    tenant_pages_name_the_error_and_the_objects(&chromium, &base, &failing, &healthy);
    no_secret_value_is_served_and_the_view_is_read_only(&agent, &prefix, &failing, &healthy);
}

/// The overview page counts one failed tenant and every other one ready, names the failing
/// tenant, fief.yaml's waves with their tenants, and the fetched commit.
fn the_overview_counts_the_fleet(
    chromium: &Chromium,
    base: &str,
    failing: &str,
    server: &GitServer,
) {
    let dom = chromium.dump_dom(&format!("{base}/ui/"));
    assert!(
        dom.contains(r#"<span class="badge s-failed">failed</span><span class="n">1</span>"#),
        "one failed tenant counted:\n{dom}"
    );
    assert!(
        dom.contains(&format!(
            r#"<span class="badge s-ready">ready</span><span class="n">{}</span>"#,
            TENANTS - 1
        )),
        "every other tenant ready:\n{dom}"
    );
    assert!(
        dom.contains(failing),
        "the failing tenant needs attention:\n{dom}"
    );
    assert!(
        dom.contains(r#"<a href="/ui/tenants?wave=canary">canary</a></td><td class="num">5</td>"#),
        "fief.yaml's waves with their tenants:\n{dom}"
    );
    let commit = common::util::git(&server.repo(), &["rev-parse", "HEAD"]);
    assert!(dom.contains(commit.trim()), "the fetched commit:\n{dom}");
    chromium.screenshot(&format!("{base}/ui/"), &screenshots().join("overview.png"));
}

/// The tenant table filters by state, and searches by name and label (with the wave column).
fn the_tenant_table_filters_and_searches(
    chromium: &Chromium,
    base: &str,
    failing: &str,
    prefix: &str,
) {
    let url = format!("{base}/ui/tenants?state=failed");
    let dom = chromium.dump_dom(&url);
    assert!(
        dom.contains(&format!("<strong>1</strong> of {TENANTS} tenants match")),
        "{dom}"
    );
    assert!(dom.contains(&format!(r#"<a href="/ui/tenants/{failing}">{failing}</a>"#)));
    chromium.screenshot(&url, &screenshots().join("tenants-failed.png"));
    let url = format!("{base}/ui/tenants?q={prefix}-00&label=tier%3Dgold&sort=name");
    let dom = chromium.dump_dom(&url);
    assert!(
        dom.contains("<strong>50</strong> of 1000 tenants match"),
        "{dom}"
    );
    assert!(
        dom.contains(r#"<td>canary</td>"#),
        "the wave column:\n{dom}"
    );
    chromium.screenshot(&url, &screenshots().join("tenants-search.png"));
}

/// The failing tenant's page names the render error at its file and line, and its
/// namespace; a healthy tenant's page lists its objects.
fn tenant_pages_name_the_error_and_the_objects(
    chromium: &Chromium,
    base: &str,
    failing: &str,
    healthy: &str,
) {
    let url = format!("{base}/ui/tenants/{failing}");
    let dom = chromium.dump_dom(&url);
    let (file, line) = FAILING_TEMPLATE;
    assert!(
        dom.contains(&format!(
            r#"<td class="mono">{file}</td><td class="num">{line}</td>"#
        )),
        "the render error at its file and line:\n{dom}"
    );
    assert!(
        dom.contains(&format!("{file}:{line}")),
        "the last sync's error carries file:line:\n{dom}"
    );
    assert!(
        dom.contains(&format!("{failing}-prod")),
        "its namespace:\n{dom}"
    );
    chromium.screenshot(&url, &screenshots().join("tenant-failing.png"));

    let url = format!("{base}/ui/tenants/{healthy}");
    let dom = chromium.dump_dom(&url);
    for want in [
        "<td>Secret</td>",
        "app-db",
        "2.1.0",
        "verified",
        "fief-tenant",
    ] {
        assert!(
            dom.contains(want),
            "{want} on a healthy tenant's page:\n{dom}"
        );
    }
    chromium.screenshot(&url, &screenshots().join("tenant-healthy.png"));
}

/// No Secret value on any page; unknown tenants and pages are 404; read only.
fn no_secret_value_is_served_and_the_view_is_read_only(
    agent: &Agent,
    prefix: &str,
    failing: &str,
    healthy: &str,
) {
    // No Secret value on any page; unknown tenants and pages are 404; read only.
    for path in [
        "/ui/".to_string(),
        format!("/ui/tenants?q={prefix}"),
        format!("/ui/tenants/{healthy}"),
        format!("/ui/tenants/{failing}"),
    ] {
        let (code, body) = agent.get(&path).unwrap();
        assert_eq!(code, 200);
        assert!(!body.contains(LIGHT_SECRET), "{path} shows a Secret value");
        assert!(
            !body.contains("cHctbmV2ZXI"),
            "{path} shows a Secret value (base64)"
        );
    }
    let (code, body) = agent.get("/ui/tenants/no-such-tenant").unwrap();
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("No such tenant"));
    assert_eq!(agent.get("/ui/nothing-here").unwrap().0, 404);
    assert_eq!(agent.request("POST", "/ui/", &[], "").unwrap().0, 405);
    assert_eq!(agent.get("/ui").unwrap().0, 308);
    // The agent's root leads a browser to the view.
    assert_eq!(agent.get("/").unwrap().0, 307);
}

#[test]
fn a_web_token_is_required_as_bearer_or_login_cookie_and_never_logged() {
    let agent_ns = common::unique("fief-webt");
    let t = common::unique("wt");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    let token = "web-t0ken-Zq81";
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let agent = Agent::start(
        &server.url(),
        &[
            "--interval",
            "300s",
            "--web",
            "--web-token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let addr = ("127.0.0.1", agent.port);
    let get = |headers: &[(&str, String)]| {
        http_response(addr, "GET", &format!("/ui/tenants/{t}"), headers, "").unwrap()
    };
    let (code, _, body) = get(&[]);
    assert_eq!(code, 401);
    assert!(
        body.contains(r#"<form method="post" action="/ui/login">"#),
        "{body}"
    );
    assert_eq!(get(&[("Authorization", "Bearer wrong".into())]).0, 401);
    let (code, _, body) = get(&[("Authorization", format!("Bearer {token}"))]);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(&t));

    let form = [(
        "Content-Type",
        "application/x-www-form-urlencoded".to_string(),
    )];
    let (code, _, _) = http_response(addr, "POST", "/ui/login", &form, "token=nope").unwrap();
    assert_eq!(code, 401);
    let (code, head, _) =
        http_response(addr, "POST", "/ui/login", &form, &format!("token={token}")).unwrap();
    assert_eq!(code, 303, "{head}");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("a session cookie: {head}"))
        .to_string();
    assert!(!cookie.contains(token), "the cookie is not the token");
    assert_eq!(get(&[("Cookie", cookie)]).0, 200);
    assert_eq!(
        agent.get("/healthz").unwrap().0,
        200,
        "the rest needs no token"
    );
    assert!(!agent.log().contains(token), "the token is never logged");
}

#[test]
fn the_web_view_is_off_unless_asked_for() {
    let agent_ns = common::unique("fief-webo");
    let t = common::unique("wo");
    let server = GitServer::new(&small_repo(&agent_ns, &[(&t, "hi")]));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);
    assert_eq!(agent.get("/ui/").unwrap().0, 404);
    assert_eq!(agent.get(&format!("/ui/tenants/{t}")).unwrap().0, 404);
}
