//! The import graph of a crate's source files, for layering checks: which
//! file reaches which through `use crate::…`, `super::…` and `self::…`
//! paths (a parent naming a child module, `read::get`, counts too), and the
//! loops in it. Test modules (`#[cfg(test)] mod tests`) are left out: tests
//! may reach anywhere. A text scan, not a Rust parser: good enough for
//! code formatted by rustfmt, which is all this workspace holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module, as the path segments below the crate root (`["handlers",
/// "read"]`); the root is empty.
pub type Module = Vec<String>;

/// Which module reaches which.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every module with a file of its own.
    pub modules: BTreeSet<Module>,
    /// Edges, from a module to the modules it names.
    pub edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl Graph {
    /// Reads every `.rs` file under `src`.
    pub fn of_crate(src: &Path) -> Graph {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files);
        drop_test_modules(&mut files);
        let modules: BTreeSet<Module> = files.keys().cloned().collect();
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, path) in &files {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let code = without_tests(&without_comments(&text));
            let mut targets = BTreeSet::new();
            for path in paths(&code) {
                if let Some(t) = resolve(&modules, module, &path) {
                    if &t != module {
                        targets.insert(t);
                    }
                }
            }
            for child in modules.iter().filter(|m| is_child(m, module)) {
                let name = child.last().expect("a child has a name");
                if names_child(&code, name) {
                    targets.insert(child.clone());
                }
            }
            edges.insert(module.clone(), targets);
        }
        Graph { modules, edges }
    }

    /// The loops: strongly connected sets of more than one module, each
    /// sorted, printed as `a/b`.
    pub fn loops(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan::default();
        for m in &self.modules {
            if !tarjan.index.contains_key(m) {
                tarjan.visit(m, &self.edges);
            }
        }
        let mut loops: Vec<Vec<String>> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut names: Vec<String> = c.iter().map(display).collect();
                names.sort();
                names
            })
            .collect();
        loops.sort();
        loops
    }
}

/// `a/b`, or `lib` for the root.
pub fn display(module: &Module) -> String {
    if module.is_empty() {
        "lib".to_owned()
    } else {
        module.join("/")
    }
}

/// Leaves out the files of test modules declared apart
/// (`#[cfg(test)] mod cases;` beside the code), and everything below
/// them: like the inline test modules, tests may reach anywhere.
fn drop_test_modules(files: &mut BTreeMap<Module, PathBuf>) {
    let mut tests = Vec::new();
    for (module, path) in files.iter() {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let code = without_comments(&text);
        let mut rest = code.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + "#[cfg(test)]".len()..];
            let decl = rest.trim_start();
            let decl = decl.strip_prefix("pub(crate) ").unwrap_or(decl);
            if let Some(tail) = decl.strip_prefix("mod ") {
                let name: String = tail
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if tail[name.len()..].trim_start().starts_with(';') {
                    let mut child = module.clone();
                    child.push(name);
                    tests.push(child);
                }
            }
        }
    }
    files.retain(|module, _| !tests.iter().any(|t| module.starts_with(t)));
}

/// Every `.rs` file under `dir`, in path order.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = BTreeMap::new();
    collect(dir, dir, &mut files);
    drop_test_modules(&mut files);
    let mut paths: Vec<PathBuf> = files.into_values().collect();
    paths.sort();
    paths
}

/// A file's code as the import scan reads it: comments and the test
/// module left out.
pub fn code_of(text: &str) -> String {
    without_tests(&without_comments(text))
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<Module, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            let mut module: Module = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            out.insert(module, path);
        }
    }
}

fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal (a URL) cuts too much, which
            // only ever hides an edge in a string, never invents one.
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text before the first `#[cfg(test)]` that opens a module.
fn without_tests(code: &str) -> String {
    let mut rest = code;
    let mut out = String::new();
    while let Some(i) = rest.find("#[cfg(test)]") {
        let after = rest[i + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") {
            out.push_str(&rest[..i]);
            return out;
        }
        out.push_str(&rest[..i + 1]);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out
}

/// Every path named by a `use` (groups expanded) or written inline, that
/// starts at `crate`, `super` or `self`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = find_word(rest, "use ") {
        let tail = &rest[i + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        // Only a `use` item: first on its line, after any visibility.
        let line = rest[..i].rsplit('\n').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with("pub") {
            expand(tail[..end].trim(), &mut out);
        }
        rest = &tail[end..];
    }
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code;
        while let Some(i) = find_word(rest, start) {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            // `crate::{…}` opens a group the `use` scan expands.
            if !tail[..end].ends_with("::") {
                out.push(split(&tail[..end]));
            }
            rest = &tail[end..];
        }
    }
    out.retain(|p| {
        matches!(
            p.first().map(String::as_str),
            Some("crate" | "super" | "self")
        )
    });
    out
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before = text[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn split(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        out.push(split(path));
        return;
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut depth = 0;
    let mut item = String::new();
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            expand(&format!("{prefix}{}", item.trim()), out);
            item.clear();
        } else {
            item.push(c);
        }
    }
    if !item.trim().is_empty() {
        expand(&format!("{prefix}{}", item.trim()), out);
    }
}

/// The deepest module with a file of its own that `path`, written in
/// `from`, names.
fn resolve(modules: &BTreeSet<Module>, from: &Module, path: &[String]) -> Option<Module> {
    let mut base: Module = Vec::new();
    let mut segments = path;
    match path.first().map(String::as_str) {
        Some("crate") => segments = &path[1..],
        Some("super" | "self") => {
            base = from.clone();
            while let Some(first) = segments.first() {
                match first.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                segments = &segments[1..];
            }
        }
        _ => return None,
    }
    (0..=segments.len()).rev().find_map(|n| {
        let mut candidate = base.clone();
        candidate.extend(segments[..n].iter().cloned());
        modules.contains(&candidate).then_some(candidate)
    })
}

fn is_child(child: &Module, parent: &Module) -> bool {
    child.len() == parent.len() + 1 && child.starts_with(parent)
}

/// Whether a parent's code names its child `name` by a relative path
/// (`name::item`, or `use name::…`).
fn names_child(code: &str, name: &str) -> bool {
    let needle = format!("{name}::");
    let mut from = 0;
    while let Some(i) = code[from..].find(&needle) {
        let at = from + i;
        let before = code[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            return true;
        }
        from = at + needle.len();
    }
    false
}

/// Tarjan's strongly connected components.
#[derive(Default)]
struct Tarjan {
    next: usize,
    index: BTreeMap<Module, usize>,
    low: BTreeMap<Module, usize>,
    stack: Vec<Module>,
    on_stack: BTreeSet<Module>,
    components: Vec<Vec<Module>>,
}

impl Tarjan {
    fn visit(&mut self, v: &Module, edges: &BTreeMap<Module, BTreeSet<Module>>) {
        self.index.insert(v.clone(), self.next);
        self.low.insert(v.clone(), self.next);
        self.next += 1;
        self.stack.push(v.clone());
        self.on_stack.insert(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            if !self.index.contains_key(w) {
                self.visit(w, edges);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v.clone(), low);
            } else if self.on_stack.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v.clone(), low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_groups_expand_to_every_path() {
        let mut out = Vec::new();
        expand("crate::{a::{b, c as d}, e}", &mut out);
        assert_eq!(
            out,
            [
                split("crate::a::b"),
                split("crate::a::c"),
                split("crate::e")
            ]
        );
    }

    #[test]
    fn a_loop_between_two_files_is_found_and_a_chain_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::X;\n").unwrap();
        std::fs::write(
            src.join("b.rs"),
            "pub struct X;\nfn f() { super::a::g() }\n",
        )
        .unwrap();
        std::fs::write(
            src.join("c.rs"),
            "use crate::a;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
        )
        .unwrap();
        let graph = Graph::of_crate(src);
        assert_eq!(graph.loops(), [["a", "b"]]);
    }
}
