//! The engine's layer order holds in the code (docs/ARCHITECTURE.md, "Layers"): a module names
//! only its own layer and the layers below it, through `use` or any inline `crate::` path.
//! Shared leaves (`error`, `options`, `stats`, `sync`, `ids`) may be named from anywhere.
//!
//! The test reads the sources: every `crate::` path (in `use` lists, braces included, and
//! inline) is resolved to the module it names, and any that points to a higher layer fails the
//! test with the file, the line and both layers.

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
