//! Differential tests: whenever the fast path answers, the full event parser gives the same
//! value; and the fast path does answer for the block YAML templates produce.

use serde_json::{Value, json};

use super::super::{parse_value_full, split_documents};
use super::parse;

/// Every document of `text`: the fast answer (if any) equals the full parser's. Returns how
/// many documents the fast path answered.
fn same(text: &str) -> usize {
    let mut answered = 0;
    for doc in split_documents(text) {
        if let Some(fast) = parse(doc.text) {
            answered += 1;
            let full = parse_value_full(&doc);
            assert_eq!(
                full,
                Ok(Some(fast.clone())),
                "fast path differs from the full parser on:\n{}",
                doc.text
            );
        }
    }
    answered
}

fn fast(text: &str) -> Option<Value> {
    let v = parse(text);
    same(text);
    v
}

#[test]
fn template_shaped_documents_take_the_fast_path_with_identical_values() {
    let text = r#"apiVersion: apps/v1
kind: Deployment   # trailing comment
metadata:
  name: web
  labels: {app: web, "fief.dev/tenant": acme, 'q''s': x}
  annotations:
    note: it's here, isn't it
    url: http://example.com/a#b
    empty: ''
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: "registry.example/web:1.0.0"
          ports: [{containerPort: 8080}, {containerPort: 9090, name: metrics}]
          args:
          - --flag
          - -v
          - ""
          env:
            -   name: A
                value: "yes"
            - name: B
              value:
          resources: {}
      volumes: []
"#;
    let v = fast(text).expect("template-shaped YAML takes the fast path");
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["--flag", "-v", ""])
    );
    assert_eq!(v["metadata"]["labels"]["q's"], json!("x"));
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"],
        Value::Null
    );
}

#[test]
fn scalars_resolve_as_the_full_reader_resolves_them() {
    let text = "a: yes\nb: No\nc: on\nd: y\ne: 0644\nf: 08\ng: 1_000\nh: 0x1F\ni: 0b11\nj: 1e3\nk: .5\nl: .inf\nm: ~\nn: null\no: -9223372036854775808\np: 9223372036854775807\nq: 18446744073709551616\nr: 2024-01-01\ns: 08:00\nt: '0644'\nu: \"on\"\nv: +1\nw: -0\nx: 1.\ny: [yes, 0644, ~, '', \"\", -1, +.5]\nz: {on: off, y: n, 1: 2, ~: x}\nnull: 1\n~: 2\non: 3\n'<<': 4\n\"yy\": 5\n";
    let v = fast(text).expect("plain scalars take the fast path");
    assert_eq!(v["o"], json!(i64::MIN));
    assert_eq!(v["<<"], json!(4));
}

#[test]
fn unusual_documents_are_left_to_the_full_parser() {
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "base: {x: 1}\nm:\n  <<: {y: 2}\n",
        "a: |\n  text\n",
        "a: >-\n  folded\n",
        "a: multi\n  line\n",
        "a: \"open\n  quote\"\n",
        "a: 'open\n  quote'\n",
        "a: [1,\n  2]\n",
        "a: [1, 2, ]\n",
        "? complex\n: value\n",
        "a:\tb\n",
        "a: café\n",
        "a: 1\r\nb: 2\r\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\na: 2\n",
        "a: b: c\n",
        "- a\n - b\n",
        "a:\n  b: 1\n c: 2\n",
        "just a scalar\n",
        "a:\n  plain\n",
        "{a: 1}\n",
        "a: {b}\n",
        "a: [b: c]\n",
        "a: 'x' y\n",
        "a: \"x\"#c\n",
        "a: - b\n",
        "a: @x\n",
        "a: `x\n",
        "a: %x\n",
        "a: [x] y\n",
        "a: {b: 1, b: 2}\n",
    ] {
        assert_eq!(parse(text), None, "the fast path should decline:\n{text}");
        same(text);
    }
}

#[test]
fn tricky_corpus_matches_the_full_parser() {
    let corpus = [
        "a: 1\n# comment\n  # indented comment\n\nb:\n- 1\n-\n- - x\n  - y\n- a: 1\n  b: [2]\nc: 3\n",
        "'<<': {a: 1}\nb: 2\n",
        "'<<': {a: 1}\n\"<<\": 2\n",
        "key with spaces: value with  two  spaces\n",
        "a: b:c\nd: e :f\ng: h#i\nj: k # l: m\n",
        "a: ---\nb: ...\nc: -x\nd: ?x\ne: :x\n",
        "a: [a:b, 'c': d]\n",
        "a: {'k': v, \"k2\": \"v2\", k3: [1, {x: y}]}\n",
        "a: {k: v}   # c\nb: [ 1 ,2 ]\n",
        "a: [-1, -.5, +2]\n",
        "   a: 1\n   b: 2\n",
        "a:\n    - 1\n    - 2\nb:\n - 3\n",
        "a:\n  -\n    b: 1\n  -\n  - c\n",
        "a: ''''\nb: 'a''b'\n",
        "a: \"'\"\nb: '\"'\n",
        "a: [\"a, b\", 'c]']\n",
        "a: {b: '}'}\n",
        "- 1\n- two\n",
        "a:\n",
        "a: x\n...x: 1\n",
        "a: x # c\n---b: 1\n",
        "a: [[], {}, [[]]]\n",
        "a: { }\nb: [ ]\n",
        "a: 1.0e+3\nb: 1E3\nc: 0o17\nd: 0xFF_FF\ne: 1__0\nf: _1\ng: 1_\n",
        "a: .NaN\nb: -.Inf\nc: Yes\nd: TRUE\ne: tRue\n",
    ];
    for text in corpus {
        same(text);
    }
    assert!(same(corpus[0]) == 1 && same(corpus[1]) == 1 && same(corpus[4]) == 1);
}

