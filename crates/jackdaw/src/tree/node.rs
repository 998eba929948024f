//! Slotted B+tree pages: views over a page's bytes (read: [`Node`]; write: free functions on
//! `&mut [u8]`).
//!
//! ```text
//! offset size field (after the 32-byte page header)
//!     32    2 count     entries
//!     34    2 level     0 for leaves, parents are one above their children
//!     36    4 upper     start of the entry area; entries live in [upper, page_size)
//!     40    4 garbage   bytes of dead entries inside the entry area
//!     44    4 reserved  zero
//!     48  2*n slots     u16 offset of each entry, in key order
//!
//! leaf entry:   klen u16 | vlen u16 | flags u8 | key | value
//!               flags: 0 inline value, 1 overflow (value = total_len u64 | first_page u64)
//! branch entry: klen u16 | child u64 | key       (entry 0's key is ignored: minus infinity)
//! ```
//! Invariants (checked by `check()`): keys strictly ascending; slots point inside the entry area;
//! `upper >= 48 + 2 * count`; every key of child `i` of a branch is `>= key i` and `< key i+1`.
//! Every accessor is bounds-checked: a malformed page is `Corrupted`, never a panic.

use crate::data::page::PAGE_HEADER;
use crate::{Error, Result};
use smallvec::smallvec;

/// Byte ranges `[start, end)` of a page that a change wrote: a superset of the bytes it changed
/// (the journal diffs only these, see `PageWrite::modify`).
pub(crate) use crate::txn::Written;

/// The node header (count, level, upper, garbage): written by every change.
const NODE_HEADER: (usize, usize) = (OFF_COUNT, SLOTS);

pub(crate) const OFF_COUNT: usize = PAGE_HEADER;
pub(crate) const OFF_LEVEL: usize = PAGE_HEADER + 2;
pub(crate) const OFF_UPPER: usize = PAGE_HEADER + 4;
pub(crate) const OFF_GARBAGE: usize = PAGE_HEADER + 8;
/// First slot.
pub(crate) const SLOTS: usize = PAGE_HEADER + 16;
pub(crate) const LEAF_ENTRY_HEADER: usize = 5;
pub(crate) const BRANCH_ENTRY_HEADER: usize = 10;
/// A leaf entry's flags: what its value is.
pub(crate) const FLAG_INLINE: u8 = 0;
/// An overflow reference (`overflow.rs`).
pub(crate) const FLAG_OVERFLOW: u8 = 1;
/// Multi-value trees (`multi.rs`): a sorted list of the key's values, inline.
pub(crate) const FLAG_NESTED: u8 = 2;
/// Multi-value trees: the descriptor of a subtree holding the key's values.
pub(crate) const FLAG_SUBTREE: u8 = 3;
/// Bytes of an overflow reference stored as a leaf value.
pub(crate) const OVERFLOW_REF: usize = 16;

/// Largest entry (with its slot) such that two always fit in a page.
pub(crate) fn max_entry(page_size: usize) -> usize {
    (page_size - SLOTS) / 2 - 2
}

/// The largest key: 2,001 bytes at 4 KiB pages, 4,049 at 8 KiB, 32,721 at 64 KiB.
pub fn max_key_size(page_size: usize) -> usize {
    max_entry(page_size) - LEAF_ENTRY_HEADER - OVERFLOW_REF
}

fn corrupt(why: &str) -> Error {
    Error::corrupted(None, format!("tree page: {why}"))
}

#[inline]
fn u16_at(p: &[u8], o: usize) -> Result<u16> {
    p.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or_else(|| corrupt("field past the page"))
}
#[inline]
fn u32_at(p: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]])
}
#[inline]
pub(crate) fn u64_at(p: &[u8], o: usize) -> Result<u64> {
    p.get(o..o + 8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| corrupt("field past the page"))
}

/// A read-only view of a tree page.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    pub p: &'a [u8],
}

