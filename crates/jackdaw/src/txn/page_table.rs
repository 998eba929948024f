//! The page table: committed page versions that are not yet in the data file (MVCC).
//!
//! Invariants:
//! 1. For every page, versions are in ascending transaction order.
//! 2. A version is removed only after the flusher wrote the newest version `<= T` of that page to
//!    the data file (and `T` is at most the oldest live snapshot), so a snapshot that finds no
//!    version `<= its id` here is served the right bytes by the data file.
//! 3. `count` is the number of pages with versions; zero lets readers skip the lock entirely.
//!    Likewise each page's bit in `slots` (`SlotChunk::held`) is set while the table holds a
//!    version of it (set under the write lock, with `count`, before the versions can be read;
//!    cleared after they are removed): a reader that finds its page's bit clear skips the slot
//!    and the lock, so pages the table does not hold (overflow chains written once, most of a
//!    large database) cost one bit of a bitmap that stays in cache (a bit per page: 64 KiB for
//!    2 GiB of 4 KiB pages), not a slot's line, while others have versions in memory. Pages
//!    past the slots' last chunk have no bit: while the table holds any page, they are looked
//!    up under the lock.
//! 4. A page keeps every version newer than the last visible transaction (prepared transactions
//!    become visible in order, and snapshots will start at each of them), and below that only the
//!    versions some snapshot may still read: the newest one at or below each live snapshot and at
//!    or below the last visible transaction. Older versions are dropped when a new one is
//!    published, so memory grows with the pages changed, not with the number of commits.
//! 5. A snapshot reads a version in place, with no reference count of its own (`lookup_in`):
//!    the image stays allocated, unchanged, while the `Era` its view holds lives. Versions
//!    `publish` drops are ones no snapshot reads (invariant 4: a snapshot that found one still
//!    needs it), so they are pooled at once. Versions `retire` removes may still be read by a
//!    snapshot (the data file now serves the same bytes to the snapshots that look later): they
//!    join the era current then, which a newer era replaces; an era frees its images when it is
//!    dropped, and each era holds the one after it, so an image lives until every view made with
//!    its era or an earlier one is gone. Lookups and removals are ordered by the map's lock, and
//!    a view's era is taken before its lookups: an image found through a view was retired into
//!    that view's era or a later one.
//! 6. `slots` mirrors each page's newest version (`sys::ImageSlot`: its transaction id and
//!    image, or empty when the page has no version), updated under the map's write lock with
//!    every change of a page's newest version, before the lock is released. A view whose
//!    snapshot is at or after that id reads the image there with no lock; any other lookup
//!    (an older version wanted, the slot being rewritten) takes the lock. Taken from the slot,
//!    an image is held to the same era rule as one found under the lock: a retire clears the
//!    slot before the retired versions join the era current then, and a view takes its era
//!    before it reads slots, so a view that still read the image took an era that keeps it
//!    (the era lock orders the two); and `publish` never drops a page's newest version at or
//!    below the last visible transaction, the only one a slot hands to a snapshot.

