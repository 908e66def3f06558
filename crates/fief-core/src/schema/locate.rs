//! Finding the line of a nested key in a block-style YAML file, for diagnostics.
//!
//! In: a file's text and a path of steps (`spec` → `components` → the item whose `name` is
//! `web` → `values` → `replicsa`). Out: the 1-based line of the deepest step found. A
//! heuristic over lines (no second parse): flow-style maps (`values: {a: 1}`) stop at the line
//! of the enclosing key, which still names the right place. Pure.

/// One step into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a> {
    /// A map key.
    Key(&'a str),
    /// The list item whose `key` is `value` (e.g. `- name: web`).
    ItemWith(&'a str, &'a str),
    /// The n-th (0-based) item of a block-style list.
    Index(usize),
}

/// Column where a line's content starts and the content itself, after any `- ` markers.
fn content(line: &str) -> Option<(usize, usize, &str)> {
    let trimmed = line.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let indent = line.len() - trimmed.len();
    let mut rest = trimmed;
    let mut col = indent;
    while let Some(r) = rest.strip_prefix("- ") {
        let r2 = r.trim_start();
        col += rest.len() - r2.len();
        rest = r2;
    }
    Some((indent, col, rest))
}

/// Whether `text` starts with the map key `key` (plain, single- or double-quoted) and `:`.
fn starts_with_key(text: &str, key: &str) -> Option<usize> {
    for (open, close) in [("", ""), ("\"", "\""), ("'", "'")] {
        let Some(rest) = text.strip_prefix(open) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(key) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(close) else {
            continue;
        };
        let rest_trim = rest.trim_start();
        if rest_trim.starts_with(':')
            && rest_trim[1..]
                .chars()
                .next()
                .is_none_or(char::is_whitespace)
        {
            return Some(text.len() - rest_trim.len() + 1);
        }
    }
    None
}

/// 1-based line of the deepest step of `path` found in `text` (`None` if not even the first).
pub fn line_of_path(text: &str, path: &[Step<'_>]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    // The enclosing block: its first line, the column its children must exceed, and whether
    // it is a list item (a `- ` at its own column then starts the next item, not a child).
    let mut start = 0usize;
    let mut parent_col: Option<usize> = None;
    let mut parent_is_item = false;
    // After an `Index`, the item's first key is on the item's own line (`- name: x`).
    let mut item_line: Option<usize> = None;
    let mut found = None;
    for step in path {
        let mut hit = None;
        let mut dash_indent: Option<usize> = None;
        let mut items_seen = 0usize;
        for (i, line) in lines.iter().enumerate().skip(start) {
            let Some((indent, col, rest)) = content(line) else {
                continue;
            };
            if let Some(p) = parent_col
                && item_line != Some(i)
            {
                let next_item_of_parent_list = !parent_is_item && indent == p && col > indent;
                if indent <= p && !next_item_of_parent_list {
                    break;
                }
            }
            match step {
                Step::Key(k) => {
                    if starts_with_key(rest, k).is_some() {
                        hit = Some((i, col, false));
                        break;
                    }
                }
                Step::ItemWith(k, v) => {
                    if col > indent
                        && let Some(at) = starts_with_key(rest, k)
                    {
                        let value = rest[at..].trim().trim_matches(['"', '\'']);
                        if value == *v {
                            hit = Some((i, indent, true));
                            break;
                        }
                    }
                }
                Step::Index(n) => {
                    if col > indent && item_line != Some(i) {
                        let list = *dash_indent.get_or_insert(indent);
                        if indent == list {
                            if items_seen == *n {
                                hit = Some((i, indent, true));
                                break;
                            }
                            items_seen += 1;
                        }
                    }
                }
            }
        }
        let Some((i, col, is_item)) = hit else {
            break;
        };
        found = Some(i + 1);
        if matches!(step, Step::Index(_)) {
            start = i;
            item_line = Some(i);
        } else {
            start = i + 1;
            item_line = None;
        }
        parent_col = Some(col);
        parent_is_item = is_item;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::Step::*;
    use super::*;

    const TENANT: &str = "\
apiVersion: fief.dev/v1alpha1
kind: Tenant
metadata:
  name: acme
spec:
  components:
  - name: db
    values:
      replicsa: 1
  - name: web
    version: 1.0.0
    values:
      image:
        tag: x
      replicsa: 5
";

    #[test]
    fn finds_a_key_inside_the_right_list_item() {
        let path = [
            Key("spec"),
            Key("components"),
            ItemWith("name", "web"),
            Key("values"),
            Key("replicsa"),
        ];
        assert_eq!(line_of_path(TENANT, &path), Some(15));
        let tag = [
            Key("spec"),
            Key("components"),
            ItemWith("name", "web"),
            Key("values"),
            Key("image"),
            Key("tag"),
        ];
        assert_eq!(line_of_path(TENANT, &tag), Some(14));
    }

    #[test]
    fn stops_at_the_deepest_key_found() {
        let text = "values: {replicsa: 5}\nother: 1\n";
        assert_eq!(
            line_of_path(text, &[Key("values"), Key("replicsa")]),
            Some(1)
        );
        assert_eq!(line_of_path(text, &[Key("nothing")]), None);
    }

    #[test]
    fn finds_keys_inside_the_nth_item_of_a_list() {
        let text = "\
spec:
  containers:
  - name: a
    image: x
  - name: b
    image: y
    ports:
    - containerPort: 80
    - containerPort: 81
      protocl: TCP
";
        let at = |path: &[Step<'_>]| line_of_path(text, path);
        assert_eq!(
            at(&[Key("spec"), Key("containers"), Index(0), Key("name")]),
            Some(3)
        );
        assert_eq!(
            at(&[Key("spec"), Key("containers"), Index(1), Key("image")]),
            Some(6)
        );
        assert_eq!(
            at(&[
                Key("spec"),
                Key("containers"),
                Index(1),
                Key("ports"),
                Index(1),
                Key("protocl")
            ]),
            Some(10)
        );
        // A key the item does not have stops at the item's line.
        assert_eq!(
            at(&[Key("spec"), Key("containers"), Index(0), Key("ports")]),
            Some(3)
        );
        assert_eq!(at(&[Key("spec"), Key("containers"), Index(5)]), Some(2));
    }

    #[test]
    fn does_not_leave_the_enclosing_block() {
        let text = "a:\n  x: 1\nb:\n  y: 2\n";
        assert_eq!(line_of_path(text, &[Key("a"), Key("y")]), Some(1));
        assert_eq!(line_of_path(text, &[Key("b"), Key("y")]), Some(4));
    }
}
