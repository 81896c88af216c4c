//! The shape of `systems/`, held as the team agreed it (issue 53): no import circle between
//! its files, and in the model plugins (`runtime/`, `mpi/`, `cuda/`, `nccl/`, `chakra/`) no file over 600
//! lines of code and no function over 60 lines, test modules left out.
//!
//! A file imports another when it names a path into it (`use crate::..`, `use super::..`,
//! `self::..`, or such a path written inline); a module naming its own submodules declares its
//! layout and is not counted (`data/mod.rs` may name `data/coherency.rs`, which may name
//! `Data` back). These are text rules over rustfmt-formatted code: simple on purpose.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = "systems/src";
const MODEL_DIRS: [&str; 5] = ["runtime", "mpi", "cuda", "nccl", "chakra"];
const MAX_CODE_LINES: usize = 600;
const MAX_FN_LINES: usize = 60;

/// One source file: its module path (`["runtime", "data", "coherency"]`) and its code
/// without test modules and comments.
struct Source {
    module: Vec<String>,
    code: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(ROOT)
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `a/b.rs` is module `[a, b]`, `a/mod.rs` is `[a]`, `lib.rs` is `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut m: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib")) {
        m.pop();
    }
    m
}

/// The lines before the file's test module (`#[cfg(test)]` then `mod`), and whether the
/// file declares test-only modules in files of their own (their names).
fn strip_tests(text: &str) -> (Vec<String>, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = Vec::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
        if lines[i].trim() == "#[cfg(test)]" && next.starts_with("mod ") {
            if let Some(name) = next.strip_prefix("mod ").and_then(|n| n.strip_suffix(';')) {
                test_files.push(name.to_string());
                i += 2;
                continue;
            }
            break;
        }
        code.push(lines[i].to_string());
        i += 1;
    }
    (code, test_files)
}

/// Code lines without comments (whole-line `//` comments and a trailing ` // ...`).
fn without_comments(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| match l.find(" // ") {
            Some(i) => l[..i].to_string(),
            None => l,
        })
        .collect()
}

fn sources() -> BTreeMap<PathBuf, Source> {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut out = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for p in &files {
        let rel = p.strip_prefix(&root).unwrap().to_path_buf();
        let (code, tests) = strip_tests(&std::fs::read_to_string(p).unwrap());
        let dir = if rel
            .file_name()
            .is_some_and(|f| f == "mod.rs" || f == "lib.rs")
        {
            rel.parent().unwrap().to_path_buf()
        } else {
            rel.with_extension("")
        };
        for t in tests {
            test_only.insert(dir.join(format!("{t}.rs")));
            test_only.insert(dir.join(t).join("mod.rs"));
        }
        let source = Source {
            module: module_of(&rel),
            code: without_comments(code),
        };
        out.insert(rel, source);
    }
    out.retain(|rel, _| !test_only.contains(rel));
    out
}

/// The paths a use tree names, braces expanded (`a::{b, c::{self, d}}` is `a::b`, `a::c`,
/// `a::c::d`).
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            let item = tree.split(" as ").next().unwrap().trim();
            let path = match (prefix.is_empty(), item) {
                (_, "") => return,
                (false, "self") => prefix.to_string(),
                (true, _) => item.to_string(),
                (false, _) => format!("{prefix}::{item}"),
            };
            out.push(path);
        }
        Some(open) => {
            let head = tree[..open].trim_end_matches("::").trim();
            let prefix = match (prefix.is_empty(), head.is_empty()) {
                (true, _) => head.to_string(),
                (false, true) => prefix.to_string(),
                (false, false) => format!("{prefix}::{head}"),
            };
            let inner = &tree[open + 1..tree.rfind('}').unwrap()];
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[start..i], &prefix, out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&inner[start..], &prefix, out);
        }
    }
}

/// Every path into this crate the code names: its `use` trees and the paths written inline.
fn named_paths(code: &[String]) -> Vec<String> {
    let text = code.join("\n");
    let mut paths = Vec::new();
    let mut rest = text.as_str();
    // Use trees, which may span lines.
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let after = &rest[at + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(end) = after.find(';') {
            let tree = &after[..end];
            if ["crate::", "super::", "self::"]
                .iter()
                .any(|p| tree.trim_start().starts_with(p))
            {
                expand(
                    &tree.split_whitespace().collect::<Vec<_>>().join(" "),
                    "",
                    &mut paths,
                );
            }
        }
    }
    // Inline paths.
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            let before = text[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_' || c == ':')
                .collect();
            paths.push(path.trim_end_matches(':').to_string());
        }
    }
    paths
}

