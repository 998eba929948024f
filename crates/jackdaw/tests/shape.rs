//! Issue #18, "every function reads in one screen": no function in the engine's sources (free,
//! method or nested) may span more than [`LIMIT`] lines, counted from its `fn` line to the line
//! of its closing brace. Long functions are split into named steps instead.

use std::path::{Path, PathBuf};

/// The longest a function may be, in lines.
const LIMIT: usize = 80;

/// Every `.rs` file under `dir`, recursively, in a stable order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `src` with every comment and the contents of every string and char literal replaced by
/// spaces (newlines kept), so that braces and `fn` words in them are not seen as code.
fn blank_non_code(src: &str) -> Vec<char> {
    let c: Vec<char> = src.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in &mut out[from..to.min(c.len())] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            let end = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            // Block comments nest in Rust.
            let (mut j, mut depth) = (i + 2, 1);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == 'r'
            && (!prev_ident || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"') | Some('#'))
        {
            // A raw string r"..." / r#"..."# (also br"..."): no escapes, ends at `"` + as many `#`.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#'))) {
                j += 1;
            }
            blank(&mut out, i + 1, j + 1 + hashes);
            i = j + 1 + hashes;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{7f}', '{') or a lifetime ('a, 'static).
            if c.get(i + 1) == Some(&'\\') {
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every function in `src` with a body: (line of its `fn`, name, length in lines).
fn functions(src: &str) -> Vec<(usize, String, usize)> {
    let c = blank_non_code(src);
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let line_of = |pos: usize| 1 + c[..pos].iter().filter(|&&ch| ch == '\n').count();
    let mut found = Vec::new();
    for i in 0..c.len().saturating_sub(2) {
        let is_fn = c[i] == 'f' && c[i + 1] == 'n' && c[i + 2].is_whitespace() && (i == 0 || !ident(c[i - 1]));
        if !is_fn {
            continue;
        }
        let mut j = i + 2;
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        let name: String = c[j..].iter().take_while(|&&ch| ident(ch)).collect();
        if name.is_empty() {
            continue; // a function pointer type, `fn(..)`
        }
        // The body is the first `{` outside parentheses and brackets (a `;` there first means
        // a declaration without a body, as in a trait).
        let mut nest = 0i32;
        let open = loop {
            match c.get(j) {
                None => break None,
                Some('(') | Some('[') => nest += 1,
                Some(')') | Some(']') => nest -= 1,
                Some('{') if nest == 0 => break Some(j),
                Some(';') if nest == 0 => break None,
                _ => {}
            }
            j += 1;
        };
        let Some(open) = open else { continue };
        let mut depth = 0i32;
        let mut k = open;
        while k < c.len() {
            match c[k] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        assert!(k < c.len(), "unbalanced braces after fn {name} at line {}", line_of(i));
        let first = line_of(i);
        found.push((first, name, line_of(k) - first + 1));
    }
    found
}

#[test]
fn the_measure_handles_literals_comments_and_nesting() {
    let src = "fn a() {\n    let s = \"}}}\";\n    let c = '{';\n    // }\n    /* } /* } */ } */\n    fn inner<'x>(v: &'x [u8; 2]) -> &'x u8 {\n        &v[0]\n    }\n    let r = (r#\"}\"#, '\\'', br\"{\", b'}');\n}\ntrait T {\n    fn decl(&self);\n}\nfn b(f: fn(u8) -> u8) { }\n";
    let fns = functions(src);
    let got: Vec<(usize, &str, usize)> = fns.iter().map(|(l, n, len)| (*l, n.as_str(), *len)).collect();
    assert_eq!(got, vec![(1, "a", 10), (6, "inner", 3), (14, "b", 1)]);
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 10, "found only {} source files under {}", files.len(), src.display());
    let mut long = Vec::new();
    let mut count = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, name, len) in functions(&text) {
            count += 1;
            if len > LIMIT {
                let rel = f.strip_prefix(&src).unwrap_or(f);
                long.push(format!("{}:{line}:{name}:{len}", rel.display()));
            }
        }
    }
    assert!(count > 100, "found only {count} functions");
    assert!(
        long.is_empty(),
        "functions over {LIMIT} lines (file:line:name:length; split them into named steps):\n{}",
        long.join("\n")
    );
}