use crate::storage::sys::{ImageSlot, Images, SlotRead};
use crate::sync::{AtomicU64, AtomicUsize};
use crate::sync::{Mutex, ShardedRwLock};
use crate::{PageNo, TxId};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A page image (`sys::PageBuf`: shared by reference count, from the table's `Images`); a
/// committed version is never written again.
pub(crate) use crate::storage::sys::PageBuf;

/// The versions of one page, oldest first. Most pages have exactly one, kept inline in the map's
/// slot. A lookup under the lock touches the slot, the image's handle (its reference counts and
/// address) and the image; views mostly read the image through `slots` (invariant 6) instead.
type Versions = SmallVec<[(TxId, PageBuf); 1]>;

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
/// A set of page numbers, hashed as `PgnoMap`'s keys (std's default SipHash cost a commit of 162
/// pages written once ~70 k instructions in its lookups alone).
pub(crate) type PgnoSet = std::collections::HashSet<u64, BuildHasherDefault<PgnoHasher>>;
/// The page table's map: page number -> versions (hashed as `PgnoMap`'s `u64` keys are).
type VersionMap = HashMap<PageNo, Versions, BuildHasherDefault<PgnoHasher>>;

/// Whether a page's versions are pruned before a new one is added (invariant 4). Up to 8
/// versions: always (exact, and cheap). Past that only once they are more than twice what a
/// prune could keep (the needed snapshot ids from the oldest version up, `visible`, and the
/// versions newer than `visible`): with thousands of snapshots at distinct ids, a hot page holds thousands of
/// versions, and pruning all of them at every commit made a commit cost grow with the number of
/// snapshots (faults issue §6: 5 us with none, 975 us with 10,000 over 2,000 ids). So the work
/// is amortised to O(1) per publish, and a page keeps at most twice the versions it needs.
fn prune_due(vs: &Versions, visible: TxId, needed: &[TxId]) -> bool {
    if vs.len() <= 8 {
        return true;
    }
    let first = vs[0].0;
    let in_range = needed.partition_point(|s| *s <= visible) - needed.partition_point(|s| *s < first);
    let above = vs.len() - vs.partition_point(|(t, _)| *t <= visible);
    vs.len() > 2 * (in_range + above + 1)
}

/// The newest version of `pgno` at or before `txid` in `m`; with `whole`, every line of it starts
/// loading (see `lookup`).
#[inline(always)]
fn newest(m: &VersionMap, pgno: PageNo, txid: TxId, whole: bool) -> Option<&PageBuf> {
    let (_, b) = m.get(&pgno)?.iter().rev().find(|(t, _)| *t <= txid)?;
    if whole {
        crate::data::page::prefetch_all(b);
    }
    Some(b)
}

/// Slots per chunk of `Slots` (1 MiB of slots, 256 MiB of 4 KiB pages; small under shuttle,
/// whose atomics are heavy), and chunks: pages past `SLOT_CHUNKS << SLOT_CHUNK_BITS` (1 TiB of
/// 4 KiB pages) are always looked up under the lock.
const SLOT_CHUNK_BITS: u32 = if cfg!(feature = "shuttle") { 6 } else { 16 };
const SLOT_CHUNKS: usize = 1 << 12;

/// The slots and held bits of `1 << SLOT_CHUNK_BITS` consecutive pages.
struct SlotChunk {
    /// A bit per page: the table holds a version of it (invariant 3).
    held: Box<[AtomicU64]>,
    /// Each page's newest version (invariant 6).
    slots: Box<[ImageSlot]>,
}

impl SlotChunk {
    fn new() -> SlotChunk {
        let n = 1usize << SLOT_CHUNK_BITS;
        SlotChunk {
            held: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            slots: (0..n).map(|_| ImageSlot::default()).collect(),
        }
    }

    #[inline(always)]
    fn is_held(&self, i: usize) -> bool {
        self.held[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0
    }

    /// Set or clear page `i`'s held bit (writer only, under the map's write lock).
    fn set_held(&self, i: usize, held: bool) {
        let bit = 1u64 << (i % 64);
        if held {
            self.held[i / 64].fetch_or(bit, Ordering::Release);
        } else {
            self.held[i / 64].fetch_and(!bit, Ordering::Release);
        }
    }
}

/// What `ImageSlot::peek` says: empty, busy, or a transaction id and an image's address.
type SlotPeek = Option<Option<(u64, *const u8)>>;

/// Every page's newest-version slot (invariant 6) and held bit (invariant 3), by page number,
/// in chunks made when a page of theirs first gets a version (under the map's write lock, so
/// making one never waits).
struct Slots(Box<[std::sync::OnceLock<SlotChunk>]>);

impl Slots {
    fn new() -> Slots {
        Slots((0..SLOT_CHUNKS).map(|_| std::sync::OnceLock::new()).collect())
    }

    /// The chunk of `pgno` and the page's index in it; `None` past the last chunk.
    #[inline(always)]
    fn at(&self, pgno: PageNo) -> Option<(&std::sync::OnceLock<SlotChunk>, usize)> {
        let n = pgno.get();
        let chunk = self.0.get((n >> SLOT_CHUNK_BITS) as usize)?;
        Some((chunk, (n & ((1 << SLOT_CHUNK_BITS) - 1)) as usize))
    }

    /// Whether the table may hold a version of `pgno` (invariant 3): its bit, or true past the
    /// last chunk (those pages are always looked up under the lock).
    #[inline(always)]
    fn may_hold(&self, pgno: PageNo) -> bool {
        match self.at(pgno) {
            Some((chunk, i)) => chunk.get().is_some_and(|c| c.is_held(i)),
            None => true,
        }
    }

    /// What the slot of `pgno` tells a view at `txid` (see `sys::ImageSlot::read`).
    #[inline(always)]
    fn read<'a>(&self, pgno: PageNo, txid: TxId, len: usize, era: &'a Era) -> SlotRead<'a> {
        let Some((chunk, i)) = self.at(pgno) else {
            return SlotRead::Locked;
        };
        // A chunk not made yet: no page of it ever had a version (made before the first one
        // was published, so before any snapshot that could see it began).
        // The held bit is not tested again: callers asked `may_hold` first (a page whose bit
        // is clear has an empty slot too, invariant 6).
        match chunk.get() {
            Some(c) => c.slots[i].read(txid.get(), len, era),
            None => SlotRead::Absent,
        }
    }

    /// What the slot of `pgno` holds (`sys::ImageSlot::peek`) and its held bit; `None` past the
    /// last chunk.
    fn peek(&self, pgno: PageNo) -> Option<(SlotPeek, bool)> {
        let (chunk, i) = self.at(pgno)?;
        Some(chunk.get().map_or((None, false), |c| (c.slots[i].peek(), c.is_held(i))))
    }

    /// The chunk of `pgno`, made if need be, and the page's index in it (writer only); `None`
    /// past the last chunk.
    fn chunk(&self, pgno: PageNo) -> Option<(&SlotChunk, usize)> {
        let (chunk, i) = self.at(pgno)?;
        Some((chunk.get_or_init(SlotChunk::new), i))
    }

    /// The slot of `pgno`, its chunk made if need be (writer only); `None` past the last chunk.
    #[cfg(test)]
    fn slot(&self, pgno: PageNo) -> Option<&ImageSlot> {
        self.chunk(pgno).map(|(c, i)| &c.slots[i])
    }
}