impl<'a> Node<'a> {
    pub(crate) fn new(p: &'a [u8]) -> Node<'a> {
        Node { p }
    }
    #[inline]
    pub(crate) fn count(&self) -> usize {
        u16::from_le_bytes([self.p[OFF_COUNT], self.p[OFF_COUNT + 1]]) as usize
    }
    #[inline]
    pub(crate) fn level(&self) -> u16 {
        u16::from_le_bytes([self.p[OFF_LEVEL], self.p[OFF_LEVEL + 1]])
    }
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.level() == 0
    }
    pub(crate) fn upper(&self) -> usize {
        u32_at(self.p, OFF_UPPER) as usize
    }
    pub(crate) fn garbage(&self) -> usize {
        u32_at(self.p, OFF_GARBAGE) as usize
    }
    /// Bytes used by slots and live entries. Saturating: `upper` and `garbage` come from the
    /// page (a damaged `upper` past the page counts as an empty entry area; the accessors and
    /// `compact`/`insert_raw` then report the damage).
    pub(crate) fn used(&self) -> usize {
        self.p.len().saturating_sub(self.upper()).saturating_sub(self.garbage()) + 2 * self.count()
    }
    /// The start of the entry area, checked: inside the page and past the slots.
    pub(crate) fn checked_upper(&self) -> Result<usize> {
        let u = self.upper();
        if u > self.p.len() || u < SLOTS + 2 * self.count() {
            return Err(corrupt("entry area start (upper) outside [slots end, page size]"));
        }
        Ok(u)
    }
    #[inline]
    fn slot(&self, i: usize) -> Result<usize> {
        Ok(u16_at(self.p, SLOTS + 2 * i)? as usize)
    }
    /// The key of entry `i` (leaf or branch).
    #[inline]
    pub(crate) fn key(&self, i: usize) -> Result<&'a [u8]> {
        let o = self.slot(i)?;
        let klen = u16_at(self.p, o)? as usize;
        let start = o + if self.is_leaf() { LEAF_ENTRY_HEADER } else { BRANCH_ENTRY_HEADER };
        self.p.get(start..start + klen).ok_or_else(|| corrupt("key past the page"))
    }
    /// A leaf entry's flags and stored value.
    #[inline]
    pub(crate) fn value(&self, i: usize) -> Result<(u8, &'a [u8], usize)> {
        let o = self.slot(i)?;
        let klen = u16_at(self.p, o)? as usize;
        let vlen = u16_at(self.p, o + 2)? as usize;
        let flags = *self.p.get(o + 4).ok_or_else(|| corrupt("flags past the page"))?;
        let start = o + LEAF_ENTRY_HEADER + klen;
        let v = self.p.get(start..start + vlen).ok_or_else(|| corrupt("value past the page"))?;
        Ok((flags, v, start))
    }
    /// A branch entry's child.
    #[inline]
    pub(crate) fn child(&self, i: usize) -> Result<u64> {
        let o = self.slot(i)?;
        u64_at(self.p, o + 2)
    }
    /// Size of entry `i` in the entry area (without its slot).
    pub(crate) fn entry_size(&self, i: usize) -> Result<usize> {
        let o = self.slot(i)?;
        let klen = u16_at(self.p, o)? as usize;
        Ok(if self.is_leaf() {
            LEAF_ENTRY_HEADER + klen + u16_at(self.p, o + 2)? as usize
        } else {
            BRANCH_ENTRY_HEADER + klen
        })
    }
    /// The raw bytes of entry `i`.
    pub(crate) fn entry(&self, i: usize) -> Result<&'a [u8]> {
        let o = self.slot(i)?;
        let n = self.entry_size(i)?;
        self.p.get(o..o + n).ok_or_else(|| corrupt("entry past the page"))
    }
    /// Leaf: position of `key` (`Ok(i)` found, `Err(i)` insertion point).
    #[inline]
    pub(crate) fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        self.search_hinted(key, true)
    }
    /// `search` in a page whose every line the caller has already hinted into the cache
    /// (`btree::descend_to` does on the leaf it reaches): no per-probe hints.
    #[inline]
    pub(crate) fn search_loaded(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        self.search_hinted(key, false)
    }
    #[inline(always)]
    fn search_hinted(&self, key: &[u8], hints: bool) -> Result<std::result::Result<usize, usize>> {
        let p = self.p;
        let slots = slot_array(p, self.count())?;
        let (mut lo, mut hi) = (0usize, slots.len() / 2);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if hints {
                prefetch_probes(p, slots, lo, mid, hi);
            }
            let k = key_at(p, slots, mid, LEAF_ENTRY_HEADER).ok_or_else(|| corrupt("key past the page"))?;
            match compare(k, key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }
    /// Branch: the child index whose range holds `key` (last entry with key <= `key`; entry 0 is
    /// minus infinity).
    #[inline]
    pub(crate) fn child_index(&self, key: &[u8]) -> Result<usize> {
        self.child_index_hinted(key, true)
    }
    /// `child_index` without per-probe hints, for a page whose probed lines are in the cache:
    /// the root, which every descent searches (its first probes land on the same lines each time).
    #[inline]
    pub(crate) fn child_index_cached(&self, key: &[u8]) -> Result<usize> {
        self.child_index_hinted(key, false)
    }
    #[inline(always)]
    fn child_index_hinted(&self, key: &[u8], hints: bool) -> Result<usize> {
        let p = self.p;
        let n = self.count();
        if n == 0 {
            return Err(corrupt("empty branch"));
        }
        let slots = slot_array(p, n)?;
        let (mut lo, mut hi) = (1usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if hints {
                prefetch_probes(p, slots, lo, mid, hi);
            }
            let k = key_at(p, slots, mid, BRANCH_ENTRY_HEADER).ok_or_else(|| corrupt("key past the page"))?;
            if compare(k, key) != std::cmp::Ordering::Greater {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo - 1)
    }
}

/// The slot array of a page of `n` entries, bounds-checked once for a whole binary search (a
/// count whose slots run past the page is `Corrupted`).
#[inline(always)]
fn slot_array(p: &[u8], n: usize) -> Result<&[u8]> {
    p.get(SLOTS..SLOTS + 2 * n).ok_or_else(|| corrupt("slot array past the page"))
}

/// Entry offset in slot `i` of `slots` (`None` past the array).
#[inline(always)]
fn slot_in(slots: &[u8], i: usize) -> Option<usize> {
    slots.get(2 * i..2 * i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
}

/// Start loading the entries a binary search probes after `mid` (one of `(lo + mid) / 2` and
/// `(mid + 1 + hi) / 2`), so that their cache misses overlap the comparison at `mid`. Without
/// tests: when a candidate is `mid` itself or `hi`, the hint is only wasted (a line already
/// loaded, or one entry past the range), never wrong.
#[inline(always)]
fn prefetch_probes(p: &[u8], slots: &[u8], lo: usize, mid: usize, hi: usize) {
    for i in [(lo + mid) / 2, (mid + 1 + hi) / 2] {
        if let Some(o) = slot_in(slots, i) {
            crate::data::page::prefetch(p, o);
        }
    }
}

/// Key `i` of a page whose entries have `hdr`-byte headers; `None` when out of bounds.
#[inline(always)]
fn key_at<'p>(p: &'p [u8], slots: &[u8], i: usize, hdr: usize) -> Option<&'p [u8]> {
    let o = slot_in(slots, i)?;
    let klen = u16::from_le_bytes([*p.get(o)?, *p.get(o + 1)?]) as usize;
    p.get(o + hdr..o + hdr + klen)
}

