#![allow(dead_code)]
use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{Env, Options, ReadTxn, WriteTxn};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory on the project's own disk (target/tmp), never a tmpfs.
/// Removed when the guard drops, unless the test is failing (then it stays
/// for a look): a suite run must not leave gigabytes behind on a CI machine
/// whose disk may be nearly full.
pub fn tmpdir(name: &str) -> TmpDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    TmpDir(d)
}

/// A test's directory; see [`tmpdir`].
#[derive(Debug)]
pub struct TmpDir(PathBuf);

impl TmpDir {
    /// The path, no longer removed on drop: for a caller that removes it itself.
    pub fn keep(self) -> PathBuf {
        let mut me = std::mem::ManuallyDrop::new(self);
        std::mem::take(&mut me.0)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// Small journal files so tests rotate and recycle them.
pub fn test_opts() -> Options {
    Options::default().journal_file_bytes(256 << 10)
}

/// Write a raw page: `value` repeated as u64s after the header.
pub fn fill(tx: &mut WriteTxn, pgno: u64, value: u64) {
    let p = tx.page_mut(pgno).unwrap();
    for c in p[PAGE_HEADER..].chunks_mut(8) {
        c.copy_from_slice(&value.to_le_bytes());
    }
}

/// Allocate a raw page holding `value`.
pub fn alloc(tx: &mut WriteTxn, value: u64) -> u64 {
    let p = tx.alloc_page(PageKind::Raw).unwrap();
    fill(tx, p, value);
    p
}

pub fn value_of(page: &[u8]) -> u64 {
    let v = u64::from_le_bytes(page[PAGE_HEADER..PAGE_HEADER + 8].try_into().unwrap());
    assert!(page[PAGE_HEADER..].chunks(8).all(|c| c == v.to_le_bytes()), "torn page");
    v
}

pub fn read_value(r: &ReadTxn, pgno: u64) -> u64 {
    value_of(&r.page(pgno).unwrap())
}

/// Check with the given set of live pages as the reachable set.
pub fn check_pages(env: &Env, live: impl IntoIterator<Item = u64>) {
    let live: Vec<u64> = live.into_iter().collect();
    env.check_with(move |_| Ok(live)).and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A small xorshift generator for seeded tests.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The test's seed: `JACKDAW_SEED` when set (replay), else from the clock; printed either way.
pub fn seed() -> u64 {
    let s = std::env::var("JACKDAW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("seed {s} (replay with JACKDAW_SEED={s})");
    s
}