pub(crate) struct PageTable {
    /// Read on every thread (a reader's lock is its thread's own: no line written in common),
    /// written by commits and flushes.
    map: ShardedRwLock<VersionMap>,
    /// Each page's newest version, for lookups without the lock (invariant 6).
    slots: Slots,
    /// The length of every image (the page size): slots hand out images of this length.
    image_len: usize,
    count: AtomicUsize,
    bytes: AtomicU64,
    /// Where new page images come from (huge-page slabs).
    images: Arc<Images>,
    pool: Arc<Pool>,
    /// The era retired versions join now (invariant 5), and how many eras came before it.
    era: Mutex<Arc<Era>>,
    era_gen: AtomicU64,
}

impl PageTable {
    /// A table of page images of `image_len` bytes, whose pool of buffers for the writer's
    /// copies may keep up to `pool_max` of them (4,096 at least).
    pub(crate) fn new(image_len: usize, pool_max: usize) -> PageTable {
        let pool = Arc::new(Pool {
            bufs: Mutex::default(),
            kept: AtomicU64::new(0),
            cap: AtomicUsize::new(POOL_MIN),
            max: pool_max.max(POOL_MIN),
        });
        PageTable {
            map: ShardedRwLock::default(),
            slots: Slots::new(),
            image_len,
            count: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            images: Images::new(image_len),
            era: Mutex::new(Arc::new(Era::new(pool.clone()))),
            pool,
            era_gen: AtomicU64::new(0),
        }
    }
}

/// Page buffers of dropped versions, for the writer's next copies (at most `cap`): in a steady
/// stream of commits no page buffer is allocated or freed.
struct Pool {
    bufs: Mutex<Vec<PageBuf>>,
    /// Bytes of the retired versions eras keep (invariant 5).
    kept: AtomicU64,
    /// How many buffers the pool keeps: as many as the last flush retired (at least `POOL_MIN`,
    /// at most `max`), since the commits before the next flush copy about as many pages for the
    /// first time; back to `POOL_MIN` when the writer goes idle (`trim_pool`). A fixed 4,096
    /// left the commits between two flushes of `fill-rnd-tx` (tens of thousands of first copies)
    /// taking a fifth of their buffers from `malloc`, which grew the heap page by page (faults,
    /// `mprotect`) after each flush had freed the excess.
    cap: AtomicUsize,
    /// The largest `cap` (the table's `pool_max`, at least `POOL_MIN`).
    max: usize,
}

impl Pool {
    /// Keep at most `cap` buffers from now on; free those past it now (a flush after a burst of
    /// big commits is followed by small ones: the burst's buffers are not kept for them).
    fn set_cap(&self, cap: usize) {
        let cap = cap.clamp(POOL_MIN, self.max);
        self.cap.store(cap, Ordering::Relaxed);
        let extra = {
            let mut bufs = self.bufs.lock();
            let keep = bufs.len().min(cap);
            bufs.split_off(keep)
        };
        drop(extra);
    }

    /// Keep the buffers nothing else holds, up to `cap`; free the others.
    fn give(&self, dropped: Vec<PageBuf>) {
        let cap = self.cap.load(Ordering::Relaxed);
        let mut pool = self.bufs.lock();
        for mut b in dropped {
            if pool.len() >= cap {
                break;
            }
            if b.is_unique() {
                pool.push(b);
            }
        }
    }
}

/// A span of retires, for the views made while it was current (invariant 5).
pub(crate) struct Era {
    /// Set when the era stops being current: the versions retired then, kept for the views made
    /// with it or an earlier era, and the era after it, which it holds.
    after: Mutex<Option<(Vec<PageBuf>, Arc<Era>)>>,
    pool: Arc<Pool>,
}

impl Era {
    fn new(pool: Arc<Pool>) -> Era {
        Era { after: Mutex::new(None), pool }
    }
}

