//! The page table: committed page versions that are not yet in the data file (MVCC).
//!
//! Invariants:
//! 1. For every page, versions are in ascending transaction order.
//! 2. A version is removed only after the flusher wrote the newest version `<= T` of that page to
//!    the data file (and `T` is at most the oldest live snapshot), so a snapshot that finds no
//!    version `<= its id` here is served the right bytes by the data file.
//! 3. `count` is the number of pages with versions; zero lets readers skip the lock entirely.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// An immutable committed page image.
pub(crate) type PageBuf = Arc<Vec<u8>>;

/// Hasher for page numbers: a multiplicative mix (keys are not attacker-chosen).
#[derive(Default)]
pub(crate) struct PgnoHasher(u64);
impl Hasher for PgnoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
pub(crate) type PgnoMap<V> = HashMap<u64, V, BuildHasherDefault<PgnoHasher>>;

#[derive(Default)]
pub(crate) struct PageTable {
    map: RwLock<PgnoMap<Vec<(u64, PageBuf)>>>,
    count: AtomicUsize,
    bytes: AtomicU64,
}

impl PageTable {
    /// The newest version of `pgno` committed at or before `txid`.
    pub(crate) fn get(&self, pgno: u64, txid: u64) -> Option<PageBuf> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let m = self.map.read();
        let vs = m.get(&pgno)?;
        vs.iter().rev().find(|(t, _)| *t <= txid).map(|(_, b)| b.clone())
    }

    /// Publish transaction `txid`'s pages.
    pub(crate) fn publish(&self, txid: u64, pages: Vec<(u64, PageBuf)>) {
        let mut m = self.map.write();
        let mut added = 0u64;
        for (pgno, buf) in pages {
            added += buf.len() as u64;
            let vs = m.entry(pgno).or_default();
            debug_assert!(vs.last().is_none_or(|(t, _)| *t < txid));
            vs.push((txid, buf));
        }
        self.count.store(m.len(), Ordering::Release);
        self.bytes.fetch_add(added, Ordering::Relaxed);
    }

    /// Remove every version `<= txid` of `pages` (the data file now holds the newest of them).
    pub(crate) fn retire(&self, pages: &[u64], txid: u64) {
        let mut m = self.map.write();
        let mut freed = 0u64;
        for pgno in pages {
            if let Some(vs) = m.get_mut(pgno) {
                let keep = vs.iter().position(|(t, _)| *t > txid).unwrap_or(vs.len());
                freed += vs[..keep].iter().map(|(_, b)| b.len() as u64).sum::<u64>();
                vs.drain(..keep);
                if vs.is_empty() {
                    m.remove(pgno);
                }
            }
        }
        self.count.store(m.len(), Ordering::Release);
        self.bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Bytes of page images held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn pages(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(b: u8) -> PageBuf {
        Arc::new(vec![b; 16])
    }

    #[test]
    fn versions_are_found_by_snapshot_and_retired() {
        let t = PageTable::default();
        assert!(t.get(5, 100).is_none());
        t.publish(3, vec![(5, buf(3)), (6, buf(3))]);
        t.publish(7, vec![(5, buf(7))]);
        assert!(t.get(5, 2).is_none());
        assert_eq!(t.get(5, 3).unwrap()[0], 3);
        assert_eq!(t.get(5, 6).unwrap()[0], 3);
        assert_eq!(t.get(5, 7).unwrap()[0], 7);
        assert_eq!(t.bytes(), 48);
        t.retire(&[5, 6], 3);
        assert!(t.get(6, 10).is_none());
        assert!(t.get(5, 6).is_none());
        assert_eq!(t.get(5, 9).unwrap()[0], 7);
        assert_eq!(t.pages(), 1);
        t.retire(&[5], 7);
        assert_eq!(t.pages(), 0);
        assert_eq!(t.bytes(), 0);
    }
}
