//! Tests of splitting streams and parsing documents (bounds, aliases, lines).

use super::*;
use serde_json::json;

fn value(text: &str) -> Result<Option<Value>, YamlError> {
    parse_value(&split_documents(text)[0])
}

#[test]
fn a_document_on_its_separator_line_is_kept() {
    let text = "a: 1\n--- {b: 2}\n--- # note\nc: 3\n---   d: 4\n";
    let docs = split_documents(text);
    let values: Vec<Value> = docs
        .iter()
        .map(|d| parse_value(d).unwrap().unwrap())
        .collect();
    assert_eq!(
        values,
        [
            json!({"a": 1}),
            json!({"b": 2}),
            json!({"c": 3}),
            json!({"d": 4})
        ]
    );
    assert_eq!(docs[1].first_line, 2);
    let docs = split_documents("a: 1\n--- apiVersion: v1\nkind: ConfigMap\n");
    assert_eq!(docs.len(), 2);
    let err = parse_value(&docs[1]).unwrap_err();
    assert!(err.message.contains("move it to the next line"), "{err:?}");
    assert!(matches!(err.line, Some(2 | 3)), "{err:?}");
}

#[test]
fn parse_value_matches_the_serde_path_on_the_example_render() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: b}\ndata:\n  k: |\n    line1\n    line2\nlist:\n- 1\n- [2, 3]\n";
    let docs = split_documents(text);
    assert_eq!(
        parse_value(&docs[0]).unwrap(),
        parse::<Value>(&docs[0]).unwrap()
    );
}

#[test]
fn parse_value_expands_aliases_and_merge_keys() {
    let v = value("base: &b {x: 1, y: 2}\nthing:\n  <<: *b\n  y: 3\n")
        .unwrap()
        .unwrap();
    assert_eq!(v["thing"], json!({"x": 1, "y": 3}));
}

#[test]
fn parse_value_refuses_duplicates_depth_and_bombs() {
    let err = value("a: 1\nb: 2\na: 3\n").unwrap_err();
    assert!(err.message.contains("duplicate key `a`"), "{err:?}");
    assert_eq!(err.line, Some(3));
    assert!(value(&format!("{}1{}", "[".repeat(100), "]".repeat(100))).is_err());
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let start = std::time::Instant::now();
    assert!(value(&bomb).unwrap_err().message.contains("nodes"));
    // Refused by the node bound; the limit is generous so a loaded machine cannot fail it.
    assert!(start.elapsed().as_secs() < 60);
}

#[test]
fn split_keeps_line_numbers_and_drops_empty_documents() {
    let text = "a: 1\n---\n# only a comment\n---\n\nb: 2\n--- \nc: 3\n";
    let docs = split_documents(text);
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0].first_line, 1);
    assert_eq!(docs[1].first_line, 5);
    assert_eq!(docs[2].first_line, 8);
}

#[test]
fn parse_error_reports_absolute_line() {
    let text = "a: 1\n---\nb: 2\nc: [unclosed\n";
    let docs = split_documents(text);
    let err = parse::<Value>(&docs[1]).unwrap_err();
    assert!(err.line.unwrap() >= 3, "{err:?}");
}

#[test]
fn alias_bomb_is_refused_quickly() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let start = std::time::Instant::now();
    let docs = split_documents(&text);
    assert!(parse::<Value>(&docs[0]).is_err());
    // Refused by the node bound, not a clock: unbounded, 10^12 nodes would take hours, so a
    // generous limit keeps a loaded machine from failing this.
    assert!(start.elapsed().as_secs() < 60);
}

#[test]
fn duplicate_keys_are_an_error() {
    let docs = split_documents("a: 1\na: 2\n");
    assert!(parse::<Value>(&docs[0]).is_err());
}
