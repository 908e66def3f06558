//! The web view's HTML: the minijinja templates (embedded in the binary, autoescaped) and the
//! tenant table's page, from the query string to the HTML.
//!
//! In: a template name and its context; for the table, the rows and the request's query
//! string. Out: HTML text. Every value is escaped by the templates (autoescape is on for every
//! template), so a tenant name, label or error message is shown, never interpreted.

use std::collections::BTreeSet;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use super::table::{Filter, Row, Sort, State, select};

/// The templates: (name, source).
const TEMPLATES: [(&str, &str); 6] = [
    ("base.html", include_str!("templates/base.html")),
    ("overview.html", include_str!("templates/overview.html")),
    ("tenants.html", include_str!("templates/tenants.html")),
    ("tenant.html", include_str!("templates/tenant.html")),
    ("login.html", include_str!("templates/login.html")),
    ("message.html", include_str!("templates/message.html")),
];

/// The templates, parsed once.
pub struct View {
    env: Environment<'static>,
}

impl Default for View {
    fn default() -> Self {
        Self::new()
    }
}

impl View {
    /// Parse the templates (a template that does not parse is reported when it is used).
    pub fn new() -> View {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        for (name, source) in TEMPLATES {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "web view template does not parse");
            }
        }
        View { env }
    }

    /// Render template `name` with `context`.
    pub fn render<S: Serialize>(&self, name: &str, context: S) -> Result<String, minijinja::Error> {
        self.env
            .get_template(name)?
            .render(minijinja::Value::from(minijinja::value::Serde(&context)))
    }
}

/// How long ago Unix time `at` was, seen at `now` (`never` for 0).
pub fn ago(now: i64, at: i64) -> String {
    if at <= 0 {
        return "never".to_string();
    }
    let s = (now - at).max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// Unix time `at` as RFC 3339 (empty for 0).
pub fn rfc3339(at: i64) -> String {
    if at <= 0 {
        return String::new();
    }
    k8s_openapi::jiff::Timestamp::from_second(at)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// The first 12 characters of a commit id.
pub fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}

/// A path segment with everything but unreserved characters percent-encoded.
pub fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// The query string of `params`, leaving out empty values.
fn query(params: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        if !v.is_empty() {
            s.append_pair(k, v);
        }
    }
    s.finish()
}

/// A table request's parameters as given.
#[derive(Debug, Default, Serialize)]
struct Params {
    q: String,
    state: String,
    wave: String,
    cluster: String,
    label: String,
    sort: String,
    page: String,
}

impl Params {
    fn parse(query: &str) -> Params {
        let mut p = Params::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match k.as_ref() {
                "q" => &mut p.q,
                "state" => &mut p.state,
                "wave" => &mut p.wave,
                "cluster" => &mut p.cluster,
                "label" => &mut p.label,
                "sort" => &mut p.sort,
                "page" => &mut p.page,
                _ => continue,
            };
            *slot = v.trim().to_string();
        }
        p
    }

    /// The filter, and a notice for a parameter that cannot be read.
    fn filter(&self) -> (Filter, Option<String>) {
        let mut notice = None;
        let state = match self.state.as_str() {
            "" => None,
            s => {
                let parsed = State::parse(s);
                if parsed.is_none() {
                    notice = Some(format!("unknown state `{s}`: showing every state"));
                }
                parsed
            }
        };
        let label = match self.label.split_once('=') {
            Some((k, v)) => Some((k.trim().to_string(), v.trim().to_string())),
            None if self.label.is_empty() => None,
            None => {
                notice = Some(format!("label filter `{}` is not KEY=VALUE", self.label));
                None
            }
        };
        let some = |s: &String| (!s.is_empty()).then(|| s.clone());
        let filter = Filter {
            q: self.q.clone(),
            state,
            wave: some(&self.wave),
            cluster: some(&self.cluster),
            label,
            sort: Sort::parse(&self.sort),
            page: self.page.parse().unwrap_or(1),
        };
        (filter, notice)
    }

    /// The link to page `page` of the same request.
    fn link(&self, page: usize) -> String {
        let page = page.to_string();
        let q = query(&[
            ("q", &self.q),
            ("state", &self.state),
            ("wave", &self.wave),
            ("cluster", &self.cluster),
            ("label", &self.label),
            ("sort", &self.sort),
            ("page", &page),
        ]);
        format!("/ui/tenants?{q}")
    }
}