/// The file a path leads into from module `module`: its deepest module that is a file.
fn target<'a>(
    path: &str,
    module: &[String],
    files: &'a BTreeMap<Vec<String>, PathBuf>,
) -> Option<&'a PathBuf> {
    let mut segments = path.split("::");
    let mut at: Vec<String> = match segments.next()? {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            m.pop();
            m
        }
        _ => return None,
    };
    let mut found = files.get(&at);
    for s in segments {
        if s == "super" {
            at.pop();
            found = files.get(&at);
            continue;
        }
        at.push(s.to_string());
        match files.get(&at) {
            Some(f) => found = Some(f),
            None => break,
        }
    }
    found
}

/// File `a` imports file `b`: the arrows between files, a module's arrows to its own
/// submodules left out.
fn imports(sources: &BTreeMap<PathBuf, Source>) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let files: BTreeMap<Vec<String>, PathBuf> = sources
        .iter()
        .map(|(p, s)| (s.module.clone(), p.clone()))
        .collect();
    let mut arrows = BTreeMap::new();
    for (p, s) in sources {
        let mut to = BTreeSet::new();
        for path in named_paths(&s.code) {
            let Some(t) = target(&path, &s.module, &files) else {
                continue;
            };
            let inside = sources[t].module.starts_with(&s.module);
            if t != p && !inside {
                to.insert(t.clone());
            }
        }
        arrows.insert(p.clone(), to);
    }
    arrows
}

/// The import circles: each strongly connected set of more than one file (Tarjan).
fn circles(arrows: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.arrows[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut set = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in arrows.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

fn in_model_dirs(rel: &Path) -> bool {
    MODEL_DIRS.iter().any(|d| rel.starts_with(d))
}

#[test]
fn no_file_of_systems_imports_itself_through_others() {
    let sources = sources();
    let found = circles(&imports(&sources));
    assert!(found.is_empty(), "import circles in {ROOT}: {found:#?}");
}

#[test]
fn the_circle_check_sees_a_circle() {
    // Two files naming each other, and a module naming its own submodule (not an arrow).
    let source = |module: &[&str], code: &str| Source {
        module: module.iter().map(|s| s.to_string()).collect(),
        code: code.lines().map(str::to_string).collect(),
    };
    let mut sources = BTreeMap::new();
    sources.insert(PathBuf::from("a/mod.rs"), source(&["a"], "use self::x::X;"));
    sources.insert(
        PathBuf::from("a/x.rs"),
        source(&["a", "x"], "use super::{A, y::{self, Y}};"),
    );
    sources.insert(
        PathBuf::from("a/y.rs"),
        source(&["a", "y"], "fn f() { crate::a::x::g() }"),
    );
    let arrows = imports(&sources);
    assert!(arrows[Path::new("a/mod.rs")].is_empty());
    assert_eq!(
        circles(&arrows),
        vec![vec![PathBuf::from("a/x.rs"), PathBuf::from("a/y.rs")]]
    );
}

#[test]
fn no_model_file_holds_more_than_600_lines_of_code() {
    let over: Vec<(PathBuf, usize)> = sources()
        .into_iter()
        .filter(|(rel, _)| in_model_dirs(rel))
        .map(|(rel, s)| (rel, s.code.iter().filter(|l| !l.trim().is_empty()).count()))
        .filter(|&(_, n)| n > MAX_CODE_LINES)
        .collect();
    assert!(
        over.is_empty(),
        "over {MAX_CODE_LINES} lines of code: {over:?}"
    );
}

/// Each function's name and length in lines, its signature and closing brace included.
fn functions(code: &[String]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, line) in code.iter().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let t = [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ]
        .iter()
        .fold(t, |t, p| t.strip_prefix(p).unwrap_or(t));
        let Some(rest) = t.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The signature ends at `{` (a body) or `;` (a declaration); a body may close on
        // its first line.
        let Some(sig_end) = code[i..]
            .iter()
            .position(|l| l.ends_with('{') || l.ends_with(';') || l.ends_with('}'))
        else {
            continue;
        };
        if !code[i + sig_end].ends_with('{') {
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = code[i..].iter().position(|l| *l == close) {
            out.push((name, end + 1));
        }
    }
    out
}

#[test]
fn no_model_function_is_longer_than_60_lines() {
    let mut over = Vec::new();
    for (rel, s) in sources().into_iter().filter(|(rel, _)| in_model_dirs(rel)) {
        for (name, n) in functions(&s.code) {
            if n > MAX_FN_LINES {
                over.push(format!("{}: {name} ({n} lines)", rel.display()));
            }
        }
    }
    assert!(over.is_empty(), "over {MAX_FN_LINES} lines: {over:#?}");
}

#[test]
fn the_function_count_sees_a_long_function() {
    let body: Vec<String> = std::iter::once("    pub(crate) fn long(&self) {".to_string())
        .chain((0..60).map(|i| format!("        let x{i} = {i};")))
        .chain(std::iter::once("    }".to_string()))
        .collect();
    assert_eq!(functions(&body), vec![("long".to_string(), 62)]);
}
