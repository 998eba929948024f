//! `jackdaw dump` and `jackdaw load`: LMDB's `mdb_dump` text format.
//!
//! One block per tree:
//!
//! ```text
//! VERSION=3
//! format=bytevalue
//! database=NAME
//! type=btree
//! dupsort=1              (multi-value trees only)
//! mapsize=N              (large enough for `mdb_load` to take the data)
//! HEADER=END
//!  6b6579                (key, hex, after one space)
//!  76616c7565            (value)
//! DATA=END
//! ```
//!
//! `load` accepts what `mdb_dump` prints: `format=print` too (printable bytes as they are,
//! others as `\xx`, a backslash as `\\`), `duplicates=1` beside `dupsort=1`, every other header
//! key ignored (`mapsize`, `maxreaders`, `db_pagesize`, ...), several blocks in one input
//! (`mdb_dump -a`), and a block without `database=` (plain `mdb_dump`, the main database) when
//! `-t TREE` names the tree.

use anyhow::{anyhow, bail, Context, Result};
use jackdaw::{Env, WriteTxn};
use std::io::{BufRead, Write};

/// LMDB's limit on keys and on values of DUPSORT databases.
const LMDB_MAX_KEY: usize = 511;
/// Bytes of keys and values per load transaction.
const LOAD_TXN_BYTES: u64 = 32 << 20;

/// Write the named trees (all when `names` is empty) to `w`.
pub(crate) fn dump(env: &Env, names: &[String], w: &mut impl Write) -> Result<()> {
    let r = env.read()?;
    let names: Vec<String> = if names.is_empty() { r.list_trees()? } else { names.to_vec() };
    let mut trees = Vec::new();
    let mut total = 0u64;
    for n in &names {
        let t = r.open_tree(n)?.ok_or_else(|| anyhow!("no tree named {n:?} in {}", env.path().display()))?;
        total += r.tree_stats(&t)?.entries;
        trees.push(t);
    }
    // LMDB's map must hold the data: the data file's size with room to spare, at least 16 MiB,
    // a multiple of 1 MiB.
    let s = env.stats();
    let mapsize = ((s.data_file_bytes.max(1 << 20) * 4).max(16 << 20)).div_ceil(1 << 20) << 20;
    let bar = crate::bar(total, "dump");
    let mut done = 0u64;
    let mut line = String::new();
    for t in &trees {
        writeln!(w, "VERSION=3\nformat=bytevalue\ndatabase={}\ntype=btree", t.name())?;
        if t.is_multi() {
            writeln!(w, "dupsort=1")?;
        }
        writeln!(w, "mapsize={mapsize}\nHEADER=END")?;
        let put = |w: &mut dyn Write, b: &[u8], line: &mut String| -> Result<()> {
            line.clear();
            line.push(' ');
            line.push_str(&crate::to_hex(b));
            line.push('\n');
            w.write_all(line.as_bytes())?;
            Ok(())
        };
        let warn = |what: &str, k: &[u8], len: usize| {
            eprintln!(
                "jackdaw: warning: tree {}: {what} {} is {len} bytes, over LMDB's {LMDB_MAX_KEY}-byte limit (mdb_load will refuse it; jackdaw load takes it)",
                t.name(),
                short(k)
            );
        };
        if t.is_multi() {
            for k in r.keys(t, ..)? {
                let k = k?;
                if k.len() > LMDB_MAX_KEY {
                    warn("key", &k, k.len());
                }
                for v in r.multi_get(t, &k)? {
                    let v = v?;
                    if v.len() > LMDB_MAX_KEY {
                        warn("a value of key", &k, v.len());
                    }
                    put(w, &k, &mut line)?;
                    put(w, &v, &mut line)?;
                    done += 1;
                    if done.is_multiple_of(4096) {
                        bar.set_position(done);
                    }
                }
            }
        } else {
            for e in r.range(t, ..)? {
                let (k, v) = e?;
                if k.len() > LMDB_MAX_KEY {
                    warn("key", &k, k.len());
                }
                put(w, &k, &mut line)?;
                put(w, &v, &mut line)?;
                done += 1;
                if done.is_multiple_of(4096) {
                    bar.set_position(done);
                }
            }
        }
        writeln!(w, "DATA=END")?;
    }
    bar.finish_and_clear();
    Ok(())
}

/// A key for a message: printable text, or hex, cut at 40 bytes.
fn short(k: &[u8]) -> String {
    let s = crate::show(&k[..k.len().min(40)], false);
    if k.len() > 40 {
        format!("{s}...")
    } else {
        s
    }
}

/// One block's header.
#[derive(Default)]
struct Header {
    print: bool,
    database: Option<String>,
    dupsort: bool,
}