/// Byte-wise key order, comparing 8 bytes at a time without a library call (keys are short).
#[inline(always)]
pub(crate) fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().expect("8"));
        let y = u64::from_be_bytes(b[i..i + 8].try_into().expect("8"));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// Initialise an empty tree page body.
pub(crate) fn init(p: &mut [u8], level: u16) {
    let ps = p.len();
    p[OFF_COUNT..OFF_COUNT + 2].copy_from_slice(&0u16.to_le_bytes());
    p[OFF_LEVEL..OFF_LEVEL + 2].copy_from_slice(&level.to_le_bytes());
    p[OFF_UPPER..OFF_UPPER + 4].copy_from_slice(&(ps as u32).to_le_bytes());
    p[OFF_GARBAGE..OFF_GARBAGE + 4].copy_from_slice(&0u32.to_le_bytes());
}

fn set_count(p: &mut [u8], n: usize) {
    p[OFF_COUNT..OFF_COUNT + 2].copy_from_slice(&(n as u16).to_le_bytes());
}
fn set_upper(p: &mut [u8], u: usize) {
    p[OFF_UPPER..OFF_UPPER + 4].copy_from_slice(&(u as u32).to_le_bytes());
}
fn set_garbage(p: &mut [u8], g: usize) {
    p[OFF_GARBAGE..OFF_GARBAGE + 4].copy_from_slice(&(g as u32).to_le_bytes());
}