/// A small deterministic generator (an LCG), so the generated corpus is the same every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len())]
    }
}

const KEYS: &[&str] = &[
    "a", "name", "y", "on", "null", "~", "0644", "'<<'", "\"<<\"", "'a b'", "\"q\"", "a:b", "a b",
    "-k", "k-", "x.y/z", "1", "true", "'it''s'",
];
const SCALARS: &[&str] = &[
    "1",
    "-1",
    "0644",
    "08",
    "1_000",
    "1e3",
    ".5",
    ".inf",
    "-.Inf",
    ".nan",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "~",
    "null",
    "true",
    "''",
    "\"\"",
    "'x y'",
    "\"a: b\"",
    "'#'",
    "a#b",
    "a #c",
    "http://x/y",
    "-x",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "2024-01-01",
    "[]",
    "{}",
    "[a, b]",
    "{a: 1, b: [2, 3]}",
    "[{a: b}, {c: [d, {e: f}]}]",
    "a, b",
    "[a]b",
    "{'k': 'v'}",
    "' '",
    "\"a\\\"b\"",
    "\"\\u00e9\\x41\\t\\n\\\\\\/\"",
    "\"\\N\\_\\L\\P\\e\\0\"",
    "\"\\U0001F600\"",
    "{\"a\":1,\"b\":\"c\"}",
    "{\"a\":{\"b\":[1,\"x\"]}}",
    "{\"a\" :1}",
    "{'a':b}",
];
/// Forms the fast path declines or the full parser refuses, mixed in now and then.
const ODD: &[&str] = &[
    "x:",
    "x: y",
    "[a, ]",
    "{a}",
    "'open",
    "\"x\\ty",
    "& a",
    "*a",
    "!x y",
    "|",
    "? x",
    "- x",
    "@x",
    "\"\\ud800\"",
    "\"\\q\"",
    "\"\\u12\"",
    "\"a\\\"",
    "{\"a\":}",
    "[\"a\":1]",
    "{a:1}",
    "`x",
    "%x",
    "[x] y",
    "'x' y",
];

fn scalar(r: &mut Lcg) -> &'static str {
    if r.next(8) == 0 {
        r.pick(ODD)
    } else {
        r.pick(SCALARS)
    }
}

fn gen_node(r: &mut Lcg, out: &mut String, indent: usize, depth: usize) {
    let pad = " ".repeat(indent);
    let entries = 1 + r.next(4);
    let seq = r.next(3) == 0;
    for _ in 0..entries {
        if r.next(8) == 0 {
            out.push_str(&format!("{pad}# comment: {}\n", scalar(r)));
        }
        let lead = if seq {
            format!("{pad}-{}", [" ", "  ", " "][r.next(3)])
        } else {
            format!("{pad}{}:", r.pick(KEYS))
        };
        let choice = if depth > 3 { 0 } else { r.next(4) };
        match choice {
            0 | 1 => {
                let sep = if seq { "" } else { " " };
                let comment = if r.next(6) == 0 { " # c" } else { "" };
                out.push_str(&format!("{lead}{sep}{}{comment}\n", scalar(r)));
            }
            2 => {
                out.push_str(&format!("{}\n", lead.trim_end()));
                let step = [0, 1, 2, 4][r.next(4)];
                gen_node(r, out, indent + step, depth + 1);
            }
            _ => {
                if seq {
                    // A compact mapping in a sequence entry.
                    let column = lead.len();
                    out.push_str(&format!("{lead}{}: {}\n", r.pick(KEYS), scalar(r)));
                    if r.next(2) == 0 {
                        let pad2 = " ".repeat(column);
                        out.push_str(&format!("{pad2}{}: {}\n", r.pick(KEYS), scalar(r)));
                    }
                } else {
                    out.push_str(&format!("{lead}\n"));
                    gen_node(r, out, indent + 2, depth + 1);
                }
            }
        }
    }
}

#[test]
fn generated_documents_and_their_mutants_match_the_full_parser() {
    let mut r = Lcg(16);
    let (mut docs, mut answered) = (0, 0);
    for _ in 0..3_000 {
        let mut text = String::new();
        gen_node(&mut r, &mut text, 0, 0);
        docs += 1;
        answered += same(&text);
        // Mutants: one character inserted or removed, to reach documents the full parser
        // refuses; the fast path must decline those (or agree).
        for _ in 0..4 {
            let mut bytes = text.clone().into_bytes();
            let at = r.next(bytes.len());
            if r.next(2) == 0 {
                bytes.remove(at);
            } else {
                let c = b" :-#'\"[]{},\n&*|"[r.next(15)];
                bytes.insert(at, c);
            }
            if let Ok(mutant) = String::from_utf8(bytes) {
                same(&mutant);
            }
        }
    }
    // The generator mixes in many declined forms, but most documents still take the fast path.
    assert!(
        answered * 3 > docs,
        "fast path answered {answered} of {docs}"
    );
}