/// Read `mdb_dump` text from `r` into `env`; returns the entries loaded. `len` is the input's
/// length when known (for the progress bar). `committed` counts the entries committed so far
/// (the load commits every `LOAD_TXN_BYTES`): on an error, those stay in the database.
pub(crate) fn load(env: &Env, mut r: impl BufRead, tree: Option<&str>, len: u64, committed: &mut u64) -> Result<u64> {
    let bar = if len > 0 { crate::bar(len, "load") } else { crate::spinner("load") };
    let mut line = Vec::new();
    let mut lineno = 0u64;
    let mut read_bytes = 0u64;
    let mut total = 0u64;
    let mut tx: Option<WriteTxn> = None;
    let mut in_tx = 0u64;
    let mut read_line = |r: &mut dyn BufRead, line: &mut Vec<u8>, lineno: &mut u64| -> Result<bool> {
        line.clear();
        let n = r.read_until(b'\n', line).context("read input")?;
        if n == 0 {
            return Ok(false);
        }
        read_bytes += n as u64;
        *lineno += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if lineno.is_multiple_of(8192) {
            bar.set_position(read_bytes);
        }
        Ok(true)
    };
    // Trees this load created (a later block of another kind into one of them is the input's
    // mix, not a tree that was there).
    let mut created: Vec<String> = Vec::new();
    loop {
        // A header, or the end of the input.
        let mut h = Header::default();
        let mut seen_any = false;
        loop {
            if !read_line(&mut r, &mut line, &mut lineno)? {
                if seen_any {
                    bail!("line {lineno}: the input ends inside a header (no HEADER=END)");
                }
                if let Some(t) = tx.take() {
                    t.commit()?;
                    *committed = total;
                }
                bar.finish_and_clear();
                if total == 0 && lineno == 0 {
                    bail!("the input is empty: expected mdb_dump output (VERSION=3 ... HEADER=END ... DATA=END)");
                }
                return Ok(total);
            }
            if line.is_empty() {
                continue;
            }
            seen_any = true;
            let text =
                std::str::from_utf8(&line).map_err(|_| anyhow!("line {lineno}: a header line that is not text"))?;
            if text == "HEADER=END" {
                break;
            }
            let Some((k, v)) = text.split_once('=') else {
                bail!("line {lineno}: expected KEY=VALUE in the header, found {}", crate::quoted(text));
            };
            match k {
                "VERSION" if v != "3" => {
                    bail!("line {lineno}: VERSION={}; this reads mdb_dump's VERSION=3", crate::quoted(v))
                }
                "format" => match v {
                    "bytevalue" => h.print = false,
                    "print" => h.print = true,
                    _ => bail!("line {lineno}: format={}; expected bytevalue or print", crate::quoted(v)),
                },
                "database" => h.database = Some(v.to_string()),
                "type" if v != "btree" => {
                    bail!("line {lineno}: type={}; only btree databases are supported", crate::quoted(v))
                }
                "dupsort" | "duplicates" => h.dupsort |= v == "1",
                _ => {} // mapsize, maxreaders, db_pagesize, VERSION=3, type=btree, ...: as mdb_load, ignored.
            }
        }
        let name = match (tree, &h.database) {
            (Some(t), _) => t.to_string(),
            (None, Some(d)) => d.clone(),
            (None, None) => bail!(
                "line {lineno}: this block is LMDB's main (unnamed) database; name the tree to load it into with -t TREE"
            ),
        };
        let mut t = tx.take().map_or_else(|| env.write(), Ok)?;
        let kind = |multi: bool| if multi { "DUPSORT" } else { "plain" };
        let mut handle = match t.open_tree(&name)? {
            Some(x) if x.is_multi() != h.dupsort && tree.is_some() && created.contains(&name) => bail!(
                "line {lineno}: -t {name} loads every block of the input into one tree, but this block is a {} \
                 database and an earlier one was not: load them into separate trees (without -t, each \
                 block goes into the tree its header names)",
                kind(h.dupsort)
            ),
            Some(x) if x.is_multi() != h.dupsort => bail!(
                "tree {name} exists as a {} tree, the input holds a {} database",
                if x.is_multi() { "multi-value" } else { "plain" },
                kind(h.dupsort)
            ),
            Some(x) => x,
            None => {
                created.push(name.clone());
                match h.dupsort {
                    true => t.create_multi_tree(&name)?,
                    false => t.create_tree(&name)?,
                }
            }
        };
        tx = Some(t);
        // Data lines: key, value, key, value, ... up to DATA=END.
        loop {
            if !read_line(&mut r, &mut line, &mut lineno)? {
                bail!("line {lineno}: the input ends inside the data of {name} (no DATA=END)");
            }
            if line == b"DATA=END" {
                break;
            }
            let key = decode(&line, h.print).with_context(|| format!("line {lineno}: key"))?;
            if !read_line(&mut r, &mut line, &mut lineno)? || line == b"DATA=END" {
                bail!("line {lineno}: a key without a value in {name}");
            }
            let value = decode(&line, h.print).with_context(|| format!("line {lineno}: value"))?;
            let t = tx.as_mut().ok_or_else(|| anyhow!("no transaction"))?;
            if h.dupsort {
                t.multi_put(&handle, &key, &value).with_context(|| format!("line {lineno}: tree {name}"))?;
            } else {
                t.put(&handle, &key, &value).with_context(|| format!("line {lineno}: tree {name}"))?;
            }
            total += 1;
            in_tx += (key.len() + value.len()) as u64 + 16;
            if in_tx >= LOAD_TXN_BYTES {
                if let Some(full) = tx.take() {
                    full.commit()?;
                    *committed = total;
                }
                let t = env.write()?;
                handle = t.open_tree(&name)?.ok_or_else(|| anyhow!("tree {name} vanished"))?;
                tx = Some(t);
                in_tx = 0;
            }
        }
    }
}

/// One data line: a leading space, then hex (bytevalue) or printable text with `\xx` escapes.
fn decode(line: &[u8], print: bool) -> Result<Vec<u8>> {
    let Some(body) = line.strip_prefix(b" ") else {
        bail!("a data line must start with a space");
    };
    if !print {
        let s = std::str::from_utf8(body).map_err(|_| anyhow!("not hex"))?;
        return crate::from_hex(s).map_err(|e| anyhow!("{e}"));
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\\' {
            if body.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            let hex = body.get(i + 1..i + 3).ok_or_else(|| anyhow!("a backslash escape cut short"))?;
            let s = std::str::from_utf8(hex).map_err(|_| anyhow!("bad escape"))?;
            out.push(u8::from_str_radix(s, 16).map_err(|_| anyhow!("bad escape \\{s}"))?);
            i += 3;
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    Ok(out)
}
