//! Reads one crate's module tree with `syn`, as the compiler walks it: from the crate root
//! through each `mod` (inline or in its own file, `#[path]` honoured), leaving out what a
//! normal build leaves out (`#[cfg(test)]`, the `test-kit` feature, `cfg(not(…))` evaluated).
//!
//! In: the crate root file. Out: a `Crate` — every module with the names it defines, its
//! child modules, its `use` bindings and glob imports, and every path its code names (paths in
//! `use` items, in types and expressions, in macro calls and in attribute strings), each tied
//! to the module it is written in. `graph.rs` resolves those paths.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Item, Meta, Token, UseTree, Visibility};

/// One module: inline or a file of its own.
#[derive(Default)]
pub struct Module {
    /// The file the module is written in (an index into `Crate::files`).
    pub file: usize,
    pub parent: Option<usize>,
    /// The names its items define (types, functions, traits, constants…).
    pub items: HashSet<String>,
    pub children: HashMap<String, usize>,
    /// `use` bindings: the name they bring in, and the path as written.
    pub imports: HashMap<String, Vec<String>>,
    /// The paths of its `use …::*` items.
    pub globs: Vec<Vec<String>>,
}

/// A path the code of a module names.
pub struct Reference {
    pub module: usize,
    pub path: Vec<String>,
}

/// A crate's modules, files and references; module 0 is the root.
pub struct Crate {
    pub files: Vec<PathBuf>,
    pub modules: Vec<Module>,
    pub refs: Vec<Reference>,
}

/// Reads the crate whose root file is `root`.
pub fn read_crate(root: &Path) -> Crate {
    let mut krate = Crate {
        files: Vec::new(),
        modules: Vec::new(),
        refs: Vec::new(),
    };
    krate.load(root, None, "");
    krate
}

impl Crate {
    /// Whether module `m` is `ancestor` or lies inside it.
    pub fn within(&self, m: usize, ancestor: usize) -> bool {
        let mut cur = Some(m);
        while let Some(c) = cur {
            if c == ancestor {
                return true;
            }
            cur = self.modules[c].parent;
        }
        false
    }

    fn new_module(&mut self, file: usize, parent: Option<usize>, name: &str) -> usize {
        let id = self.modules.len();
        self.modules.push(Module {
            file,
            parent,
            ..Module::default()
        });
        if let Some(p) = parent {
            self.modules[p].children.insert(name.to_string(), id);
        }
        id
    }

    fn load(&mut self, path: &Path, parent: Option<usize>, name: &str) {
        let text = fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("read module file {}: {e}", path.display()));
        let ast =
            syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
        let file = self.files.len();
        self.files.push(path.to_path_buf());
        let module = self.new_module(file, parent, name);
        let here = path.parent().expect("a file has a folder");
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let children = if matches!(stem, "mod" | "lib" | "main") {
            here.to_path_buf()
        } else {
            here.join(stem)
        };
        self.items(&ast.items, module, &children, here);
    }

    /// The items of `module`: `children` is the folder its `mod x;` files live in, `here` the
    /// folder of its file (where a `#[path]` is read from).
    fn items(&mut self, items: &[Item], module: usize, children: &Path, here: &Path) {
        for item in items {
            if !compiled(item_attrs(item)) {
                continue;
            }
            match item {
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    if let Some((_, content)) = &m.content {
                        let file = self.modules[module].file;
                        let child = self.new_module(file, Some(module), &name);
                        self.items(content, child, &children.join(&name), here);
                    } else {
                        let path = path_attr(&m.attrs)
                            .map(|p| here.join(p))
                            .unwrap_or_else(|| module_file(children, &name));
                        self.load(&path, Some(module), &name);
                    }
                }
                other => {
                    if let Some(name) = defined_name(other) {
                        self.modules[module].items.insert(name);
                    }
                    let mut collector = Collector {
                        krate: self,
                        module,
                    };
                    collector.visit_item(other);
                }
            }
        }
    }

    /// Records a `use` item of `module`: its bindings, its globs, and (a private `use`) the
    /// paths it names, which the module's own code depends on.
    fn use_item(&mut self, module: usize, tree: &UseTree, public: bool) {
        let mut leaves = Vec::new();
        use_leaves(tree, &mut Vec::new(), &mut leaves);
        for (name, path) in leaves {
            match name {
                None => self.modules[module].globs.push(path),
                Some(name) => {
                    if name != "_" {
                        self.modules[module].imports.insert(name, path.clone());
                    }
                    if !public {
                        self.refs.push(Reference { module, path });
                    }
                }
            }
        }
    }
}

