//! Shared by the integration tests: the seed, a generated archive, and the in-memory model of
//! what an import of it must hold.

#![allow(dead_code)]

use jackdaw_freedb::input::read_entries;
use jackdaw_freedb::parse::{parse, Album};
use std::path::Path;

/// The test's seed: `JACKDAW_SEED` if set, else from the clock; printed so a failure can be rerun.
pub fn seed(test: &str) -> u64 {
    let s = match std::env::var("JACKDAW_SEED") {
        Ok(v) => v.parse().expect("JACKDAW_SEED must be a number"),
        Err(_) => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
                % 1_000_000_007
        }
    };
    println!("{test}: JACKDAW_SEED={s}");
    s
}

/// The albums an import of `source` must hold, in album id order (ids 0, 1, ...): every entry that
/// parses, in reading order.
pub fn model(source: &Path) -> Vec<Album> {
    let mut v = Vec::new();
    read_entries(source, 0, |e| {
        if let Ok(p) = parse(&e.data, &e.category) {
            v.push(p.album);
        }
        true
    })
    .unwrap();
    v
}

/// A tiny xorshift for choices in tests.
pub struct Xs(pub u64);
impl Xs {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Held by every test of a binary that spawns child processes and opens databases in-process:
/// a child being spawned holds copies of this process's descriptors between its fork and its
/// exec, and with them the `flock` of any database open at that moment, so a test that closes a
/// database and opens it again while another test spawns a child can get `Error::Locked`.
/// The tests of one binary therefore run one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