/// Contiguous free bytes between the slots and the entry area.
pub(crate) fn gap(p: &[u8]) -> usize {
    let n = Node::new(p);
    n.upper().saturating_sub(SLOTS + 2 * n.count())
}

/// Whether an entry of `size` bytes (plus its slot) fits, possibly after compaction.
pub(crate) fn fits(p: &[u8], size: usize) -> bool {
    gap(p) + Node::new(p).garbage() >= size + 2
}

/// Rewrite the entry area without garbage.
pub(crate) fn compact(p: &mut [u8]) -> Result<()> {
    let ps = p.len();
    let tmp = p.to_vec();
    let n = Node::new(&tmp);
    let slots_end = SLOTS + 2 * n.count();
    if slots_end > ps {
        return Err(corrupt("slot count past the page"));
    }
    let mut upper = ps;
    for i in 0..n.count() {
        let e = n.entry(i)?;
        // Entries that overlap (a damaged slot) can add up to more than the page holds.
        upper = match upper.checked_sub(e.len()) {
            Some(u) if u >= slots_end => u,
            _ => return Err(corrupt("entries do not fit in the page")),
        };
        p[upper..upper + e.len()].copy_from_slice(e);
        p[SLOTS + 2 * i..SLOTS + 2 * i + 2].copy_from_slice(&(upper as u16).to_le_bytes());
    }
    set_upper(p, upper);
    set_garbage(p, 0);
    Ok(())
}

/// Insert a raw entry at index `i`. The caller checked `fits`. Returns the ranges written: the
/// node header, the slots from `i` on, the new entry (everything after the page header when the
/// entry area had to be compacted first).
pub(crate) fn insert_raw(p: &mut [u8], i: usize, size: usize, write: impl FnOnce(&mut [u8])) -> Result<Written> {
    let mut written: Written = smallvec![NODE_HEADER];
    if gap(p) < size + 2 {
        compact(p)?;
        written = smallvec![(PAGE_HEADER, p.len())];
    }
    let n = Node::new(p).count();
    let upper = Node::new(p).checked_upper()?;
    if i > n || gap(p) < size + 2 {
        return Err(corrupt("insert without room"));
    }
    let upper = upper - size;
    write(&mut p[upper..upper + size]);
    let s = SLOTS + 2 * i;
    p.copy_within(s..SLOTS + 2 * n, s + 2);
    p[s..s + 2].copy_from_slice(&(upper as u16).to_le_bytes());
    set_upper(p, upper);
    set_count(p, n + 1);
    written.push((s, SLOTS + 2 * (n + 1)));
    written.push((upper, upper + size));
    Ok(written)
}

pub(crate) fn leaf_entry_size(key: &[u8], val_len: usize) -> usize {
    LEAF_ENTRY_HEADER + key.len() + val_len
}

/// Write a leaf entry into `dst` (exactly `leaf_entry_size` bytes).
pub(crate) fn write_leaf_entry(dst: &mut [u8], key: &[u8], flags: u8, val: &[u8]) {
    dst[0..2].copy_from_slice(&(key.len() as u16).to_le_bytes());
    dst[2..4].copy_from_slice(&(val.len() as u16).to_le_bytes());
    dst[4] = flags;
    dst[5..5 + key.len()].copy_from_slice(key);
    dst[5 + key.len()..].copy_from_slice(val);
}

pub(crate) fn insert_leaf(p: &mut [u8], i: usize, key: &[u8], flags: u8, val: &[u8]) -> Result<Written> {
    let size = leaf_entry_size(key, val.len());
    insert_raw(p, i, size, |d| write_leaf_entry(d, key, flags, val))
}

pub(crate) fn branch_entry_size(key: &[u8]) -> usize {
    BRANCH_ENTRY_HEADER + key.len()
}

