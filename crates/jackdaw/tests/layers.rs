//! The engine's layer order holds in the code (docs/ARCHITECTURE.md, "Layers"): a module names
//! only its own layer and the layers below it, through `use` or any inline `crate::` path.
//! Shared leaves (`error`, `options`, `stats`, `sync`, `ids`) may be named from anywhere.
//!
//! The test reads the sources: every `crate::` path (in `use` lists, braces included, and
//! inline) is resolved to the module it names, and any that points to a higher layer fails the
//! test with the file, the line and both layers. A second test finds import circles: files (of
//! the engine and of the bench harness) that use each other, directly or through a ring.

use std::path::{Path, PathBuf};

/// Layers from the bottom up; a module's layer is its first path component under `src/`.
const LAYERS: &[&[&str]] = &[
    &["storage"],
    &["data"],
    &["journal"],
    &["txn"],
    &["tree"],
    &["api", "typed"],
    &["batch"],
    &["env", "backup", "readonly"],
    &["lib"],
];

/// Named from anywhere.
const LEAVES: &[&str] = &["error", "options", "stats", "sync", "ids"];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module (first component under `src/`) a source file belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules named by `crate::` paths on one line of code (comments stripped):
/// `crate::a::b`, `crate::{a::x, b}`, nested braces included.
fn named_modules(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        // Not part of a longer identifier (`jackdaw_crate::`).
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(inner) = rest.strip_prefix('{') {
            // Top-level names of the brace list.
            let mut depth = 0usize;
            let mut item = String::new();
            for c in inner.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 || !item.contains("::") {
                    item.push(c);
                }
            }
            if !item.trim().is_empty() {
                out.push(first_segment(&item));
            }
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// Items the crate root re-exports (`pub use module::{A, B}` in `lib.rs`), with the module that
/// defines them: `crate::Error` names the `error` module.
fn reexports(lib: &str) -> std::collections::HashMap<String, String> {
    let mut map = std::collections::HashMap::new();
    let mut rest = lib;
    while let Some(i) = rest.find("\npub use ") {
        rest = &rest[i + "\npub use ".len()..];
        let stmt = &rest[..rest.find(';').unwrap_or(rest.len())];
        let mut idents =
            stmt.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty()).map(str::to_string);
        let Some(module) = idents.next() else { continue };
        for name in idents {
            map.entry(name).or_insert_with(|| module.clone());
        }
    }
    map
}

fn first_segment(s: &str) -> String {
    s.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

#[test]
fn no_module_names_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let roots = reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(roots.get("Error").is_some_and(|m| m == "error"), "lib.rs re-exports not read: {roots:?}");
    let mut bad = Vec::new();
    let mut unknown = Vec::new();
    let mut checked = 0;
    for f in &files {
        let module = module_of(&src, f);
        if LEAVES.contains(&module.as_str()) {
            continue;
        }
        let Some(own) = layer_of(&module) else {
            unknown.push(format!("{}: module `{module}` is in no layer of this test", f.display()));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        let mut in_tests = false;
        for (n, line) in text.lines().enumerate() {
            // Unit tests at the end of a file may reach anywhere.
            if line.trim_start().starts_with("#[cfg(test)]") {
                in_tests = true;
            }
            if in_tests {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for m in named_modules(code) {
                let m = roots.get(&m).cloned().unwrap_or(m);
                if LEAVES.contains(&m.as_str()) || m == module {
                    continue;
                }
                checked += 1;
                match layer_of(&m) {
                    Some(l) if l > own => bad.push(format!(
                        "{}:{}: layer `{}` names `crate::{m}` of the higher layer `{}`",
                        f.strip_prefix(&src).unwrap().display(),
                        n + 1,
                        LAYERS[own].join("/"),
                        LAYERS[l].join("/"),
                    )),
                    Some(_) => {}
                    None => unknown.push(format!(
                        "{}:{}: `crate::{m}` is in no layer of this test",
                        f.strip_prefix(&src).unwrap().display(),
                        n + 1
                    )),
                }
            }
        }
    }
    assert!(checked > 100, "the test found only {checked} crate:: paths: is it reading the sources?");
    assert!(unknown.is_empty(), "modules missing from the layer list:\n{}", unknown.join("\n"));
    assert!(bad.is_empty(), "{} upward references:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn the_path_reader_sees_braces_and_inline_paths() {
    assert_eq!(named_modules("use crate::txn::alloc::Geometry;"), ["txn"]);
    assert_eq!(
        named_modules("use crate::{Error, tree::{node::Written, multi}, data::file};"),
        ["Error", "tree", "data"]
    );
    assert_eq!(named_modules("let x = crate::storage::sys::prefetch(p, 0) + crate::api::f();"), ["storage", "api"]);
    assert_eq!(named_modules("use jackdaw_crate::x;"), Vec::<String>::new());
}

// ---- Import circles --------------------------------------------------------------------------
//
// Inside a layer the files' dependencies also run one way: no two files (or longer rings of
// them) each use the other. A file uses another when one of its `crate::`, `super::` or `self::`
// paths names the other's module (or an item in it); naming an enclosing module (`super::X`
// from a child, for items its `mod.rs` defines) is not counted, nor are unit tests.

/// Every source file's module path: `tree/btree.rs` is `["tree", "btree"]`, `tree/mod.rs` is
/// `["tree"]`, `lib.rs` (or `main.rs`) is `[]`.
fn module_paths(src: &Path) -> Vec<(Vec<String>, PathBuf)> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src).unwrap().with_extension("");
            let mut m: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
            if m.last().is_some_and(|l| l == "mod" || (m.len() == 1 && (l == "lib" || l == "main"))) {
                m.pop();
            }
            (m, f)
        })
        .collect()
}

