//! The overlay: key-level changes of committed transactions that are not yet in the pages
//! (issue 21, "journal the changes, not the pages"). A small transaction's puts and deletes are
//! journaled as key records and kept here, versioned by transaction id, until an apply folds them
//! into the leaves in key order, many keys a leaf.
//!
//! ```text
//! one ordered map of versions, shared by every tree:
//!     (tree id, key, txid newest first) → value, or a deletion
//! one ordered map of entry-count changes:
//!     (tree id, txid) → entries added minus entries removed by that transaction in that tree
//! ```
//!
//! A reader asks through a **window** `(after, upto]` of transaction ids: `upto` is its snapshot
//! and `after` the transaction through which its pages already hold every change of the overlay
//! (the applied-through id of the state it reads). It sees, per key, the newest version whose id
//! is in the window; no version there means "read the pages".
//!
//! Invariants (the caller's, stated here because this module owns the map):
//! 1. Versions are inserted under the writer, at prepare, with the transaction's id: no snapshot
//!    sees one before that transaction is committed, because every snapshot's `upto` is at most
//!    the committed id.
//! 2. A page change to a key of a tree (an apply, or a transaction that takes the page path)
//!    happens only in a transaction whose base has every version of the overlay up to its base
//!    folded into its pages; so the pages of a state applied through `A` hold, for every key,
//!    the newest version up to `A` or a newer page change. That is why versions at or below a
//!    reader's `after` are never read: they may be older than the page.
//! 3. `remove_through(t)` runs only when no snapshot that may still begin or read has `after`
//!    below `t`: every version it removes is in the pages those snapshots read.
//!
//! Readers never take a lock: the map is a lock-free skip list (`crossbeam-skiplist`), whose
//! removed nodes are freed once no reader can hold them (epoch-based reclamation). It never
//! blocks, so the shuttle stage's rule (`sync.rs`) holds.

use crate::sync::AtomicU64;
use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;

/// A value in the overlay: its bytes, or `None` for a deletion.
pub(crate) type Version = Option<Arc<[u8]>>;

/// Bytes a version costs beside its key and value (the skip list's node with its tower, the
/// key's and the value's allocations): what `bytes` counts, so that the bound on the overlay
/// (`Options::max_overlay_bytes`) is a bound on memory.
pub(crate) const VERSION_OVERHEAD: u64 = 128;

/// The key of a version: ordered by tree, key, then transaction id, newest first.
pub(crate) struct VersionKey {
    tree: u64,
    key: Arc<[u8]>,
    txid: u64,
}

/// A version's place without owning the key: what lookups build on the stack.
trait Place {
    fn tree(&self) -> u64;
    fn key(&self) -> &[u8];
    /// `u64::MAX - txid`: ascending order is newest first.
    fn rev(&self) -> u64;
}

impl Place for VersionKey {
    fn tree(&self) -> u64 {
        self.tree
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn rev(&self) -> u64 {
        u64::MAX - self.txid
    }
}

struct Probe<'a> {
    tree: u64,
    key: &'a [u8],
    rev: u64,
}

impl Place for Probe<'_> {
    fn tree(&self) -> u64 {
        self.tree
    }
    fn key(&self) -> &[u8] {
        self.key
    }
    fn rev(&self) -> u64 {
        self.rev
    }
}

impl Ord for dyn Place + '_ {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.tree(), self.key(), self.rev()).cmp(&(o.tree(), o.key(), o.rev()))
    }
}
impl PartialOrd for dyn Place + '_ {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for dyn Place + '_ {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for dyn Place + '_ {}

impl<'a> Borrow<dyn Place + 'a> for VersionKey {
    fn borrow(&self) -> &(dyn Place + 'a) {
        self
    }
}
impl Ord for VersionKey {
    fn cmp(&self, o: &Self) -> Ordering {
        (self as &dyn Place).cmp(o as &dyn Place)
    }
}
impl PartialOrd for VersionKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for VersionKey {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for VersionKey {}

/// The transaction ids a reader sees: `(after, upto]` (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub after: u64,
    pub upto: u64,
}

impl Window {
    fn holds(&self, txid: u64) -> bool {
        self.after < txid && txid <= self.upto
    }
}

/// What the overlay says about a key in a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// No version in the window: the pages decide.
    Pages,
    /// The key was deleted.
    Deleted,
    /// The key's value.
    Value(Arc<[u8]>),
}