/// A row as the table shows it.
#[derive(Debug, Serialize)]
struct RowView<'a> {
    name: &'a str,
    href: String,
    state: &'static str,
    cluster: &'a str,
    wave: Option<&'a str>,
    commit: String,
    ago: String,
    outcome: Option<&'static str>,
    error: Option<&'a str>,
}

/// The table page's context.
#[derive(Debug, Serialize)]
struct TableView<'a> {
    rows: Vec<RowView<'a>>,
    total: usize,
    matched: usize,
    page: usize,
    pages: usize,
    params: Params,
    sort: &'static str,
    states: Vec<&'static str>,
    waves: BTreeSet<&'a str>,
    clusters: BTreeSet<&'a str>,
    sorts: [&'static str; 4],
    prev: Option<String>,
    next: Option<String>,
    notice: Option<String>,
}

/// The HTML of `/ui/tenants?<query>` over `rows`, at Unix time `now`.
pub fn render_table(
    view: &View,
    rows: &[Row<'_>],
    query: &str,
    now: i64,
) -> Result<String, minijinja::Error> {
    let params = Params::parse(query);
    let (filter, notice) = params.filter();
    let page = select(rows, &filter);
    let shown = page
        .rows
        .iter()
        .map(|r| RowView {
            name: &r.name,
            href: format!("/ui/tenants/{}", segment(&r.name)),
            state: r.state.as_str(),
            cluster: &r.cluster,
            wave: r.wave.as_deref(),
            commit: r.commit.as_deref().map(short).unwrap_or_default(),
            ago: ago(now, r.at),
            outcome: r.outcome,
            error: r.error.as_deref(),
        })
        .collect();
    let context = TableView {
        rows: shown,
        total: rows.len(),
        matched: page.matched,
        page: page.page,
        pages: page.pages,
        prev: (page.page > 1).then(|| params.link(page.page - 1)),
        next: (page.page < page.pages).then(|| params.link(page.page + 1)),
        sort: filter.sort.as_str(),
        states: State::ALL.iter().map(|s| s.as_str()).collect(),
        waves: rows.iter().filter_map(|r| r.wave.as_deref()).collect(),
        clusters: rows
            .iter()
            .map(|r| r.cluster.as_ref())
            .filter(|c| !c.is_empty())
            .collect(),
        sorts: ["name", "state", "synced", "wave"],
        params,
        notice,
    };
    view.render("tenants.html", context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn ages_read_in_the_largest_unit() {
        assert_eq!(ago(100, 0), "never");
        assert_eq!(ago(100, 90), "10s ago");
        assert_eq!(ago(10_000, 10_000 - 125), "2m ago");
        assert_eq!(ago(100_000, 100_000 - 7200), "2h ago");
        assert_eq!(ago(1_000_000, 1_000_000 - 3 * 86400), "3d ago");
    }

    #[test]
    fn page_links_keep_the_filters() {
        let p = Params::parse("q=acme&state=failed&label=tier%3Dgold&page=2&x=1");
        assert_eq!(p.label, "tier=gold");
        let (f, notice) = p.filter();
        assert_eq!(f.state, Some(State::Failed));
        assert_eq!(f.label, Some(("tier".into(), "gold".into())));
        assert_eq!(f.page, 2);
        assert!(notice.is_none());
        assert_eq!(
            p.link(3),
            "/ui/tenants?q=acme&state=failed&label=tier%3Dgold&page=3"
        );
        let (_, notice) = Params::parse("state=bogus").filter();
        assert!(notice.is_some_and(|n| n.contains("bogus")));
    }

    #[test]
    fn a_name_is_encoded_as_one_path_segment() {
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        assert_eq!(segment("tenant-00001"), "tenant-00001");
    }
}