/// The paths of one use tree: `a::{b::c, d as e}` gives `a::b::c` and `a::d`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let first = tree.split_whitespace().next().unwrap_or("");
        return vec![first.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect()];
    };
    let prefix: Vec<String> =
        tree[..open].split("::").filter(|s| !s.trim().is_empty()).map(|s| s.trim().to_string()).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    let mut out = Vec::new();
    for item in items.into_iter().filter(|i| !i.trim().is_empty()) {
        for tail in expand(item) {
            out.push(prefix.iter().cloned().chain(tail).collect());
        }
    }
    out
}

/// The source text without comments and without the unit tests at its end.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    code
}

/// The module paths (absolute, from the crate root) a file's code names.
fn named_paths(code: &str, me: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(root) {
            let start = at + i;
            at = start + root.len();
            if code[..start].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // The use tree: path characters, and anything inside braces.
            let (mut end, mut depth) = (at, 0usize);
            for (i, c) in code[at..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    c if depth > 0 || c.is_alphanumeric() || c == '_' || c == ':' => {}
                    _ => break,
                }
                end = at + i + c.len_utf8();
            }
            let base: Vec<String> = match root {
                "crate::" => Vec::new(),
                "super::" => me[..me.len().saturating_sub(1)].to_vec(),
                _ => me.to_vec(),
            };
            for p in expand(&code[at..end]) {
                out.push(base.iter().cloned().chain(p).collect());
            }
        }
    }
    out
}

/// Rings of files that use each other, in one crate's `src`.
fn import_circles(src: &Path) -> Vec<String> {
    let modules = module_paths(src);
    let known: Vec<&Vec<String>> = modules.iter().map(|(m, _)| m).collect();
    let mut uses: Vec<Vec<usize>> = Vec::new();
    for (me, file) in &modules {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let mut to = Vec::new();
        for p in named_paths(&code, me) {
            // The longest known module the path starts with.
            let Some(target) = (0..=p.len()).rev().find_map(|n| known.iter().position(|k| **k == p[..n])) else {
                continue;
            };
            let t = known[target];
            if t != me && !me.starts_with(t) && !to.contains(&target) {
                to.push(target);
            }
        }
        uses.push(to);
    }
    // Rings: a depth-first search reports each back edge's ring once.
    let name = |i: usize| modules[i].1.strip_prefix(src).unwrap().display().to_string();
    let mut state = vec![0u8; modules.len()]; // 0 new, 1 on the stack, 2 done
    let mut stack = Vec::new();
    let mut rings = Vec::new();
    fn visit(v: usize, uses: &[Vec<usize>], state: &mut [u8], stack: &mut Vec<usize>, rings: &mut Vec<Vec<usize>>) {
        state[v] = 1;
        stack.push(v);
        for &w in &uses[v] {
            if state[w] == 1 {
                let from = stack.iter().position(|&s| s == w).unwrap();
                rings.push(stack[from..].to_vec());
            } else if state[w] == 0 {
                visit(w, uses, state, stack, rings);
            }
        }
        stack.pop();
        state[v] = 2;
    }
    for v in 0..modules.len() {
        if state[v] == 0 {
            visit(v, &uses, &mut state, &mut stack, &mut rings);
        }
    }
    rings.into_iter().map(|r| r.iter().map(|&i| name(i)).chain([name(r[0])]).collect::<Vec<_>>().join(" -> ")).collect()
}

#[test]
fn no_two_files_use_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The engine, and the bench harness beside it in the workspace (its engine registry and its
    // adapters were such a ring).
    let mut all = Vec::new();
    for src in [root.join("src"), root.join("../jackdaw-bench/src")] {
        if src.is_dir() {
            all.extend(import_circles(&src).into_iter().map(|r| format!("{}: {r}", src.display())));
        }
    }
    assert!(all.is_empty(), "files that use each other:\n{}", all.join("\n"));
}

#[test]
fn the_circle_finder_sees_rings() {
    let me = ["tree".to_string(), "btree".to_string()];
    assert_eq!(
        named_paths("use super::{node::{self, Node}, multi};\nlet f = crate::data::page::prefetch(p);", &me),
        [
            vec!["data", "page", "prefetch"],
            vec!["tree", "node", "self"],
            vec!["tree", "node", "Node"],
            vec!["tree", "multi"],
        ]
    );
    let dir = std::env::temp_dir().join(format!("jackdaw-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("t")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod t;\n").unwrap();
    std::fs::write(dir.join("t/mod.rs"), "mod a; mod b;\nuse self::a::X;\n").unwrap();
    std::fs::write(dir.join("t/a.rs"), "use super::b::Y;\n").unwrap();
    std::fs::write(dir.join("t/b.rs"), "fn f() { crate::t::a::g() }\n#[cfg(test)]\nuse crate::t::mod_only;\n").unwrap();
    let rings = import_circles(&dir);
    std::fs::write(dir.join("t/b.rs"), "fn f() {}\n").unwrap();
    let none = import_circles(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(rings.len(), 1, "{rings:?}");
    assert!(rings[0].contains("t/a.rs") && rings[0].contains("t/b.rs"), "{rings:?}");
    assert!(none.is_empty(), "{none:?}");
}