/// The overlay of an environment (see the module's doc).
#[derive(Default)]
pub(crate) struct Overlay {
    versions: SkipMap<VersionKey, Version>,
    counts: SkipMap<(u64, u64), i64>,
    bytes: AtomicU64,
    len: AtomicU64,
}

/// A key and its newest version in a window, as ranges yield them.
pub(crate) type Item = (Arc<[u8]>, Version);

impl Overlay {
    pub(crate) fn new() -> Overlay {
        Overlay::default()
    }

    /// Whether the overlay holds no version: readers check this first, so that an empty overlay
    /// costs one load.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(AtomicOrdering::Acquire) == 0
    }

    /// Versions held.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(AtomicOrdering::Acquire)
    }

    /// Memory the versions take, as counted (`VERSION_OVERHEAD` each beside their bytes).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(AtomicOrdering::Acquire)
    }

    fn cost(key: &[u8], v: &Version) -> u64 {
        key.len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64) + VERSION_OVERHEAD
    }

    /// Add transaction `txid`'s version of `key` in `tree` (invariant 1: under the writer, at
    /// prepare). A second version of the same key by the same transaction replaces the first.
    pub(crate) fn insert(&self, tree: u64, key: &[u8], txid: u64, v: Version) {
        let cost = Self::cost(key, &v);
        let probe = Probe { tree, key, rev: u64::MAX - txid };
        if let Some(old) = self.versions.get(&probe as &dyn Place) {
            let was = Self::cost(key, old.value());
            self.bytes.fetch_sub(was, AtomicOrdering::AcqRel);
            self.len.fetch_sub(1, AtomicOrdering::AcqRel);
        }
        self.versions.insert(VersionKey { tree, key: key.into(), txid }, v);
        self.bytes.fetch_add(cost, AtomicOrdering::AcqRel);
        self.len.fetch_add(1, AtomicOrdering::AcqRel);
    }

    /// Record that transaction `txid` changed `tree`'s entry count by `delta`.
    pub(crate) fn add_count(&self, tree: u64, txid: u64, delta: i64) {
        if delta == 0 {
            return;
        }
        let had = self.counts.get(&(tree, txid)).map_or(0, |e| *e.value());
        self.counts.insert((tree, txid), had + delta);
    }

    /// The change of `tree`'s entry count by the transactions in `w`.
    pub(crate) fn count_delta(&self, tree: u64, w: Window) -> i64 {
        if w.after >= w.upto {
            return 0;
        }
        self.counts.range((tree, w.after + 1)..=(tree, w.upto)).map(|e| *e.value()).sum()
    }

    /// `key`'s newest version in `w`.
    pub(crate) fn get(&self, tree: u64, key: &[u8], w: Window) -> Found {
        if self.is_empty() || w.after >= w.upto {
            return Found::Pages;
        }
        let probe = Probe { tree, key, rev: u64::MAX - w.upto };
        let Some(e) = self.versions.lower_bound(Bound::Included(&probe as &dyn Place)) else {
            return Found::Pages;
        };
        let k = e.key();
        if k.tree != tree || *k.key != *key || k.txid <= w.after {
            return Found::Pages;
        }
        match e.value() {
            Some(v) => Found::Value(v.clone()),
            None => Found::Deleted,
        }
    }

    /// The keys of `tree` in `[lo, hi]` (by the bounds) with their newest version in `w`, in key
    /// order both ways (a `DoubleEndedIterator` whose two ends never pass each other). Deletions
    /// are yielded too (`None`): they hide the pages' entry.
    pub(crate) fn range<'a>(&'a self, tree: u64, lo: Bound<&[u8]>, hi: Bound<&[u8]>, w: Window) -> Range<'a> {
        let own = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(Arc::<[u8]>::from(k)),
            Bound::Excluded(k) => Bound::Excluded(Arc::<[u8]>::from(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let done = self.is_empty() || w.after >= w.upto;
        Range { overlay: self, tree, w, lo: own(lo), hi: own(hi), front: None, back: None, done }
    }

    /// Every tree's keys with their newest version in `w`, in (tree, key) order: what an apply
    /// folds into the pages.
    pub(crate) fn all(&self, w: Window) -> impl Iterator<Item = (u64, Arc<[u8]>, Version)> + '_ {
        let mut cur = self.versions.front();
        std::iter::from_fn(move || {
            while let Some(e) = cur.take() {
                let (tree, key) = (e.key().tree, e.key().key.clone());
                // The versions of one key, newest first: the first in the window wins.
                let mut found = None;
                let mut n = Some(e);
                while let Some(x) = n.take() {
                    if x.key().tree != tree || x.key().key != key {
                        n = Some(x);
                        break;
                    }
                    if found.is_none() && w.holds(x.key().txid) {
                        found = Some(x.value().clone());
                    }
                    n = x.next();
                }
                cur = n;
                if let Some(v) = found {
                    return Some((tree, key, v));
                }
            }
            None
        })
    }

    /// Remove every version and count change of a transaction at or below `txid` (invariant 3).
    /// Returns the versions removed.
    pub(crate) fn remove_through(&self, txid: u64) -> u64 {
        let mut n = 0;
        let mut cur = self.versions.front();
        while let Some(e) = cur {
            cur = e.next();
            if e.key().txid <= txid && e.remove() {
                self.bytes.fetch_sub(Self::cost(&e.key().key, e.value()), AtomicOrdering::AcqRel);
                self.len.fetch_sub(1, AtomicOrdering::AcqRel);
                n += 1;
            }
        }
        let mut cur = self.counts.front();
        while let Some(e) = cur {
            cur = e.next();
            if e.key().1 <= txid {
                e.remove();
            }
        }
        n
    }
}