pub(crate) fn write_branch_entry(dst: &mut [u8], key: &[u8], child: u64) {
    dst[0..2].copy_from_slice(&(key.len() as u16).to_le_bytes());
    dst[2..10].copy_from_slice(&child.to_le_bytes());
    dst[10..].copy_from_slice(key);
}

pub(crate) fn insert_branch(p: &mut [u8], i: usize, key: &[u8], child: u64) -> Result<Written> {
    insert_raw(p, i, branch_entry_size(key), |d| write_branch_entry(d, key, child))
}

/// Remove entry `i` (its bytes become garbage). Returns the ranges written: the node header and
/// the slots from `i` on.
pub(crate) fn remove(p: &mut [u8], i: usize) -> Result<Written> {
    let node = Node::new(p);
    let n = node.count();
    if i >= n || SLOTS + 2 * n > p.len() {
        return Err(corrupt("remove past the end"));
    }
    let size = node.entry_size(i)?;
    let g = node.garbage() + size;
    let s = SLOTS + 2 * i;
    p.copy_within(s + 2..SLOTS + 2 * n, s);
    set_count(p, n - 1);
    set_garbage(p, g);
    if n == 1 {
        // Empty: reset the entry area.
        let ps = p.len();
        set_upper(p, ps);
        set_garbage(p, 0);
    }
    Ok(smallvec![NODE_HEADER, (s, SLOTS + 2 * n)])
}

/// Overwrite the stored value bytes of leaf entry `i` in place (same length). Returns the range
/// written.
pub(crate) fn set_value_in_place(p: &mut [u8], i: usize, val: &[u8]) -> Result<Written> {
    let (_, v, start) = Node::new(p).value(i)?;
    if v.len() != val.len() {
        return Err(corrupt("in-place value of another size"));
    }
    p[start..start + val.len()].copy_from_slice(val);
    Ok(smallvec![(start, start + val.len())])
}