impl Drop for Era {
    /// Pool the versions this era kept, then do the same for the eras after it that nothing
    /// else holds, one by one: a snapshot held across thousands of flushes holds a chain as
    /// long, which a recursive drop would follow on the stack.
    fn drop(&mut self) {
        let mut after = self.after.lock().take();
        while let Some((retired, next)) = after {
            self.pool.kept.fetch_sub(retired.iter().map(|b| b.len() as u64).sum(), Ordering::Relaxed);
            self.pool.give(retired);
            after = Arc::try_unwrap(next).ok().and_then(|e| e.after.lock().take());
        }
    }
}

/// Buffers the pool keeps at least (16 MiB of 4 KiB pages), and all it keeps while the writer is
/// idle.
const POOL_MIN: usize = 4096;

impl PageTable {
    /// The newest version of `pgno` committed at or before `txid`, with a reference of its own
    /// (the flusher's writes; views read versions in place through `lookup_in`).
    pub(crate) fn get(&self, pgno: PageNo, txid: TxId) -> Option<PageBuf> {
        if !self.may_hold(pgno) {
            return None;
        }
        newest(&self.map.read(), pgno, txid, false).cloned()
    }

    /// Whether the table may hold versions of `pgno`, from the atomics alone (invariant 3).
    #[inline(always)]
    fn may_hold(&self, pgno: PageNo) -> bool {
        self.count.load(Ordering::Acquire) != 0 && self.slots.may_hold(pgno)
    }