/// A range of one tree's keys in the overlay (`Overlay::range`).
pub(crate) struct Range<'a> {
    overlay: &'a Overlay,
    tree: u64,
    w: Window,
    lo: Bound<Arc<[u8]>>,
    hi: Bound<Arc<[u8]>>,
    /// The last key yielded from each end: the other end stops before it.
    front: Option<Arc<[u8]>>,
    back: Option<Arc<[u8]>>,
    done: bool,
}

fn below(key: &[u8], hi: &Bound<Arc<[u8]>>) -> bool {
    match hi {
        Bound::Included(h) => key <= &h[..],
        Bound::Excluded(h) => key < &h[..],
        Bound::Unbounded => true,
    }
}

fn above(key: &[u8], lo: &Bound<Arc<[u8]>>) -> bool {
    match lo {
        Bound::Included(l) => key >= &l[..],
        Bound::Excluded(l) => key > &l[..],
        Bound::Unbounded => true,
    }
}

impl<'a> Range<'a> {
    fn first_at_or_after(&self) -> Option<Entry<'a, VersionKey, Version>> {
        let v: &'a SkipMap<VersionKey, Version> = &self.overlay.versions;
        match (&self.front, &self.lo) {
            // Past every version of the key yielded last (its oldest has `rev` u64::MAX).
            (Some(k), _) | (None, Bound::Excluded(k)) => {
                v.lower_bound(Bound::Excluded(&Probe { tree: self.tree, key: k, rev: u64::MAX } as &dyn Place))
            }
            (None, Bound::Included(k)) => {
                v.lower_bound(Bound::Included(&Probe { tree: self.tree, key: k, rev: 0 } as &dyn Place))
            }
            (None, Bound::Unbounded) => {
                v.lower_bound(Bound::Included(&Probe { tree: self.tree, key: &[], rev: 0 } as &dyn Place))
            }
        }
    }

    fn last_at_or_before(&self) -> Option<Entry<'a, VersionKey, Version>> {
        let v: &'a SkipMap<VersionKey, Version> = &self.overlay.versions;
        match (&self.back, &self.hi) {
            // Before every version of the key yielded last (its newest has `rev` 0).
            (Some(k), _) | (None, Bound::Excluded(k)) => {
                v.upper_bound(Bound::Excluded(&Probe { tree: self.tree, key: k, rev: 0 } as &dyn Place))
            }
            (None, Bound::Included(k)) => {
                v.upper_bound(Bound::Included(&Probe { tree: self.tree, key: k, rev: u64::MAX } as &dyn Place))
            }
            (None, Bound::Unbounded) => match self.tree.checked_add(1) {
                Some(t) => v.upper_bound(Bound::Excluded(&Probe { tree: t, key: &[], rev: 0 } as &dyn Place)),
                None => v.back(),
            },
        }
    }
}

