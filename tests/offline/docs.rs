//! The book in `docs/` and the README: the book builds with the pinned mdbook without a
//! warning, every relative link (and `#anchor`) in the book, the README and deploy/README.md
//! points at a file and a heading that exist, every page of the book is in its SUMMARY.md, and
//! the README stays short and keeps its two set-up commands.
//!
//! The mdbook binary comes from `FIEF_MDBOOK_BIN` (`tools/build-mdbook.sh` builds the pinned
//! version and prints its path; `tools/test.sh` sets it). Without it the build test fails with
//! what to run; it never skips.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every `.md` file under `dir`, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display()));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The files whose links are checked: the book's pages, the README and deploy/README.md.
fn checked_files() -> Vec<PathBuf> {
    let mut files = markdown_files(&root().join("docs/src"));
    files.push(root().join("README.md"));
    files.push(root().join("deploy/README.md"));
    files
}

/// The lines of `text` outside fenced code blocks, with their 1-based line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` with inline code spans (`` `...` ``) blanked out, so code is never read as a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for ch in line.chars() {
        if ch == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { ch });
        }
    }
    out
}

/// The targets of the inline links `[text](target)` in `line` (titles dropped).
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &after[end..];
    }
    out
}

/// The anchor GitHub and mdBook give a heading: lowercase; whitespace becomes `-`; letters,
/// digits, `-` and `_` stay; everything else is dropped.
fn slug(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().collect::<String>())
            } else if c.is_whitespace() {
                Some("-".to_string())
            } else {
                None
            }
        })
        .collect()
}

/// A heading's visible text: links reduced to their text, code and emphasis marks removed.
fn heading_text(raw: &str) -> String {
    let mut text = String::new();
    let mut rest = raw;
    // `[text](url)` -> `text`
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.replace(['`', '*'], "")
}

/// Every anchor the headings of `text` produce (a repeated heading gets `-1`, `-2`, ...; a
/// heading ending in `{#id}` gets that id).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let raw = line[hashes..].trim().trim_end_matches('#').trim();
        if let Some(start) = raw.rfind("{#")
            && raw.ends_with('}')
        {
            out.insert(raw[start + 2..raw.len() - 1].to_string());
            continue;
        }
        let base = slug(&heading_text(raw));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `base.join(relative)` with `.` and `..` resolved lexically.
fn resolve(base: &Path, relative: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(relative).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn the_book_builds_with_the_pinned_mdbook_without_a_warning() {
    let Some(mdbook) = std::env::var_os("FIEF_MDBOOK_BIN") else {
        panic!(
            "FIEF_MDBOOK_BIN is not set: it names the pinned mdbook binary. Run \
             `FIEF_MDBOOK_BIN=\"$(tools/build-mdbook.sh)\" cargo test --test offline docs::` \
             (tools/test.sh sets it)"
        );
    };
    let out_dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(&mdbook)
        .arg("build")
        .arg(root().join("docs"))
        .arg("-d")
        .arg(out_dir.path())
        .env_remove("RUST_LOG")
        .env_remove("MDBOOK_LOG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", PathBuf::from(&mdbook).display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "mdbook build docs failed ({}):\n{text}",
        output.status
    );
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(
        problems.is_empty(),
        "mdbook build docs warned:\n{}\n\nfull output:\n{text}",
        problems.join("\n")
    );
    for page in ["index.html", "introduction.html", "operations/install.html"] {
        assert!(
            out_dir.path().join(page).is_file(),
            "the built book has no {page}:\n{text}"
        );
    }
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in checked_files() {
        let text = read(&file);
        let dir = file.parent().expect("a file has a folder");
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let at = format!("{}:{number}: `{target}`", shown(&file));
                let destination = if path.is_empty() {
                    file.clone()
                } else {
                    resolve(dir, path)
                };
                if !destination.exists() {
                    broken.push(format!("{at}: {} does not exist", shown(&destination)));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if destination.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&destination)).contains(anchor)
                {
                    broken.push(format!(
                        "{at}: no heading in {} gives the anchor #{anchor} (it has: {})",
                        shown(&destination),
                        anchors(&read(&destination))
                            .into_iter()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "only {checked} relative links found: is the parser broken?"
    );
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = root().join("docs/src");
    let summary = read(&src.join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = prose_lines(&summary)
        .into_iter()
        .flat_map(|(_, line)| link_targets(line))
        .filter(|t| !t.is_empty())
        .map(|t| resolve(&src, t.split('#').next().unwrap_or_default()))
        .collect();
    let missing: Vec<String> = markdown_files(&src)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "SUMMARY.md"))
        .filter(|f| !listed.contains(f))
        .map(|f| shown(&f))
        .collect();
    assert!(
        missing.is_empty(),
        "pages of docs/src not listed in docs/src/SUMMARY.md (mdbook would not build them):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_readme_is_short_and_keeps_its_two_setup_commands() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; keep it to 200 and move detail into the book (docs/src)"
    );
    for command in [
        "cargo run --release -- render examples/tenants-repo",
        "tools/test.sh",
    ] {
        assert!(
            readme.lines().any(|l| l.trim() == command),
            "README.md no longer has the set-up command `{command}` on a line of its own"
        );
    }
}

#[test]
fn the_link_checker_reads_headings_and_links_as_mdbook_does() {
    let text = "# The agent's rights\n```sh\n# not a heading\n```\n## 4. Credentials\n## Values\n## Values\n## `fief status` [day 2](x.md)\n";
    let found = anchors(text);
    for want in [
        "the-agents-rights",
        "4-credentials",
        "values",
        "values-1",
        "fief-status-day-2",
    ] {
        assert!(found.contains(want), "{want} not in {found:?}");
    }
    assert!(!found.contains("not-a-heading"));
    assert_eq!(
        link_targets("see [a](a.md#x) and `[b](not-a-link)` and [c](c.md \"title\")"),
        ["a.md#x", "c.md"]
    );
}