/// `dir/name.rs`, or `dir/name/mod.rs` where that is the one that exists.
fn module_file(dir: &Path, name: &str) -> PathBuf {
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// The leaves of a `use` tree: the name bound (`None` for a glob) and the full path.
fn use_leaves(
    tree: &UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => {
            out.push((prefix.last().cloned(), prefix.clone()));
        }
        UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((Some(n.ident.to_string()), path));
        }
        UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((Some(r.rename.to_string()), path));
        }
        UseTree::Glob(_) => out.push((None, prefix.clone())),
        UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// Collects the paths an item's code names into its crate's references.
struct Collector<'a> {
    krate: &'a mut Crate,
    module: usize,
}

impl Collector<'_> {
    fn push(&mut self, path: Vec<String>) {
        if !path.is_empty() {
            self.krate.refs.push(Reference {
                module: self.module,
                path,
            });
        }
    }

    /// The paths in a token stream (a macro's arguments, an attribute's): each run of
    /// `ident :: ident …`, and each string that reads as a path (`#[serde(with = "…")]`).
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for tree in tokens {
            match tree {
                TokenTree::Ident(i) => {
                    if colons != 2 && !run.is_empty() {
                        self.push(std::mem::take(&mut run));
                    }
                    run.push(i.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                other => {
                    self.push(std::mem::take(&mut run));
                    colons = 0;
                    match other {
                        TokenTree::Group(g) => self.tokens(g.stream()),
                        TokenTree::Literal(l) => self.string_path(&l.to_string()),
                        _ => {}
                    }
                }
            }
        }
        self.push(run);
    }

    fn string_path(&mut self, literal: &str) {
        let Some(text) = literal.strip_prefix('"').and_then(|l| l.strip_suffix('"')) else {
            return;
        };
        if !text.contains("::") {
            return;
        }
        if let Ok(path) = syn::parse_str::<syn::Path>(text) {
            self.push(path_names(&path));
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !compiled(item_attrs(item)) {
            return;
        }
        match item {
            Item::Use(u) => {
                let public = !matches!(u.vis, Visibility::Inherited);
                self.krate.use_item(self.module, &u.tree, public);
            }
            // A module inside a function body: none in the tree.
            Item::Mod(_) => {}
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if compiled(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.push(path_names(path));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }

    fn visit_attribute(&mut self, attr: &'ast Attribute) {
        let path = attr.path();
        if path.is_ident("doc") || path.is_ident("cfg") || path.is_ident("path") {
            return;
        }
        if let Meta::List(list) = &attr.meta {
            self.tokens(list.tokens.clone());
        } else if let Meta::NameValue(nv) = &attr.meta {
            self.visit_expr(&nv.value);
        }
    }
}

fn path_names(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The name an item defines in its module's namespace, if any.
fn defined_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[path = "…"]` on a `mod`.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

/// Whether a normal build compiles an item with these attributes: `test` and the `test-kit`
/// feature are off, every other feature and platform predicate is taken as on.
pub fn compiled(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .all(|a| a.parse_args::<Meta>().map(|m| holds(&m)).unwrap_or(true))
}

fn holds(meta: &Meta) -> bool {
    match meta {
        Meta::Path(p) => !p.is_ident("test"),
        Meta::NameValue(nv) => {
            let test_kit = matches!(&nv.value, syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) if s.value() == "test-kit");
            !(nv.path.is_ident("feature") && test_kit)
        }
        Meta::List(list) => {
            let inner = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .map(|p| p.into_iter().collect::<Vec<_>>())
                .unwrap_or_default();
            if list.path.is_ident("not") {
                !inner.first().is_some_and(holds)
            } else if list.path.is_ident("any") {
                inner.iter().any(holds)
            } else {
                inner.iter().all(holds)
            }
        }
    }
}