impl Iterator for Range<'_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        let mut cur = self.first_at_or_after();
        while let Some(e) = cur.take() {
            let (tree, key) = (e.key().tree, e.key().key.clone());
            let stop = self.back.as_ref().is_some_and(|b| *key >= **b);
            if tree != self.tree || !below(&key, &self.hi) || stop {
                break;
            }
            // The versions of this key, newest first: the first in the window wins.
            let mut found = None;
            let mut n = Some(e);
            while let Some(x) = n.take() {
                if x.key().tree != tree || x.key().key != key {
                    n = Some(x);
                    break;
                }
                if found.is_none() && self.w.holds(x.key().txid) {
                    found = Some(x.value().clone());
                }
                n = x.next();
            }
            self.front = Some(key.clone());
            if let Some(v) = found {
                return Some((key, v));
            }
            cur = n;
        }
        self.done = true;
        None
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        let mut cur = self.last_at_or_before();
        while let Some(e) = cur.take() {
            let (tree, key) = (e.key().tree, e.key().key.clone());
            let stop = self.front.as_ref().is_some_and(|f| *key <= **f);
            if tree != self.tree || !above(&key, &self.lo) || stop {
                break;
            }
            // The versions of this key, oldest first: the last in the window wins.
            let mut found = None;
            let mut n = Some(e);
            while let Some(x) = n.take() {
                if x.key().tree != tree || x.key().key != key {
                    n = Some(x);
                    break;
                }
                if self.w.holds(x.key().txid) {
                    found = Some(x.value().clone());
                }
                n = x.prev();
            }
            self.back = Some(key.clone());
            if let Some(v) = found {
                return Some((key, v));
            }
            cur = n;
        }
        self.done = true;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A small xorshift generator: the tests print their seed and take it back from
    /// `JACKDAW_SEED`.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn seed() -> u64 {
        let s = std::env::var("JACKDAW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x005e_ed0f_0e7e_1a75);
        println!("overlay model: seed {s} (replay with JACKDAW_SEED={s})");
        s
    }

    /// The model: per (tree, key), every version in insertion order.
    type Model = BTreeMap<(u64, Vec<u8>), BTreeMap<u64, Option<Vec<u8>>>>;

    fn model_get(m: &Model, tree: u64, key: &[u8], w: Window) -> Found {
        let Some(vs) = m.get(&(tree, key.to_vec())) else { return Found::Pages };
        if w.after >= w.upto {
            return Found::Pages;
        }
        match vs.range(w.after + 1..=w.upto).next_back() {
            None => Found::Pages,
            Some((_, None)) => Found::Deleted,
            Some((_, Some(v))) => Found::Value(v.as_slice().into()),
        }
    }

    fn model_range(
        m: &Model,
        tree: u64,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        w: Window,
    ) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        m.iter()
            .filter(|((t, k), _)| *t == tree && above(k, &lo.map(Arc::from)) && below(k, &hi.map(Arc::from)))
            .filter_map(|((_, k), vs)| {
                if w.after >= w.upto {
                    return None;
                }
                vs.range(w.after + 1..=w.upto).next_back().map(|(_, v)| (k.clone(), v.clone()))
            })
            .collect()
    }

    fn key(r: &mut Rng) -> Vec<u8> {
        // Few distinct keys, of lengths 0 to 3, so that prefixes and many versions meet.
        let len = r.below(4) as usize;
        (0..len).map(|_| b'a' + r.below(3) as u8).collect()
    }

    fn bound(r: &mut Rng) -> Bound<Vec<u8>> {
        match r.below(3) {
            0 => Bound::Unbounded,
            1 => Bound::Included(key(r)),
            _ => Bound::Excluded(key(r)),
        }
    }

    fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
        match b {
            Bound::Included(k) => Bound::Included(k),
            Bound::Excluded(k) => Bound::Excluded(k),
            Bound::Unbounded => Bound::Unbounded,
        }
    }

    fn owned(items: impl Iterator<Item = Item>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        items.map(|(k, v)| (k.to_vec(), v.map(|v| v.to_vec()))).collect()
    }

    /// Versions inserted by transactions in order, read through random windows by get, ranges
    /// both ways and mixed, and the fold order; versions removed through a point: every answer
    /// equals the model's, and the counted bytes and versions go back to zero.
    #[test]
    fn reads_through_windows_match_a_model() {
        let mut r = Rng(seed() | 1);
        let o = Overlay::new();
        let mut m = Model::new();
        let mut removed_through = 0u64;
        for txid in 1..=400u64 {
            for _ in 0..r.below(4) {
                let (tree, k) = (1 + r.below(3), key(&mut r));
                let v = (r.below(4) != 0).then(|| vec![txid as u8; r.below(20) as usize]);
                o.insert(tree, &k, txid, v.clone().map(Arc::from));
                m.entry((tree, k)).or_default().insert(txid, v);
            }
            if txid % 50 == 0 {
                // Readers with `after` below the point no longer exist (invariant 3).
                removed_through = txid - 30;
                o.remove_through(removed_through);
                for vs in m.values_mut() {
                    vs.retain(|t, _| *t > removed_through);
                }
                m.retain(|_, vs| !vs.is_empty());
            }
            for _ in 0..8 {
                let after = removed_through + r.below(txid - removed_through + 1);
                let w = Window { after, upto: after + r.below(txid - after + 1) };
                let tree = 1 + r.below(3);
                let k = key(&mut r);
                assert_eq!(o.get(tree, &k, w), model_get(&m, tree, &k, w), "get {tree} {k:?} in {w:?} at {txid}");
                let (lo, hi) = (bound(&mut r), bound(&mut r));
                let want = model_range(&m, tree, as_ref(&lo), as_ref(&hi), w);
                let fwd = owned(o.range(tree, as_ref(&lo), as_ref(&hi), w));
                assert_eq!(fwd, want, "range {tree} {lo:?}..{hi:?} in {w:?} at {txid}");
                let mut back = owned(o.range(tree, as_ref(&lo), as_ref(&hi), w).rev());
                back.reverse();
                assert_eq!(back, want, "reversed range {tree} {lo:?}..{hi:?} in {w:?} at {txid}");
                // Both ends at once, in a random order of steps: each key once, in order.
                let mut it = o.range(tree, as_ref(&lo), as_ref(&hi), w);
                let (mut front, mut tail) = (Vec::new(), Vec::new());
                loop {
                    let step =
                        if r.below(2) == 0 { it.next().map(|x| (true, x)) } else { it.next_back().map(|x| (false, x)) };
                    match step {
                        Some((true, x)) => front.extend(owned(std::iter::once(x))),
                        Some((false, x)) => tail.extend(owned(std::iter::once(x))),
                        None => break,
                    }
                }
                assert!(it.next().is_none() && it.next_back().is_none(), "an exhausted range stays exhausted");
                tail.reverse();
                front.extend(tail);
                assert_eq!(front, want, "mixed range {tree} {lo:?}..{hi:?} in {w:?} at {txid}");
                let all: Vec<_> = o.all(w).map(|(t, k, v)| (t, k.to_vec(), v.map(|v| v.to_vec()))).collect();
                let want_all: Vec<_> = (1..=3u64)
                    .flat_map(|t| {
                        model_range(&m, t, Bound::Unbounded, Bound::Unbounded, w)
                            .into_iter()
                            .map(move |(k, v)| (t, k, v))
                    })
                    .collect();
                assert_eq!(all, want_all, "fold order in {w:?} at {txid}");
            }
            let n: usize = m.values().map(|vs| vs.len()).sum();
            assert_eq!(o.len(), n as u64, "versions held at {txid}");
        }
        o.remove_through(u64::MAX);
        assert_eq!((o.len(), o.bytes()), (0, 0), "everything removed is uncounted");
        assert!(o.is_empty());
    }

    /// A transaction writing a key twice keeps its last version, counted once.
    #[test]
    fn a_second_version_by_the_same_transaction_replaces_the_first() {
        let o = Overlay::new();
        o.insert(1, b"k", 5, Some(Arc::from(&b"first value"[..])));
        o.insert(1, b"k", 5, None);
        let w = Window { after: 0, upto: 5 };
        assert_eq!(o.get(1, b"k", w), Found::Deleted);
        assert_eq!((o.len(), o.bytes()), (1, 1 + VERSION_OVERHEAD));
        assert_eq!(o.get(1, b"k", Window { after: 0, upto: 4 }), Found::Pages, "invisible before its transaction");
        assert_eq!(o.get(1, b"k", Window { after: 5, upto: 9 }), Found::Pages, "applied: the pages decide");
        assert_eq!(o.get(2, b"k", w), Found::Pages, "another tree");
    }

    #[test]
    fn entry_counts_sum_over_the_window() {
        let o = Overlay::new();
        o.add_count(7, 3, 2);
        o.add_count(7, 3, 1);
        o.add_count(7, 5, -1);
        o.add_count(8, 4, 10);
        let w = |after, upto| Window { after, upto };
        assert_eq!(o.count_delta(7, w(0, 9)), 2);
        assert_eq!(o.count_delta(7, w(0, 4)), 3);
        assert_eq!(o.count_delta(7, w(3, 9)), -1);
        assert_eq!(o.count_delta(8, w(0, 3)), 0);
        assert_eq!(o.count_delta(8, w(0, 4)), 10);
        o.remove_through(3);
        assert_eq!(o.count_delta(7, w(0, 9)), -1);
    }

    /// Readers on other threads see every committed key with its value while the writer adds
    /// versions and removes applied ones: no lock, no torn or missing answer.
    #[test]
    fn readers_on_other_threads_see_their_window_while_versions_come_and_go() {
        use std::sync::atomic::{AtomicU64 as A, Ordering::SeqCst};
        let o = Arc::new(Overlay::new());
        let committed = Arc::new(A::new(0));
        // Each reader's `after`, which only grows: the writer removes nothing above the least
        // (invariant 3).
        let afters: Arc<[A; 2]> = Arc::new([A::new(0), A::new(0)]);
        // Transaction t writes key t % 64 with value t; every key has a version from the start.
        for t in 1..=64u64 {
            o.insert(1, &(t % 64).to_be_bytes(), t, Some(Arc::from(&t.to_le_bytes()[..])));
        }
        committed.store(64, SeqCst);
        let readers: Vec<_> = (0..2)
            .map(|i| {
                let (o, c, afters) = (o.clone(), committed.clone(), afters.clone());
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    loop {
                        let upto = c.load(SeqCst);
                        if upto == u64::MAX {
                            return reads;
                        }
                        let w = Window { after: upto - 64, upto };
                        afters[i].store(w.after, SeqCst);
                        for k in 0..64u64 {
                            let newest = upto - (upto + 64 - k) % 64;
                            let got = o.get(1, &k.to_be_bytes(), w);
                            assert_eq!(got, Found::Value(Arc::from(&newest.to_le_bytes()[..])), "key {k} at {upto}");
                        }
                        let n = o.range(1, Bound::Unbounded, Bound::Unbounded, w).count();
                        assert_eq!(n, 64, "every key once at {upto}");
                        reads += 1;
                    }
                })
            })
            .collect();
        let mut removed = 0;
        for t in 65..=20_000u64 {
            o.insert(1, &(t % 64).to_be_bytes(), t, Some(Arc::from(&t.to_le_bytes()[..])));
            committed.store(t, SeqCst);
            let least = afters.iter().map(|a| a.load(SeqCst)).min().unwrap_or(0);
            if least > removed + 256 {
                removed = least;
                o.remove_through(removed);
                assert!(o.len() <= t - removed, "nothing above {removed} was removed, nothing below kept");
            }
        }
        committed.store(u64::MAX, SeqCst);
        for r in readers {
            assert!(r.join().expect("a reader panicked") > 0);
        }
        assert!(removed > 0, "the writer removed applied versions while readers read");
    }
}
