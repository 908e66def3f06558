//! The metric names a PromQL expression reads: a small tokenizer that skips label matchers,
//! strings, ranges, numbers and durations, function and aggregation names, keywords and the
//! label lists of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right`.
//!
//! In: an expression (Grafana variables already replaced). Out: the names of the selectors in
//! it. `promtool check rules` checks the same expressions' syntax; this only has to find the
//! names in valid PromQL.

use std::collections::BTreeSet;

/// Words that are never metric names.
const KEYWORDS: [&str; 10] = [
    "and", "or", "unless", "bool", "offset", "inf", "nan", "atan2", "start", "end",
];

/// Aggregations: they may be followed by `by (...)` rather than `(`.
const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// Keywords followed by a parenthesised list of label names.
const LABEL_LISTS: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The index just past the closing `close` of the group opened at `start`, quotes respected.
fn skip_group(chars: &[char], start: usize, close: char) -> usize {
    let mut i = start + 1;
    while i < chars.len() && chars[i] != close {
        i = if matches!(chars[i], '"' | '\'' | '`') {
            skip_string(chars, i)
        } else {
            i + 1
        };
    }
    i + 1
}

/// The index just past the string opened at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' && quote != '`' {
            2
        } else {
            1
        };
    }
    i + 1
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The metric names `expr` selects.
pub fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut label_list_next = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '"' | '\'' | '`') {
            i = skip_string(&chars, i);
        } else if c == '{' {
            i = skip_group(&chars, i, '}');
        } else if c == '[' {
            i = skip_group(&chars, i, ']');
        } else if c == '(' && label_list_next {
            i = skip_group(&chars, i, ')');
            label_list_next = false;
        } else if c.is_ascii_digit() || c == '.' {
            // A number or a duration (`5m`, `1.5e3`, `0x1f`).
            while i < chars.len() && (is_word(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if LABEL_LISTS.contains(&word.as_str()) {
                label_list_next = next == Some(&'(');
            } else if !(KEYWORDS.contains(&word.as_str())
                || AGGREGATIONS.contains(&word.as_str())
                || next == Some(&'('))
            {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_tokenizer_finds_metric_names_and_skips_functions_labels_and_keywords() {
    let names = |e: &str| -> Vec<String> { metric_names(e).into_iter().collect() };
    assert_eq!(
        names(
            r#"histogram_quantile(0.95, sum by (le) (rate(a_bucket{namespace="x",le="+Inf"}[5m])))"#
        ),
        ["a_bucket"]
    );
    assert_eq!(
        names(
            r#"sum by (namespace) (increase(b_total{result="failure"}[10m])) > 0 unless sum(c) without (pod) > 0"#
        ),
        ["b_total", "c"]
    );
    assert_eq!(
        names("absent(up{job=\"a}b\"}) or vector(0)"),
        ["up"],
        "a brace in a string"
    );
    assert_eq!(
        names("time() - max(d) offset 5m > 1e3 and on (x) group_left (y) e"),
        ["d", "e"]
    );
    assert_eq!(names("count(f == 0) or vector(0)"), ["f"]);
    assert_eq!(
        names("rule:recorded:rate5m > bool 1"),
        ["rule:recorded:rate5m"]
    );
}