    /// `lookup`, read in place for as long as `era` lives (invariant 5: `era` must be the one
    /// `era()` returned before this call), writing nothing: no reference count of the image.
    #[inline(always)]
    pub(crate) fn lookup_in<'a>(&self, pgno: PageNo, txid: TxId, whole: bool, era: &'a Era) -> Option<&'a [u8]> {
        if !self.may_hold(pgno) {
            return None;
        }
        self.find_in(pgno, txid, whole, era)
    }

    fn find_in<'a>(&self, pgno: PageNo, txid: TxId, whole: bool, era: &'a Era) -> Option<&'a [u8]> {
        match self.slots.read(pgno, txid, self.image_len, era) {
            SlotRead::Absent => None,
            SlotRead::Found(b) => {
                if whole {
                    crate::data::page::prefetch_all(b);
                }
                Some(b)
            }
            SlotRead::Locked => {
                newest(&self.map.read(), pgno, txid, whole).map(|b| crate::storage::sys::kept_for(b, era))
            }
        }
    }

    /// Whether the table holds a version of `pgno` at or before `txid`.
    pub(crate) fn holds(&self, pgno: PageNo, txid: TxId) -> bool {
        self.may_hold(pgno) && newest(&self.map.read(), pgno, txid, false).is_some()
    }

    /// The current era, for a view's lookups (invariant 5).
    pub(crate) fn era(&self) -> Arc<Era> {
        self.era.lock().clone()
    }

    /// How many eras came before the current one: a view made with an older one keeps images
    /// retired since.
    pub(crate) fn era_gen(&self) -> u64 {
        self.era_gen.load(Ordering::Acquire)
    }

    /// Publish transaction `txid`'s pages. `visible` is the last visible transaction; `needed`
    /// lists the live snapshots' ids, sorted: with `visible`, the ids that may read older
    /// versions. Superseded versions at or below `visible` that none of them reads are dropped
    /// (invariant 4).
    pub(crate) fn publish(&self, txid: TxId, pages: Vec<(PageNo, PageBuf)>, visible: TxId, needed: &[TxId]) {
        let mut dropped: Vec<PageBuf> = Vec::new();
        {
            let mut m = self.map.write();
            let mut added = 0u64;
            let mut removed = 0u64;
            for (pgno, buf) in pages {
                added += buf.len() as u64;
                let vs = m.entry(pgno).or_default();
                let chunk = self.slots.chunk(pgno);
                if vs.is_empty() {
                    if let Some((c, i)) = chunk {
                        c.set_held(i, true);
                    }
                }
                debug_assert!(vs.last().is_none_or(|(t, _)| *t < txid));
                if !vs.is_empty() && prune_due(vs, visible, needed) {
                    // Keep version i if it is the newest <= some needed snapshot: some s with
                    // t_i <= s < t_(i+1) (`needed` is sorted).
                    let keep: SmallVec<[bool; 8]> = (0..vs.len())
                        .map(|i| {
                            let t = vs[i].0;
                            let next = vs.get(i + 1).map_or(TxId::new(u64::MAX), |v| v.0);
                            let j = needed.partition_point(|s| *s < t);
                            t > visible || (t..next).contains(&visible) || needed.get(j).is_some_and(|s| *s < next)
                        })
                        .collect();
                    if keep.iter().any(|k| !k) {
                        let old = std::mem::take(vs);
                        for ((t, b), k) in old.into_iter().zip(keep) {
                            if k {
                                vs.push((t, b));
                            } else {
                                removed += b.len() as u64;
                                dropped.push(b);
                            }
                        }
                    }
                }
                if let Some((c, i)) = chunk {
                    c.slots[i].set(txid.get(), &buf, self.image_len);
                }
                vs.push((txid, buf));
            }
            self.count.store(m.len(), Ordering::Release);
            self.bytes.fetch_add(added, Ordering::Relaxed);
            self.bytes.fetch_sub(removed, Ordering::Relaxed);
        }
        // Page images are recycled (or freed) outside the lock.
        self.recycle(dropped);
    }

    /// Remove every version `<= txid` of `pages` (the data file now holds the newest of them).
    pub(crate) fn retire(&self, pages: &[PageNo], txid: TxId) {
        let mut dropped: Vec<PageBuf> = Vec::new();
        // In slices, so that the writer and readers are never held off for long.
        for chunk in pages.chunks(512) {
            let mut m = self.map.write();
            let mut freed = 0u64;
            for pgno in chunk {
                if let Some(vs) = m.get_mut(pgno) {
                    let keep = vs.iter().position(|(t, _)| *t > txid).unwrap_or(vs.len());
                    for (_, b) in vs.drain(..keep) {
                        freed += b.len() as u64;
                        dropped.push(b);
                    }
                    if vs.is_empty() {
                        if let Some((c, i)) = self.slots.chunk(*pgno) {
                            c.slots[i].clear();
                            c.set_held(i, false);
                        }
                        m.remove(pgno);
                    }
                }
            }
            self.count.store(m.len(), Ordering::Release);
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        if dropped.is_empty() {
            return;
        }
        self.pool.set_cap(dropped.len());
        // Invariant 5: into the current era, which a new one replaces; freed (or pooled) once
        // no view made with it or an earlier era remains (at once when there is none).
        self.pool.kept.fetch_add(dropped.iter().map(|b| b.len() as u64).sum(), Ordering::Relaxed);
        let next = Arc::new(Era::new(self.pool.clone()));
        let mut cur = self.era.lock();
        *cur.after.lock() = Some((dropped, next.clone()));
        *cur = next;
        self.era_gen.fetch_add(1, Ordering::Release);
    }

    /// A page buffer holding a copy of `src` (a page image: `image_len` bytes), not shared (so
    /// `get_mut` succeeds); from the pool when it has one.
    pub(crate) fn copy_of(&self, src: &[u8]) -> PageBuf {
        self.filled(|bytes| {
            let n = bytes.len().min(src.len());
            debug_assert_eq!(n, src.len(), "a page image of another length");
            bytes[..n].copy_from_slice(&src[..n]);
        })
    }

    /// A zeroed page buffer (`image_len` bytes), not shared; from the pool when it has one.
    pub(crate) fn zeroed(&self) -> PageBuf {
        self.filled(|bytes| bytes.fill(0))
    }

    /// A page buffer (`image_len` bytes), not shared, from the pool when it has one, whose
    /// bytes `fill` writes: every one of them (a pooled buffer holds an older image's bytes).
    /// Pooled buffers are unshared; were one shared (a bug), `fill` would not run and the
    /// caller's own `get_mut` would fail.
    pub(crate) fn filled(&self, fill: impl FnOnce(&mut [u8])) -> PageBuf {
        let mut b = self.unshared();
        if let Some(bytes) = b.get_mut() {
            fill(bytes);
        }
        b
    }

    /// An unshared buffer: pooled (pooled buffers are unique), else new.
    fn unshared(&self) -> PageBuf {
        self.pool.bufs.lock().pop().filter(|b| b.len() == self.image_len).unwrap_or_else(|| self.images.take())
    }

    /// Give buffers nothing else holds to the pool: versions no snapshot reads (invariant 5),
    /// and the pages a write transaction wrote to the data file itself (spilled, or written once
    /// at commit).
    pub(crate) fn recycle(&self, dropped: Vec<PageBuf>) {
        self.pool.give(dropped);
    }

    /// Invariant 6, for `Env::check` (with the writer and the flusher held still): every slot
    /// against the map. Returns each disagreement in words, with its page.
    pub(crate) fn check_slots(&self) -> Vec<(PageNo, String)> {
        let m = self.map.read();
        let mut problems = Vec::new();
        for (pgno, vs) in m.iter() {
            let Some((txid, newest)) = vs.last() else {
                problems.push((*pgno, "the page table holds a page with no version".to_string()));
                continue;
            };
            let Some((slot, held)) = self.slots.peek(*pgno) else { continue };
            if !held {
                problems.push((*pgno, "the page table holds a page whose held bit is clear".to_string()));
            }
            let fits = newest.len() == self.image_len;
            match slot {
                Some(Some((t, at))) if fits && t == txid.get() && at == newest.as_ptr() => {}
                Some(None) if !fits => {}
                other => problems.push((
                    *pgno,
                    format!(
                        "page table slot {} disagrees with the newest version (transaction {txid})",
                        match other {
                            None => "empty".to_string(),
                            Some(None) => "busy".to_string(),
                            Some(Some((t, _))) => format!("at transaction {t}"),
                        }
                    ),
                )),
            }
        }
        for (c, chunk) in self.slots.0.iter().enumerate() {
            let Some(chunk) = chunk.get() else { continue };
            for (i, slot) in chunk.slots.iter().enumerate() {
                let pgno = PageNo::new(((c as u64) << SLOT_CHUNK_BITS) + i as u64);
                if m.contains_key(&pgno) {
                    continue;
                }
                if slot.peek().is_some() {
                    problems.push((pgno, "page table slot set for a page with no version".to_string()));
                }
                if chunk.is_held(i) {
                    problems.push((pgno, "held bit set for a page with no version".to_string()));
                }
            }
        }
        problems
    }

    /// The writer is idle: keep at most `POOL_MIN` buffers from now on, free the others, and
    /// unmap the empty image slabs but one.
    pub(crate) fn trim_pool(&self) {
        self.pool.set_cap(POOL_MIN);
        self.images.trim();
    }

    /// Bytes of the page buffers the pool keeps for the writer's next copies.
    pub(crate) fn pooled_bytes(&self) -> u64 {
        (self.pool.bufs.lock().len() * self.image_len) as u64
    }

    /// Bytes of page images held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Bytes of retired page images kept for snapshots that may still read them (invariant 5).
    pub(crate) fn kept_bytes(&self) -> u64 {
        self.pool.kept.load(Ordering::Relaxed)
    }

    pub(crate) fn pages(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: u64) -> PageNo {
        PageNo::new(n)
    }
    fn x(n: u64) -> TxId {
        TxId::new(n)
    }
    fn v(pages: &[(u64, PageBuf)]) -> Vec<(PageNo, PageBuf)> {
        pages.iter().map(|(n, b)| (p(*n), b.clone())).collect()
    }

    /// An image of 16 bytes, all `b` (the tables of these tests hold 16-byte images).
    fn buf(b: u8) -> PageBuf {
        image(16, b)
    }

    /// An image of `len` bytes, all `b`, from one `Images` per length and thread.
    fn image(len: usize, b: u8) -> PageBuf {
        thread_local! {
            static IMAGES: std::cell::RefCell<HashMap<usize, Arc<Images>>> = Default::default();
        }
        let mut i = IMAGES.with(|m| m.borrow_mut().entry(len).or_insert_with(|| Images::new(len)).take());
        i.get_mut().unwrap().fill(b);
        i
    }

    #[test]
    fn versions_are_found_by_snapshot_and_retired() {
        let t = PageTable::new(16, usize::MAX);
        assert!(t.get(p(5), x(100)).is_none());
        t.publish(x(3), v(&[(5, buf(3)), (6, buf(3))]), x(2), &[x(2)]);
        t.publish(x(7), v(&[(5, buf(7))]), x(4), &[x(4)]);
        assert!(t.get(p(5), x(2)).is_none());
        assert_eq!(t.get(p(5), x(3)).unwrap()[0], 3);
        assert_eq!(t.get(p(5), x(6)).unwrap()[0], 3);
        assert_eq!(t.get(p(5), x(7)).unwrap()[0], 7);
        assert_eq!(t.bytes(), 48);
        t.retire(&[p(5), p(6)], x(3));
        assert!(t.get(p(6), x(10)).is_none());
        assert!(t.get(p(5), x(6)).is_none());
        assert_eq!(t.get(p(5), x(9)).unwrap()[0], 7);
        assert_eq!(t.pages(), 1);
        // Page 6's held bit is clear again, page 5's set, its neighbours' clear.
        assert!(!t.slots.may_hold(p(6)) && t.slots.may_hold(p(5)) && !t.slots.may_hold(p(4)));
        t.retire(&[p(5)], x(7));
        assert_eq!(t.pages(), 0);
        assert_eq!(t.bytes(), 0);
        let chunk = t.slots.0[0].get().expect("made by the first publish");
        assert!(chunk.held.iter().all(|w| w.load(Ordering::Relaxed) == 0));
        assert_eq!(t.check_slots(), vec![]);
    }

    fn pooled(t: &PageTable) -> usize {
        t.pool.bufs.lock().len()
    }

    /// Invariant 5: a version found through an era and then retired stays allocated and
    /// unchanged until that era is gone (the writer's copies never get its buffer meanwhile);
    /// then it goes to the pool. A view made after the retire keeps nothing.
    #[test]
    fn retired_versions_outlive_the_eras_that_may_read_them() {
        let t = PageTable::new(16, usize::MAX);
        t.publish(x(3), v(&[(5, buf(3)), (6, buf(6))]), x(2), &[x(2)]);
        let era = t.era();
        let seen = t.lookup_in(p(5), x(3), true, &era).expect("version 3 of page 5");
        assert_eq!(seen, &[3u8; 16][..]);
        t.retire(&[p(5)], x(3));
        assert!(t.lookup_in(p(5), x(3), false, &era).is_none(), "retired: the data file serves it now");
        assert_eq!(t.era_gen(), 1);
        assert_eq!(pooled(&t), 0, "a retired version went to the pool while an era that found it lived");
        assert_eq!((t.bytes(), t.kept_bytes()), (16, 16));
        // The writer's next copies come from the pool: none may be the image `seen` points at.
        let copies: Vec<PageBuf> = (0..4).map(|_| t.copy_of(&[9u8; 16])).collect();
        assert_eq!(seen, &[3u8; 16][..]);
        drop(copies);
        // A second retire while the first era lives: chained, kept too.
        t.retire(&[p(6)], x(3));
        assert_eq!(t.era_gen(), 2);
        assert_eq!(pooled(&t), 0);
        assert_eq!((t.bytes(), t.kept_bytes()), (0, 32));
        drop(era);
        assert_eq!(pooled(&t), 2, "both retired versions are pooled once no era that could read them is left");
        assert_eq!(t.kept_bytes(), 0);
        // With no view holding an era, a retired version is pooled at once.
        t.publish(x(4), v(&[(7, buf(4))]), x(3), &[x(3)]);
        t.retire(&[p(7)], x(4));
        assert_eq!(pooled(&t), 3);
    }

    /// Invariant 6: a view at or after a page's newest version reads it from the slot; an older
    /// one gets the version it needs under the lock; a retire empties the slot, so the data file
    /// serves the page again; a page past the slots' range and an image of another length are
    /// served under the lock.
    #[test]
    fn slots_serve_the_newest_version_and_leave_older_ones_to_the_lock() {
        let t = PageTable::new(16, usize::MAX);
        let era = t.era();
        let far = (SLOT_CHUNKS as u64) << SLOT_CHUNK_BITS;
        t.publish(x(3), v(&[(5, buf(3)), (far + 1, buf(3))]), x(2), &[x(2)]);
        t.publish(x(7), v(&[(5, buf(7)), (6, image(8, 7))]), x(3), &[x(3)]);
        let seen = |pg: u64, at: u64| t.lookup_in(p(pg), x(at), true, &era).map(|b| (b[0], b.len()));
        assert_eq!(seen(5, 9), Some((7, 16)));
        assert_eq!(seen(5, 7), Some((7, 16)));
        assert_eq!(seen(5, 6), Some((3, 16)), "a snapshot before the newest version reads the one before");
        assert_eq!(seen(5, 2), None);
        assert_eq!(seen(far + 1, 3), Some((3, 16)), "a page past the slots is looked up under the lock");
        assert_eq!(seen(6, 7), Some((7, 8)), "an image of another length is looked up under the lock");
        assert!(matches!(t.slots.read(p(6), x(7), 16, &era), SlotRead::Locked));
        assert!(matches!(t.slots.read(p(5), x(7), 16, &era), SlotRead::Found(_)));
        assert_eq!(t.check_slots(), vec![]);
        t.retire(&[p(5)], x(3));
        assert_eq!(seen(5, 6), None, "retired: the data file serves it now");
        assert_eq!(seen(5, 7), Some((7, 16)));
        t.retire(&[p(5), p(6), p(far + 1)], x(7));
        assert_eq!((seen(5, 9), seen(6, 9), seen(far + 1, 9)), (None, None, None));
        assert!(matches!(t.slots.read(p(5), x(9), 16, &era), SlotRead::Absent));
        assert!(matches!(t.slots.read(p(1 << SLOT_CHUNK_BITS), x(9), 16, &era), SlotRead::Absent));
        // Published again later: the slot holds the new version.
        t.publish(x(9), v(&[(5, buf(9))]), x(8), &[x(8)]);
        assert_eq!(seen(5, 9), Some((9, 16)));
        assert_eq!(seen(5, 8), None);
        assert_eq!(t.check_slots(), vec![]);
        // `check_slots` finds a held bit that disagrees with the map, either way (invariant 3),
        // and a page whose bit is clear is served by the data file.
        let (c, i5) = t.slots.chunk(p(5)).expect("in range");
        let (c8, i8) = t.slots.chunk(p(8)).expect("in range");
        c.set_held(i5, false);
        c8.set_held(i8, true);
        assert_eq!(seen(5, 9), None, "a clear held bit sends the read to the data file");
        let found = t.check_slots();
        assert_eq!(found.iter().map(|(pg, _)| pg.get()).collect::<Vec<_>>(), vec![5, 8], "{found:?}");
        assert!(found[0].1.contains("held bit is clear") && found[1].1.contains("held bit set"), "{found:?}");
        c.set_held(i5, true);
        c8.set_held(i8, false);
        assert_eq!(t.check_slots(), vec![]);
        // `check_slots` finds a slot that disagrees with the map, either way.
        t.slots.slot(p(5)).expect("in range").clear();
        t.slots.slot(p(8)).expect("in range").set(9, &[0u8; 16], 16);
        let found = t.check_slots();
        assert_eq!(found.iter().map(|(pg, _)| pg.get()).collect::<Vec<_>>(), vec![5, 8], "{found:?}");
        assert!(found[0].1.contains("empty") && found[1].1.contains("no version"), "{found:?}");
    }

    /// An era held across 200,000 retires frees the whole chain when dropped (one by one: a
    /// recursive drop would overflow the stack).
    #[test]
    fn a_long_chain_of_eras_is_freed_without_recursion() {
        let t = PageTable::new(16, usize::MAX);
        let first = t.era();
        for i in 0..200_000u64 {
            t.publish(x(i + 1), v(&[(5, buf(1))]), x(i), &[x(i)]);
            t.retire(&[p(5)], x(i + 1));
        }
        assert_eq!(t.era_gen(), 200_000);
        assert_eq!(pooled(&t), 0);
        drop(first);
        assert_eq!(pooled(&t), POOL_MIN.min(200_000));
    }

    /// The pool keeps as many buffers as the last retire freed (at least `POOL_MIN`), frees the
    /// excess when a smaller retire follows, and goes back to `POOL_MIN` when trimmed.
    #[test]
    fn the_pool_keeps_what_the_last_retire_freed() {
        let t = PageTable::new(16, usize::MAX);
        let pages = |from: u64, n: u64| (from..from + n).map(|n| (p(n), buf(1))).collect::<Vec<_>>();
        let nums = |from: u64, n: u64| (from..from + n).map(p).collect::<Vec<_>>();
        t.publish(x(1), pages(10, 10_000), x(0), &[x(0)]);
        t.retire(&nums(10, 10_000), x(1));
        assert_eq!(pooled(&t), 10_000);
        assert_eq!(t.pooled_bytes(), 160_000);
        t.publish(x(2), pages(10, 5_000), x(1), &[x(1)]);
        t.retire(&nums(10, 5_000), x(2));
        assert_eq!(pooled(&t), 5_000, "a smaller retire after a big one: the excess is freed");
        t.publish(x(3), pages(10, 100), x(2), &[x(2)]);
        t.retire(&nums(10, 100), x(3));
        assert_eq!(pooled(&t), POOL_MIN);
        t.publish(x(4), pages(10, 6_000), x(3), &[x(3)]);
        t.retire(&nums(10, 6_000), x(4));
        assert_eq!(pooled(&t), 6_000);
        t.trim_pool();
        assert_eq!(pooled(&t), POOL_MIN);
    }

    #[test]
    fn superseded_versions_no_snapshot_reads_are_dropped() {
        let t = PageTable::new(16, usize::MAX);
        t.publish(x(1), v(&[(9, buf(1))]), x(0), &[x(0)]);
        t.publish(x(2), v(&[(9, buf(2))]), x(1), &[x(1)]);
        // A snapshot at 1 reads version 1; nothing reads the others but the newest.
        t.publish(x(3), v(&[(9, buf(3))]), x(2), &[x(1), x(2)]);
        t.publish(x(4), v(&[(9, buf(4))]), x(3), &[x(1), x(3)]);
        assert_eq!(t.get(p(9), x(1)).unwrap()[0], 1);
        assert_eq!(t.get(p(9), x(2)).unwrap()[0], 1, "version 2 was dropped: no snapshot at 2 remained");
        assert_eq!(t.get(p(9), x(3)).unwrap()[0], 3);
        assert_eq!(t.get(p(9), x(9)).unwrap()[0], 4);
        assert_eq!(t.bytes(), 3 * 16);
        // With no reader but the last visible transaction, only that version and the new one stay.
        t.publish(x(5), v(&[(9, buf(5))]), x(4), &[x(4)]);
        assert_eq!(t.bytes(), 2 * 16);
        // Versions of transactions prepared but not yet visible are all kept (pipelined commits).
        t.publish(x(6), v(&[(9, buf(6))]), x(4), &[x(4)]);
        t.publish(x(7), v(&[(9, buf(7))]), x(4), &[x(4)]);
        t.publish(x(8), v(&[(9, buf(8))]), x(4), &[x(4)]);
        for v in 4..=8 {
            assert_eq!(t.get(p(9), x(v)).unwrap()[0] as u64, v);
        }
    }
}
