//! The file-level import graph of a crate and its circles.
//!
//! In: a `Crate` read by `tree.rs`. Out: the edges between its files — a file depends on
//! another when its code names an item defined there; a path through a re-export
//! (`pub use tenant::Tenant` in `model/mod.rs`) counts for the file that defines the item, not
//! for the one passing it on, and a module named only as a step of a path is no dependency —
//! and the strongly connected components of two files or more.

use std::collections::BTreeMap;

use super::tree::Crate;

/// What a path names: a module, or an item defined in a module.
#[derive(Clone, Copy)]
pub enum Found {
    Module(usize),
    Item(usize),
}

enum Lookup {
    Found(Found),
    /// A binding to another crate's item (`use serde::Deserialize`).
    External,
    Missing,
}

/// Deeper than any chain of re-exports in the tree: a guard against a binding to itself.
const MAX_DEPTH: u8 = 24;

/// Resolves `path`, written in module `from`; `None` when it names nothing of the crate.
pub fn resolve(k: &Crate, from: usize, path: &[String], depth: u8) -> Option<Found> {
    let first = path.first()?;
    if depth > MAX_DEPTH {
        return None;
    }
    let (mut cur, rest) = match first.as_str() {
        "crate" => (0, &path[1..]),
        "self" => (from, &path[1..]),
        "super" => {
            let mut m = from;
            let ups = path.iter().take_while(|s| *s == "super").count();
            for _ in 0..ups {
                m = k.modules[m].parent?;
            }
            (m, &path[ups..])
        }
        _ => match lookup(k, from, first, path.len() > 1, depth) {
            Lookup::Found(Found::Module(m)) => (m, &path[1..]),
            Lookup::Found(item) => return Some(item),
            Lookup::External | Lookup::Missing => return None,
        },
    };
    for (i, seg) in rest.iter().enumerate() {
        match lookup(k, cur, seg, i + 1 < rest.len(), depth) {
            Lookup::Found(Found::Module(m)) => cur = m,
            Lookup::Found(item) => return Some(item),
            Lookup::External => return None,
            // A name the reader does not see (made by a macro, say): it is in `cur`.
            Lookup::Missing => return Some(Found::Item(cur)),
        }
    }
    Some(Found::Module(cur))
}

/// `name` in the scope of module `m`: its items, its child modules, its bindings, its globs.
fn lookup(k: &Crate, m: usize, name: &str, want_module: bool, depth: u8) -> Lookup {
    let module = &k.modules[m];
    let child = module.children.get(name).copied();
    if let (true, Some(c)) = (want_module, child) {
        return Lookup::Found(Found::Module(c));
    }
    if module.items.contains(name) {
        return Lookup::Found(Found::Item(m));
    }
    if let Some(c) = child {
        return Lookup::Found(Found::Module(c));
    }
    if let Some(path) = module.imports.get(name) {
        return match resolve(k, m, path, depth + 1) {
            Some(found) => Lookup::Found(found),
            None => Lookup::External,
        };
    }
    for glob in &module.globs {
        if let Some(Found::Module(g)) = resolve(k, m, glob, depth + 1)
            && g != m
        {
            match lookup(k, g, name, want_module, depth + 1) {
                Lookup::Missing => continue,
                found => return found,
            }
        }
    }
    Lookup::Missing
}

/// The edges between the crate's files, each with one path that makes it. A module naming
/// what one of its ancestors defines is no edge: a module's children are parts of it, and what
/// the parent holds for them (an error type, a shared struct) is its inside.
pub fn edges(k: &Crate) -> BTreeMap<(usize, usize), String> {
    let mut out = BTreeMap::new();
    for r in &k.refs {
        let Some(Found::Item(target)) = resolve(k, r.module, &r.path, 0) else {
            continue;
        };
        let (from, to) = (k.modules[r.module].file, k.modules[target].file);
        if from != to && !k.within(r.module, target) {
            out.entry((from, to)).or_insert_with(|| r.path.join("::"));
        }
    }
    out
}

/// The strongly connected components of two nodes or more (Tarjan's algorithm).
pub fn circles(nodes: usize, edges: &BTreeMap<(usize, usize), String>) -> Vec<Vec<usize>> {
    let mut next = vec![Vec::new(); nodes];
    for &(a, b) in edges.keys() {
        next[a].push(b);
    }
    let mut t = Tarjan {
        next,
        index: vec![None; nodes],
        low: vec![0; nodes],
        stack: Vec::new(),
        on_stack: vec![false; nodes],
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..nodes {
        if t.index[v].is_none() {
            t.strong(v);
        }
    }
    t.out
}

struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    counter: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan {
    fn strong(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in self.next[v].clone() {
            match self.index[w] {
                None => {
                    self.strong(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                self.out.push(component);
            }
        }
    }
}