/// Fill an empty page with raw entries (already encoded), in order.
pub(crate) fn fill(p: &mut [u8], entries: &[&[u8]]) -> Result<()> {
    let mut upper = p.len();
    for (i, e) in entries.iter().enumerate() {
        if upper < e.len() || upper - e.len() < SLOTS + 2 * (i + 1) {
            return Err(corrupt("entries do not fit"));
        }
        upper -= e.len();
        p[upper..upper + e.len()].copy_from_slice(e);
        p[SLOTS + 2 * i..SLOTS + 2 * i + 2].copy_from_slice(&(upper as u16).to_le_bytes());
    }
    set_count(p, entries.len());
    set_upper(p, upper);
    set_garbage(p, 0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_is_the_byte_order() {
        // Lengths around the 8-byte words, prefixes of each other, and differences in every
        // position, against the slices' own order.
        let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
        for len in [1usize, 7, 8, 9, 15, 16, 17, 24] {
            for pos in [0, len / 2, len - 1] {
                for byte in [0u8, 1, 0x7f, 0x80, 0xff] {
                    let mut k = vec![0x41u8; len];
                    k[pos] = byte;
                    keys.push(k);
                }
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(compare(a, b), a.as_slice().cmp(b.as_slice()), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn insert_search_remove_compact() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 0);
        for (i, k) in [b"b".as_slice(), b"d", b"a", b"c"].iter().enumerate() {
            let pos = Node::new(&p).search(k).unwrap().unwrap_err();
            insert_leaf(&mut p, pos, k, 0, &[i as u8; 10]).unwrap();
        }
        let n = Node::new(&p);
        assert_eq!(n.count(), 4);
        let keys: Vec<&[u8]> = (0..4).map(|i| n.key(i).unwrap()).collect();
        assert_eq!(keys, vec![b"a".as_slice(), b"b", b"c", b"d"]);
        assert_eq!(n.search(b"c").unwrap(), Ok(2));
        assert_eq!(n.search(b"bb").unwrap(), Err(2));
        // The variant without per-probe hints finds the same positions.
        for k in [b"a".as_slice(), b"bb", b"c", b"d", b"e", b""] {
            assert_eq!(n.search_loaded(k).unwrap(), n.search(k).unwrap(), "{k:?}");
        }
        assert_eq!(n.search_loaded(b"d").unwrap(), Ok(3));
        assert_eq!(n.value(0).unwrap().1, &[2u8; 10]);
        remove(&mut p, 1).unwrap();
        assert_eq!(Node::new(&p).garbage(), 16);
        compact(&mut p).unwrap();
        let n = Node::new(&p);
        assert_eq!(n.garbage(), 0);
        assert_eq!(n.key(1).unwrap(), b"c");
        assert_eq!(n.value(2).unwrap().1, &[1u8; 10]);
        assert_eq!(max_key_size(4096), 2001);
    }

    #[test]
    fn branch_child_index() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 1);
        insert_branch(&mut p, 0, b"", 10).unwrap();
        insert_branch(&mut p, 1, b"m", 11).unwrap();
        insert_branch(&mut p, 2, b"t", 12).unwrap();
        let n = Node::new(&p);
        assert_eq!(n.child_index(b"a").unwrap(), 0);
        assert_eq!(n.child_index(b"m").unwrap(), 1);
        assert_eq!(n.child_index(b"s").unwrap(), 1);
        assert_eq!(n.child_index(b"z").unwrap(), 2);
        for k in [b"".as_slice(), b"a", b"m", b"n", b"s", b"t", b"z", b"zz"] {
            assert_eq!(n.child_index_cached(k).unwrap(), n.child_index(k).unwrap(), "{k:?}");
        }
        assert_eq!(n.child(2).unwrap(), 12);
    }

    #[test]
    fn malformed_pages_are_errors() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 0);
        insert_leaf(&mut p, 0, b"k", 0, b"v").unwrap();
        // Point the slot past the page.
        p[SLOTS..SLOTS + 2].copy_from_slice(&4095u16.to_le_bytes());
        let n = Node::new(&p);
        assert!(n.key(0).is_err() || n.value(0).is_err());
        // A count larger than the slots can hold.
        p[OFF_COUNT..OFF_COUNT + 2].copy_from_slice(&60000u16.to_le_bytes());
        assert!(Node::new(&p).search(b"zzz").is_err());
    }

    /// The ranges each change reports cover every byte it changed (the journal diffs nothing
    /// else of the page): random inserts (some needing compaction), removals and in-place value
    /// changes on one leaf, in a fixed pseudo-random sequence.
    #[test]
    fn reported_ranges_cover_every_changed_byte() {
        let mut rnd = crate::test_rng(0x2545_f491_4f6c_dd1du64);
        let mut p = vec![0u8; 4096];
        init(&mut p, 0);
        let (mut compacted, mut ops) = (0, 0);
        for step in 0..20_000 {
            let before = p.clone();
            let n = Node::new(&p).count();
            let written = match rnd() % 4 {
                0 if n > 0 => remove(&mut p, (rnd() % n as u64) as usize).unwrap(),
                1 if n > 0 => {
                    let i = (rnd() % n as u64) as usize;
                    let len = Node::new(&p).value(i).unwrap().1.len();
                    let v: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
                    set_value_in_place(&mut p, i, &v).unwrap()
                }
                _ => {
                    let key = (rnd() % 1_000_000).to_be_bytes();
                    let val: Vec<u8> = (0..rnd() % 300).map(|_| rnd() as u8).collect();
                    let size = leaf_entry_size(&key, val.len());
                    if !fits(&p, size) {
                        // Full: start over with an empty leaf.
                        init(&mut p, 0);
                        continue;
                    }
                    let Err(i) = Node::new(&p).search(&key).unwrap() else { continue };
                    if gap(&p) < size + 2 {
                        compacted += 1;
                    }
                    insert_leaf(&mut p, i, &key, 0, &val).unwrap()
                }
            };
            ops += 1;
            for (b, (old, new)) in before.iter().zip(&p).enumerate() {
                if old != new {
                    assert!(
                        written.iter().any(|&(lo, hi)| lo <= b && b < hi),
                        "step {step}: byte {b} changed outside the reported ranges {written:?}"
                    );
                }
            }
        }
        assert!(compacted > 10 && ops > 10_000, "compactions {compacted}, changes {ops}: too few");
    }
}
