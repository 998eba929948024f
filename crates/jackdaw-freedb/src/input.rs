//! Reading the dump: a directory tree `category/discid`, or the archive itself (`.tar`, or
//! `.tar.bz2` decompressed as a stream with bzip2's pure-Rust backend), entry by entry, without
//! unpacking anything.
//!
//! Entries are numbered in reading order from 0 (`seq`): the import's resume mark is such a
//! number. [`read_entries`] can skip the first `skip` entries without handing them on (a `.tar`
//! or `.tar.bz2` is still read through up to there: it cannot seek; a directory tree is walked in
//! sorted order, so its numbering is stable).

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// An entry larger than this is not read (it cannot be an xmcd file: lines are at most 256
/// bytes); it is handed on with `oversize` set and counted as skipped.
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// One file of the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// Its number in reading order, from 0.
    pub seq: u64,
    /// The directory it is in (`rock`, ...).
    pub category: String,
    /// Its file name (the disc id, in the real dump).
    pub name: String,
    /// Its bytes (empty when `oversize`).
    pub data: Vec<u8>,
    /// Larger than [`MAX_ENTRY_BYTES`]: not read.
    pub oversize: bool,
}

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A directory of category directories.
    Dir,
    /// An uncompressed tar archive.
    Tar,
    /// A bzip2-compressed tar archive.
    TarBz2,
}

/// Tell a source's kind from what it is: a directory, a file starting with the bzip2 magic
/// `BZh`, or another file (read as tar).
pub fn source_kind(path: &Path) -> Result<SourceKind> {
    let md = std::fs::metadata(path).with_context(|| format!("cannot open the source {}", path.display()))?;
    if md.is_dir() {
        return Ok(SourceKind::Dir);
    }
    let mut magic = [0u8; 3];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .with_context(|| format!("cannot read the source {}", path.display()))?;
    Ok(if n == 3 && &magic == b"BZh" { SourceKind::TarBz2 } else { SourceKind::Tar })
}

/// Call `f` for every entry of `source` from number `skip` on, in order; `f` returns false to
/// stop. Returns the number of entries seen (skipped ones included). A source with no entry at
/// all (an empty archive, category directories with no file in them, a directory that is
/// something else, say a database) is an error: importing it would make an empty database and
/// call it done.
pub fn read_entries(source: &Path, skip: u64, mut f: impl FnMut(RawEntry) -> bool) -> Result<u64> {
    let n = read_any(source, skip, &mut f)?;
    if n == 0 {
        bail!(
            "{} holds no file to import: expected a FreeDB archive, category/discid entries (e.g. \
             rock/42124f16) as a directory, a .tar or a .tar.bz2",
            source.display()
        );
    }
    Ok(n)
}

fn read_any(source: &Path, skip: u64, mut f: impl FnMut(RawEntry) -> bool) -> Result<u64> {
    match source_kind(source)? {
        SourceKind::Dir => read_dir_tree(source, skip, &mut f),
        SourceKind::Tar => {
            let file = File::open(source).with_context(|| format!("cannot open {}", source.display()))?;
            read_tar(BufReader::with_capacity(1 << 20, file), source, SourceKind::Tar, skip, &mut f)
        }
        SourceKind::TarBz2 => {
            let file = File::open(source).with_context(|| format!("cannot open {}", source.display()))?;
            let dec = bzip2::read::MultiBzDecoder::new(BufReader::with_capacity(1 << 20, file));
            read_tar(BufReader::with_capacity(1 << 20, dec), source, SourceKind::TarBz2, skip, &mut f)
        }
    }
}

/// Read the tar stream `r` of `source` (of `kind`, as `source_kind` found it).
fn read_tar(
    r: impl Read,
    source: &Path,
    kind: SourceKind,
    skip: u64,
    f: &mut dyn FnMut(RawEntry) -> bool,
) -> Result<u64> {
    let mut ar = tar::Archive::new(r);
    let mut seq = 0u64;
    // A file named like a compressed archive but read as tar (no bzip2 signature) says so.
    let named_bz2 = kind == SourceKind::Tar && source.to_string_lossy().ends_with(".bz2");
    let damaged = |seq: u64| {
        let hint =
            if named_bz2 { "; its name ends in .bz2 but it does not start with bzip2's signature BZh" } else { "" };
        format!("the archive {} is damaged or not a tar archive (after {seq} entries{hint})", source.display())
    };
    // The tar reader's own message quotes the header bytes it could not read: kept short and
    // free of control characters, so that a damaged archive does not write garbage to a terminal.
    let cause = |e: std::io::Error| anyhow::anyhow!("{}", printable(&e.to_string(), 100));
    for entry in ar.entries().map_err(cause).with_context(|| damaged(seq))? {
        let mut entry = entry.map_err(cause).with_context(|| damaged(seq))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let this = seq;
        seq += 1;
        if this < skip {
            continue;
        }
        let path = entry.path().map_err(cause).with_context(|| damaged(this))?.into_owned();
        let (category, name) = split_path(&path);
        let size = entry.size();
        let mut data = Vec::new();
        let oversize = size > MAX_ENTRY_BYTES;
        if !oversize {
            data.reserve(size as usize);
            entry.read_to_end(&mut data).map_err(cause).with_context(|| damaged(this))?;
            if data.len() as u64 != size {
                // A cut archive: the entry's data ends before its header's size.
                bail!("{}: entry {} is cut short", damaged(this), path.display());
            }
        }
        if !f(RawEntry { seq: this, category, name, data, oversize }) {
            break;
        }
    }
    Ok(seq)
}

/// `s` with control characters and undecodable bytes (U+FFFD) written as escapes, cut to `max`
/// characters (an ellipsis marks the cut).
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() || c == char::REPLACEMENT_CHARACTER {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `.../category/name` → (category, name); a file at the top has category "".
fn split_path(p: &Path) -> (String, String) {
    let name = p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let category = p.parent().and_then(|d| d.file_name()).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    (category, name)
}

fn sorted_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    v.sort();
    Ok(v)
}

fn read_dir_tree(root: &Path, skip: u64, f: &mut dyn FnMut(RawEntry) -> bool) -> Result<u64> {
    let mut seq = 0u64;
    let cats = sorted_dir(root)?;
    if !cats.iter().any(|p| p.is_dir()) {
        bail!("{} holds no category directories (expected category/discid files, e.g. rock/42124f16)", root.display());
    }
    for cat in cats.iter().filter(|p| p.is_dir()) {
        for file in sorted_dir(cat)? {
            if !file.is_file() {
                continue;
            }
            let this = seq;
            seq += 1;
            if this < skip {
                continue;
            }
            let (category, name) = split_path(&file);
            let size = std::fs::metadata(&file).with_context(|| format!("cannot read {}", file.display()))?.len();
            let oversize = size > MAX_ENTRY_BYTES;
            let data = if oversize {
                Vec::new()
            } else {
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?
            };
            if !f(RawEntry { seq: this, category, name, data, oversize }) {
                return Ok(seq);
            }
        }
    }
    Ok(seq)
}
