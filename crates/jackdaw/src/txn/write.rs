//! The write transaction: one at a time; pages are copied into private memory under their own
//! numbers, allocated from the free-space map first, and committed as one journal record.
//!
//! Invariants:
//! 1. The writer's base is the last prepared state (possibly not yet visible to snapshots:
//!    commits are pipelined); nothing else is prepared while it lives.
//! 2. Every dirty page is a full page image under its own number, in a buffer nothing else holds
//!    until `prepare` publishes it; `fresh` pages did not exist in the base state (they are
//!    journaled as a diff against zeros).
//! 3. Abort (or drop) discards dirty pages and the local free counts: the committed allocator
//!    state is only replaced at commit.
//! 4. A page is either dirty (in memory) or spilled/streamed (written to the data file by this
//!    transaction, `streamed`), never both; only pages at or past the base `next_page`, and free
//!    pages `claim_free` found that no snapshot, record or recovery reads (`reclaimed`), are ever
//!    spilled or streamed (no snapshot, no earlier record and no recovery can read them there).
//! 5. A dirty page copied from its base version whose `written` is `Some` differs from that
//!    version only inside those ranges and its page header (so commit journals just those bytes,
//!    without reading the base): only `modify` extends it, with the ranges its change reports
//!    (checked by `tree/node.rs`'s `reported_ranges_cover_every_changed_byte`); any other write
//!    access (`page_mut`) or a failed change sets it to `None`.

use super::alloc::{first_set_bit, AllocSummary, Geometry};
use super::core::{Committed, Core, TxRecord};
use super::flusher;
use super::page_table::{PageBuf, PgnoMap, PgnoSet};
use super::read::{PageRef, View};
use super::Written;
use crate::data::file::FIRST_FREE_PAGE;
use crate::data::page::{self, PageKind};
use crate::error::IoContext;
use crate::journal::record::{self, PayloadBuilder};
use crate::journal::space::Slot;
use crate::journal::Journal;
use crate::options::{Durability, FlusherMode, FreeSpacePolicy};
use crate::stats::{CommitStats, Counters, PagesByKind};
use crate::storage::SyncSite;
use crate::{Error, PageNo, Result, TxId};
use std::io::IoSlice;
use std::sync::Arc;

struct Dirty {
    /// Never shared while the page is dirty (so `get_mut` succeeds); published as is.
    buf: PageBuf,
    fresh: bool,
    /// The transaction's clock at the last `page_mut` or allocation (spilling takes the oldest).
    touched: u64,
    /// Invariant 5: for a page copied from its base version (`!fresh`), `Some` ranges cover every
    /// byte that differs from the base, so commit diffs only those; `None` means unknown (the
    /// whole page is diffed). Only `modify` keeps it `Some`; `page_mut` sets `None`.
    written: Option<Written>,
}

/// Ranges a dirty page keeps before it counts as changed all over (`Dirty::written`).
const MAX_WRITTEN_RANGES: usize = 16;

/// `write_once_run` starts the writeback of pages written once by aligned ranges of this many.
const WRITE_BACK_PAGES: u64 = 1024;

/// A page this transaction already wrote to the data file (streamed in, or spilled).
#[derive(Clone, Copy)]
struct Streamed {
    /// Its checksum, which the journal record carries.
    sum: u64,
    kind: Option<PageKind>,
}

/// The page level of the single write transaction. Dropping it without `prepare` aborts it.
pub(crate) struct PageTxn {
    core: Arc<Core>,
    _guard: crate::sync::WriterGuard,
    /// The readers' lane that counts this transaction (`Readers::begin_write`).
    readers_lane: usize,
    base: View,
    next_page: u64,
    dirty: PgnoMap<Dirty>,
    free: Vec<u64>,
    geom: Geometry,
    durability: Durability,
    /// Pages already written straight to the data file by `write_once_run` or `spill`.
    streamed: PgnoMap<Streamed>,
    /// A mapping that covers the streamed pages (they are read back through it).
    streamed_map: Option<Arc<crate::data::MapState>>,
    /// Counts `page_mut` calls and allocations (`Dirty::touched`).
    clock: u64,
    /// Spill when this many pages are dirty (see `spill`); 0: never.
    spill_at: usize,
    /// Pages written by `spill` so far.
    spilled: u64,
    /// Dirty pages held before spilling (`max_dirty_pages`, doubled when spilling thrashes).
    limit: usize,
    /// Pages the last spill wrote, and spilled pages changed again since then.
    last_spill: u64,
    reloaded: u64,
    /// Pages of the base state copied into `dirty` (rewritten), for the record size limit.
    rewritten: u64,
    /// Free pages `claim_free` took for the value being written once, handed out by
    /// `reserve_page` (the smallest first) before it appends.
    claimed: Vec<u64>,
    /// Every page `claim_free` took in this transaction (`write_once_run` may write them).
    reclaimed: PgnoSet,
}

impl PageTxn {
    pub(crate) fn begin(core: &Arc<Core>, wait: bool) -> Result<PageTxn> {
        // Before anything that waits: the writer lock (and the flush below) could be this thread's.
        refuse_if_held(core)?;
        core.check_writable()?;
        let cap = core.opts.max_pinned_bytes;
        if core.pinned_bytes() > cap {
            flusher::flush_once(core)?;
            let pinned = core.pinned_bytes();
            if pinned > cap {
                let oldest_reader_age = core.oldest_reader_age();
                return Err(Error::PinnedLimit { pinned_bytes: pinned, cap_bytes: cap, oldest_reader_age });
            }
        }
        let guard = if wait {
            core.writer.lock()
        } else {
            core.writer.try_lock().ok_or(Error::Busy("another write transaction is active"))?
        };
        core.check_writable()?;
        let readers_lane = core.readers.begin_write();
        let c = *core.prepared.lock();
        let free = core.alloc.lock().free.clone();
        HELD.with(|h| h.borrow_mut().push(Arc::as_ptr(core) as usize));
        Ok(PageTxn {
            core: core.clone(),
            _guard: guard,
            readers_lane,
            base: View { txid: c.txid, next_page: c.next_page, map: core.data.map(), era: core.table.era() },
            next_page: c.next_page.get(),
            dirty: PgnoMap::default(),
            free,
            geom: Geometry::new(core.page_size),
            durability: core.opts.durability,
            streamed: PgnoMap::default(),
            streamed_map: None,
            clock: 0,
            spill_at: if core.opts.write_once_min_pages == 0 { 0 } else { core.opts.max_dirty_pages },
            spilled: 0,
            limit: core.opts.max_dirty_pages,
            last_spill: 0,
            reloaded: 0,
            rewritten: 0,
            claimed: Vec::new(),
            reclaimed: PgnoSet::default(),
        })
    }

    /// The id this transaction will have when it commits.
    pub(crate) fn txid(&self) -> TxId {
        self.base.txid.next()
    }

    /// The id of the state this transaction started from.
    pub(crate) fn base_txid(&self) -> TxId {
        self.base.txid
    }

    /// Override the environment's durability for this commit.
    pub(crate) fn set_durability(&mut self, d: Durability) {
        self.durability = d;
    }

    pub(crate) fn page_size(&self) -> usize {
        self.core.page_size
    }

    /// The page high-water mark as this transaction leaves it.
    pub(crate) fn next_page(&self) -> u64 {
        self.next_page
    }

    /// Page `pgno` as this transaction sees it (its own changes included).
    pub(crate) fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_hinted(pgno, false)
    }

    /// `page`, with every line of the page starting to load (`PageRead::page_whole`).
    pub(crate) fn page_whole(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_hinted(pgno, true)
    }

    #[inline(always)]
    fn page_hinted(&self, pgno: u64, whole: bool) -> Result<PageRef<'_>> {
        let own = match self.dirty.get(&pgno) {
            Some(d) => Some(&d.buf[..]),
            None if (pgno >= self.base.next_page.get() || !self.reclaimed.is_empty())
                && self.streamed.contains_key(&pgno) =>
            {
                self.streamed_map.as_ref().map(|m| m.raw(pgno)).transpose()?
            }
            None => None,
        };
        match own {
            Some(p) => {
                if whole {
                    crate::data::page::prefetch_all(p);
                }
                Ok(p)
            }
            None if whole => self.base.page_whole(&self.core, PageNo::new(pgno)),
            None => self.base.page(&self.core, PageNo::new(pgno)),
        }
    }

    /// A writable copy of page `pgno` (copied on first use). The first 32 bytes are the page
    /// header, which commit stamps; callers own the rest. Commit diffs the whole page against its
    /// base (see `modify` for a change that says what it wrote).
    pub(crate) fn page_mut(&mut self, pgno: u64) -> Result<&mut [u8]> {
        let d = self.dirty_entry(pgno)?;
        d.written = None;
        unique(&mut d.buf)
    }

    /// Change page `pgno` (copied on first use) through `f`, which returns the byte ranges it
    /// wrote, a superset of the bytes it changed: commit then diffs only those against the base
    /// version instead of the whole page (the diff's reads of both images were ~16% of a random
    /// insert workload's time). If `f` fails, the whole page counts as changed.
    /// `f`'s own result comes back with the ranges.
    pub(crate) fn modify<R>(&mut self, pgno: u64, f: impl FnOnce(&mut [u8]) -> Result<(Written, R)>) -> Result<R> {
        let d = self.dirty_entry(pgno)?;
        match f(unique(&mut d.buf)?) {
            Ok((w, out)) => {
                if let Some(v) = &mut d.written {
                    v.extend(w);
                    if v.len() > MAX_WRITTEN_RANGES {
                        d.written = None;
                    }
                }
                Ok(out)
            }
            Err(e) => {
                d.written = None;
                Err(e)
            }
        }
    }

    /// The dirty entry of page `pgno`, copied from its base version on first use.
    fn dirty_entry(&mut self, pgno: u64) -> Result<&mut Dirty> {
        self.clock += 1;
        let touched = self.clock;
        let d = match self.dirty.entry(pgno) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let d = e.into_mut();
                d.touched = touched;
                d
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                if let Some(m) = self.streamed_map.as_ref().filter(|_| self.streamed.contains_key(&pgno)) {
                    // Spilled (or streamed) earlier in this transaction: back into memory; it is
                    // written again at commit (invariant 4).
                    let buf = self.core.table.copy_of(m.raw(pgno)?);
                    self.streamed.remove(&pgno);
                    self.reloaded += 1;
                    e.insert(Dirty { buf, fresh: true, touched, written: None })
                } else {
                    if pgno < crate::data::file::FIRST_BITMAP_PAGE || pgno >= self.base.next_page.get() {
                        return Err(Error::Invalid(format!(
                            "page {pgno} is not an allocated page of this transaction"
                        )));
                    }
                    // Fail early (faults issue §5): a rewritten page is journaled, as a diff or
                    // an image of at most `ENTRY_HEADER + page_size` bytes, and one record carries
                    // at most `u32::MAX` bytes of payload. Past the count whose images could pass
                    // it, refuse now, before more memory is spent (a 4.5 GB rewrite used to reach
                    // 16.5 GB of memory before failing at commit).
                    self.rewritten += 1;
                    let entry = (record::ENTRY_HEADER + self.core.page_size) as u64;
                    let max = self.core.opts.max_record_bytes;
                    if self.rewritten * entry > max {
                        return Err(Error::TransactionTooLarge { bytes: self.rewritten * entry, max });
                    }
                    let base = self.base.page(&self.core, PageNo::new(pgno))?;
                    let buf = self.core.table.copy_of(base);
                    e.insert(Dirty { buf, fresh: false, touched, written: Some(Written::new()) })
                }
            }
        };
        Ok(d)
    }

    /// Allocate a page (zeroed, header set to `kind`): a free page if the policy allows, else
    /// one at the end of the file.
    pub(crate) fn alloc_page(&mut self, kind: PageKind) -> Result<u64> {
        self.alloc_page_with(kind, &[])
    }

    /// Allocate a page (as `alloc_page`) whose bytes past the header are `parts`, one after the
    /// other, then zeros: each byte of the buffer written once, where a zeroed page would be
    /// written again by its caller (an overflow page: `overflow::write_dirty`).
    pub(crate) fn alloc_page_with(&mut self, kind: PageKind, parts: &[&[u8]]) -> Result<u64> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.core.page_size - page::PAGE_HEADER {
            return Err(Error::Invalid(format!("internal: {len} bytes do not fit a page")));
        }
        let pgno = self.alloc_pgno()?;
        let mut buf = self.core.table.filled(|b| {
            let mut at = page::PAGE_HEADER;
            for p in parts {
                b[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            b[at..].fill(0);
            page::init(b, pgno, kind);
        });
        // A shared buffer (never filled: a bug) is an error, as in `alloc_page`.
        unique(&mut buf)?;
        self.add_fresh(pgno, buf);
        Ok(pgno)
    }

    /// A new dirty page of this transaction.
    fn add_fresh(&mut self, pgno: u64, buf: PageBuf) {
        self.clock += 1;
        self.dirty.insert(pgno, Dirty { buf, fresh: true, touched: self.clock, written: None });
    }

    /// The page number of a page to allocate: a free page if the policy allows, else one at the
    /// end of the file (after a spill, if the dirty set is at its bound).
    fn alloc_pgno(&mut self) -> Result<u64> {
        let pgno = match self.core.opts.free_space {
            FreeSpacePolicy::Reuse => match self.take_free()? {
                Some(p) => p,
                None => self.append()?,
            },
            FreeSpacePolicy::AppendOnly => self.append()?,
        };
        if self.spill_at > 0 && self.dirty.len() >= self.spill_at {
            self.spill()?;
        }
        Ok(pgno)
    }

    /// Write the least recently changed half of the dirty pages that are spillable (appended by
    /// this transaction past the base `next_page`; not free-space maps) straight to the data file,
    /// sealed, as pages written once (invariant 4; synced at commit like streamed pages), and
    /// return their buffers to the pool. When few pages could go, the next attempt waits until
    /// the dirty set has grown by half, so a transaction of copied (not spillable) pages does not
    /// rescan them at every allocation. When more than a quarter of the pages the last spill
    /// wrote were changed again since (a bulk load in random order, where every leaf keeps
    /// changing), the limit doubles instead: spilling would write the same pages over and over.
    fn spill(&mut self) -> Result<()> {
        if self.last_spill > 0 && self.reloaded * 4 > self.last_spill {
            self.limit = self.limit.saturating_mul(2);
        }
        self.reloaded = 0;
        let max = self.limit;
        if self.dirty.len() < max {
            self.spill_at = max;
            return Ok(());
        }
        let keep = max / 2;
        let first = self.base.next_page.get();
        let mut cand: Vec<(u64, u64)> = self
            .dirty
            .iter()
            .filter(|(p, d)| {
                **p >= first && d.fresh && !matches!(page::page_kind(&d.buf), Some(PageKind::FreeMap | PageKind::Meta))
            })
            .map(|(p, d)| (d.touched, *p))
            .collect();
        let n = self.dirty.len().saturating_sub(keep).min(cand.len());
        if n > 0 {
            cand.select_nth_unstable(n - 1);
            let mut pgnos: Vec<u64> = cand[..n].iter().map(|c| c.1).collect();
            pgnos.sort_unstable();
            let core = self.core.clone();
            let txid = self.base.txid.next();
            let last = pgnos[n - 1];
            // Not synced here: spilled pages are synced with the commit's pages written once
            // (`data.write_once`), before its record, which syncs the growth too.
            core.data.ensure_pages_lazy(last + 1)?;
            // Seal and write while the pages are still dirty; only once every write returned do
            // they move to `streamed` (invariant 4), so a failure leaves them dirty (and the
            // environment poisoned), never named as written without being written.
            for p in &pgnos {
                if let Some(d) = self.dirty.get_mut(p) {
                    page::seal(unique(&mut d.buf)?, PageNo::new(*p), txid);
                }
            }
            self.write_dirty(&pgnos, false)?;
            let mut bufs: Vec<PageBuf> = Vec::with_capacity(n);
            for p in &pgnos {
                if let Some(d) = self.dirty.remove(p) {
                    let st = Streamed { sum: page::stored_checksum(&d.buf), kind: page::page_kind(&d.buf) };
                    self.streamed.insert(*p, st);
                    bufs.push(d.buf);
                }
            }
            self.streamed_map = Some(core.data.map());
            self.spilled += n as u64;
            self.last_spill = n as u64;
            Counters::add(&core.counters.spilled_pages, n as u64);
            core.table.recycle(bufs);
        }
        self.spill_at = max.max(self.dirty.len() + self.dirty.len() / 2);
        Ok(())
    }

    /// Write the dirty pages `pgnos` (sorted, sealed) to the data file, one `pwritev` per run of
    /// up to 1,024 consecutive page numbers, and start their writeback as they go (one hint per
    /// 1,024 pages, `WriteBack`; a hint: a spill's
    /// pages then reach the device while the transaction goes on, and the `fdatasync` before the
    /// record finds less to write). With `synced_next` (the caller syncs the file right after)
    /// the last, partial hint is not given: the sync writes those pages anyway, and the hint cost
    /// a `sync_file_range` per commit of large values (65 µs of a ~1 ms `sync` commit of 10 × 64
    /// KiB). A failed write poisons the environment.
    fn write_dirty(&self, pgnos: &[u64], synced_next: bool) -> Result<()> {
        let core = &self.core;
        let mut i = 0;
        let mut hint = crate::data::WriteBack::default();
        while i < pgnos.len() {
            let mut j = i + 1;
            while j < pgnos.len() && pgnos[j] == pgnos[j - 1] + 1 && j - i < 1024 {
                j += 1;
            }
            let slices: Vec<IoSlice<'_>> =
                pgnos[i..j].iter().filter_map(|p| self.dirty.get(p)).map(|d| IoSlice::new(&d.buf)).collect();
            if slices.len() != j - i {
                return Err(Error::Invalid("internal: a page to write once is not dirty".into()));
            }
            core.data.write_pages(pgnos[i], &slices).inspect_err(|e| core.poison(e))?;
            hint.add(&core.data, pgnos[i], (j - i) as u64);
            i = j;
        }
        if !synced_next {
            hint.finish(&core.data);
        }
        Ok(())
    }

    fn take_free(&mut self) -> Result<Option<u64>> {
        let g = self.geom;
        for k in 0..self.free.len() as u64 {
            if self.free[k as usize] == 0 {
                continue;
            }
            let limit = (self.next_page - k * g.section).min(g.section);
            let bp = g.bitmap_page(k);
            let bm = self.page_mut(bp)?;
            let Some(i) = first_set_bit(bm, limit) else {
                return Err(Error::corrupted(
                    Some(bp),
                    format!("free-space section {k} counts free pages but its bitmap has none"),
                ));
            };
            let pgno = k * g.section + i;
            let (byte, mask) = g.bit(pgno);
            bm[byte] &= !mask;
            self.free[k as usize] -= 1;
            return Ok(Some(pgno));
        }
        Ok(None)
    }

    fn append(&mut self) -> Result<u64> {
        let g = self.geom;
        if self.next_page >= g.section && self.next_page.is_multiple_of(g.section) {
            // First page of a new section: its bitmap page.
            let bp = self.next_page;
            let mut buf = self.core.table.zeroed();
            page::init(unique(&mut buf)?, bp, PageKind::FreeMap);
            self.dirty.insert(bp, Dirty { buf, fresh: true, touched: self.clock, written: None });
            self.free.push(0);
            self.next_page += 1;
        }
        let p = self.next_page;
        self.next_page =
            self.next_page.checked_add(1).ok_or_else(|| Error::Invalid("page numbers exhausted".into()))?;
        Ok(p)
    }

    /// Return page `pgno` to the free-space map. Its contents stay readable by older snapshots.
    pub(crate) fn free_page(&mut self, pgno: u64) -> Result<()> {
        let g = self.geom;
        if pgno < FIRST_FREE_PAGE || pgno >= self.next_page || g.is_bitmap_page(pgno) {
            return Err(Error::Invalid(format!("page {pgno} cannot be freed")));
        }
        let k = g.section_of(pgno);
        let (byte, mask) = g.bit(pgno);
        let bm = self.page_mut(g.bitmap_page(k))?;
        if bm[byte] & mask != 0 {
            return Err(Error::Invalid(format!("page {pgno} is already free")));
        }
        bm[byte] |= mask;
        self.free[k as usize] += 1;
        self.dirty.remove(&pgno);
        self.streamed.remove(&pgno);
        self.reclaimed.remove(&pgno);
        Ok(())
    }

    /// Reserve a page for `write_once_run` (it must be written before commit): a free page
    /// `claim_free` took, else one at the end of the file.
    pub(crate) fn reserve_page(&mut self) -> Result<u64> {
        match self.claimed.pop() {
            Some(p) => Ok(p),
            None => self.append(),
        }
    }

    /// Take up to `want` free pages for the value about to be written once, so that
    /// `reserve_page` hands them out before it appends: a large value overwritten again and
    /// again reuses the space it freed instead of growing the file without end. A page written
    /// in place before commit must be one that nothing reads: no snapshot, no journal record
    /// recovery may replay, and no recovery from the last flush (`reusable_pages` says which).
    /// When free pages could hold the whole value but too few qualify yet, and the background
    /// flusher runs (a `Manual` environment's flushes stay its caller's), a flush runs here first:
    /// the pages the last commits freed qualify once a flush has passed their free. (Asking the
    /// flusher thread instead left it behind: 200 overwrites of a 20 MiB value ended at a 404 MiB
    /// high-water mark.) Where no page qualifies, the value is appended.
    pub(crate) fn claim_free(&mut self, want: u64) -> Result<()> {
        let free: u64 = self.free.iter().sum();
        if want == 0 || free == 0 || self.core.opts.free_space != FreeSpacePolicy::Reuse {
            return Ok(());
        }
        let mut got = self.reusable_pages(want, free >= want)?;
        let core = self.core.clone();
        // Not after `close` (called on this writer's thread): its flush is the last.
        if (got.len() as u64) < want
            && free >= want
            && core.opts.flusher == FlusherMode::Background
            && !core.is_closed()
            && core.flushed_txid.load(std::sync::atomic::Ordering::Relaxed) < core.readers.committed().txid.get()
        {
            flusher::flush_once(&core)?;
            got = self.reusable_pages(want, true)?;
        }
        let g = self.geom;
        for &p in &got {
            let k = g.section_of(p);
            let (byte, mask) = g.bit(p);
            self.page_mut(g.bitmap_page(k))?[byte] &= !mask;
            self.free[k as usize] -= 1;
            self.reclaimed.insert(p);
        }
        got.reverse();
        self.claimed = got;
        Ok(())
    }

    /// Up to `want` free pages that are safe to write in place before commit, ascending. A page
    /// qualifies when
    /// 1. it is free in this transaction's view (its base, the last prepared state, included);
    /// 2. it was free in the last flushed state: below the flushed high-water mark, with its bit
    ///    set in its bitmap page as the data file holds it. Read under `flush_state`, so no flush
    ///    is half-way through rewriting that page and the header says which state it holds;
    /// 3. no transaction after that flush wrote it (`txlog`: the pages each journaled and the
    ///    free pages each wrote once), so no record recovery replays names it, and no snapshot
    ///    finds an older version of it in the page table.
    ///
    /// Then it was free in every state since the flush (a transaction that allocates a page
    /// writes it), so at every live snapshot too: none is older than the last flush (`flusher.rs`
    /// step 1). Recovery from that flush finds it free, or, once this transaction's record is
    /// durable, verifies it against the record. With `wait`, a running flush is waited for (no
    /// flush waits for the writer, `flusher.rs`, so this cannot deadlock); without, a running
    /// flush means none.
    fn reusable_pages(&self, want: u64, wait: bool) -> Result<Vec<u64>> {
        let core = &self.core;
        let flushed = if wait { Some(core.flush_state.lock()) } else { core.flush_state.try_lock() };
        // A flush that failed half-way may have left bitmap pages newer than the header.
        let Some(flushed) = flushed.filter(|_| !core.flush_torn.load(std::sync::atomic::Ordering::Relaxed)) else {
            return Ok(Vec::new());
        };
        let flushed_next = flushed.next_page;
        // Copied under the log's lock (a commit's `finish` takes it under the journal's), the
        // set built outside it.
        let named: Vec<PageNo> = {
            let log = core.txlog.lock();
            log.iter().flat_map(|t| t.pages.iter().chain(&t.reclaimed)).copied().collect()
        };
        let named: PgnoSet = named.into_iter().map(|p| p.get()).filter(|p| *p < flushed_next).collect();
        let (g, map) = (self.geom, core.data.map());
        let mut got: Vec<u64> = Vec::new();
        for k in 0..self.free.len() as u64 {
            let bp = g.bitmap_page(k);
            if bp >= flushed_next || got.len() as u64 == want {
                break;
            }
            if self.free[k as usize] == 0 {
                continue;
            }
            // The section's bitmap as last flushed; a page that fails its check gives nothing.
            let Some(on_disk) = map.raw(bp).ok().filter(|p| page::verify(p, PageNo::new(bp)).is_ok()) else {
                continue;
            };
            let ours = self.page(bp)?;
            for i in 0..(flushed_next - k * g.section).min(g.section) {
                let pgno = k * g.section + i;
                let (byte, mask) = g.bit(pgno);
                if ours[byte] & on_disk[byte] & mask == 0
                    || named.contains(&pgno)
                    || self.dirty.contains_key(&pgno)
                    || self.streamed.contains_key(&pgno)
                {
                    continue;
                }
                got.push(pgno);
                if got.len() as u64 == want {
                    break;
                }
            }
        }
        Ok(got)
    }

    /// Give the pages `claim_free` took and no reservation used back to the free-space map.
    pub(crate) fn release_claims(&mut self) -> Result<()> {
        let g = self.geom;
        while let Some(p) = self.claimed.pop() {
            let k = g.section_of(p);
            let (byte, mask) = g.bit(p);
            self.page_mut(g.bitmap_page(k))?[byte] |= mask;
            self.free[k as usize] += 1;
            self.reclaimed.remove(&p);
        }
        Ok(())
    }

    /// Whether a value of `pages` overflow pages goes straight to the data file as it is put
    /// (see `PageWrite::writes_once`).
    ///
    /// Space comes first: a value that the free pages can hold, and that the dirty-page bound
    /// lets stay in memory until commit (with the transaction's other dirty pages, at most half
    /// of `max_dirty_pages`: 16 MiB by default), takes free pages through the journal as a
    /// smaller value does. Reused pages cannot be spilled (only appended ones can), so the bound
    /// counts the whole transaction: a bulk load of large values into a database with much free
    /// space reuses it through the journal until its dirty pages reach the bound, then writes
    /// once, into the free pages `claim_free` finds safe to write in place, else appended.
    /// (Before either, large values overwritten again and again grew the file without end: 300
    /// overwrites of one 1 MB value left a 294 MB data file.)
    pub(crate) fn writes_once(&self, pages: u64) -> bool {
        let min = self.core.opts.write_once_min_pages as u64;
        min > 0 && pages >= min && !self.takes_free_pages(pages)
    }

    /// Whether a value of `pages` pages, large enough to be written once, takes free pages
    /// instead (`writes_once`).
    pub(crate) fn takes_free_pages(&self, pages: u64) -> bool {
        let min = self.core.opts.write_once_min_pages as u64;
        min > 0
            && pages >= min
            && self.dirty.len() as u64 + pages <= self.core.opts.max_dirty_pages as u64 / 2
            && self.free.iter().sum::<u64>() >= pages
    }

    /// Write reserved pages straight to the data file now (large values put or streamed in):
    /// `bufs` holds consecutive pages from `first` on, each sealed here with this transaction's
    /// id and written with one `pwrite`, their writeback started by 1,024 pages (a hint, as
    /// `write_dirty`);
    /// synced at commit before the journal record, which carries only their checksums. Nothing
    /// of them stays in memory.
    pub(crate) fn write_once_run(&mut self, first: u64, bufs: &mut [u8]) -> Result<()> {
        let ps = self.core.page_size;
        let n = (bufs.len() / ps) as u64;
        let end = first.checked_add(n).filter(|_| n > 0 && bufs.len().is_multiple_of(ps));
        let reserved = |p: u64| {
            (p >= self.base.next_page.get() && p < self.next_page || self.reclaimed.contains(&p))
                && !self.dirty.contains_key(&p)
        };
        if !end.is_some_and(|end| (first..end).all(reserved)) {
            return Err(Error::Invalid(format!("pages {first}+{n} were not reserved for writing once")));
        }
        let txid = self.base.txid.next();
        for (pgno, buf) in (first..).zip(bufs.chunks_exact_mut(ps)) {
            page::seal(buf, PageNo::new(pgno), txid);
        }
        let core = &self.core;
        // Synced with the pages themselves at commit (`data.write_once`), before the record.
        core.data.ensure_pages_lazy(first + n)?;
        core.data.write_page(first, bufs).inspect_err(|e| core.poison(e))?;
        // Start the writeback of each aligned 1,024 pages (4 MiB of 4 KiB pages) once the run
        // has written its last page: one hint per such range, not one per call.
        let done = (first + n) / WRITE_BACK_PAGES * WRITE_BACK_PAGES;
        if done > first {
            core.data.write_back(done - WRITE_BACK_PAGES, WRITE_BACK_PAGES);
        }
        for (pgno, buf) in (first..).zip(bufs.chunks_exact(ps)) {
            self.streamed.insert(pgno, Streamed { sum: page::stored_checksum(buf), kind: Some(PageKind::Overflow) });
        }
        self.streamed_map = Some(core.data.map());
        Ok(())
    }

    /// Pages written once at commit (DESIGN.md §2.11): pages appended by this transaction past
    /// the base's high-water mark (the transaction it was built on, prepared or committed) are
    /// needed by no snapshot (none can reach them) and by no
    /// recovery (no earlier record names them). When there are at least `write_once_min_pages` of
    /// them they go straight to the data file, synced (with any streamed pages) before the
    /// journal record, which then carries only their checksums. Fewer of them go the same way
    /// when the commit syncs the data file anyway (pages streamed or spilled before it): a page
    /// written once then costs no device flush of its own, and is not written a second time by
    /// the flusher. Returns the set written.
    fn write_once_at_commit(&mut self, pgnos: &[u64]) -> Result<PgnoSet> {
        let core = &self.core;
        let min = core.opts.write_once_min_pages;
        let mut once = PgnoSet::default();
        let eligible: Vec<u64> = if min == 0 {
            Vec::new()
        } else {
            pgnos.iter().copied().filter(|p| *p >= self.base.next_page.get() && self.dirty[p].fresh).collect()
        };
        let syncs_anyway = !self.streamed.is_empty();
        if !eligible.is_empty() && (eligible.len() >= min || syncs_anyway) {
            // Already sealed by `prepare`.
            self.write_dirty(&eligible, true)?;
            once.extend(eligible);
        }
        if !once.is_empty() || !self.streamed.is_empty() {
            core.data.sync(SyncSite::DataWriteOnce).inspect_err(|e| core.poison(e))?;
            core.counters.synced(SyncSite::DataWriteOnce);
            Counters::add(&core.counters.written_once_pages, (once.len() + self.streamed.len()) as u64);
        }
        Ok(once)
    }

    /// What `finish` reports of this commit, as far as prepare knows it: `journaled` dirty pages
    /// and `once` of them written once (streamed pages count in both), the payload's bytes as
    /// full page images and after diffing (`bytes`); the written bytes and the time come later.
    fn commit_stats(
        &self,
        txid: TxId,
        journaled: usize,
        once: usize,
        kinds: PagesByKind,
        (full, raw): (u64, u64),
    ) -> CommitStats {
        CommitStats {
            txid,
            pages: journaled + self.streamed.len(),
            written_once_pages: once + self.streamed.len(),
            spilled_pages: self.spilled as usize,
            pages_by_kind: kinds,
            journal_bytes_full: full,
            journal_bytes_raw: raw,
            journal_bytes_written: 0,
            time: std::time::Duration::ZERO,
        }
    }

    /// The first half of a commit, under the writer lock: seal the pages (number, txid,
    /// checksum), grow the file, write pages once, build and compress the journal payload (or
    /// stream it), reserve the record's place in the journal (the last step that can fail), and
    /// publish the page versions to the page table, invisible to snapshots until `finish`.
    /// Releases the writer lock, so the next transaction can be built on this one while its
    /// record is written (pipelined commit).
    pub(crate) fn prepare(mut self) -> Result<Prepared> {
        let core = self.core.clone();
        let t0 = std::time::Instant::now();
        core.check_writable()?;
        if self.dirty.is_empty() && self.streamed.is_empty() {
            return Ok(Prepared {
                core,
                txid: None,
                base: self.base.txid,
                next_page: PageNo::new(0),
                payload: None,
                durability: self.durability,
                stats: CommitStats::default(),
                t0,
                done: false,
            });
        }
        let txid = self.base.txid.next();
        let mut pgnos: Vec<u64> = self.dirty.keys().copied().collect();
        pgnos.sort_unstable();
        let kinds = self.seal_pages(txid)?;
        // Growth is durable before the record that needs it: synced by the sync of the pages
        // written once when there are any (one device flush, not two), else on its own. A full
        // disk fails here, harmlessly; a failed sync poisons.
        core.data.ensure_pages_lazy(self.next_page)?;
        let once = self.write_once_at_commit(&pgnos)?;
        core.data.sync_growth().inspect_err(|e| core.poison(e))?;
        let journaled = (pgnos.len() - once.len()) as u64 * core.page_size as u64;
        let streams = core.opts.stream_record_bytes > 0 && journaled >= core.opts.stream_record_bytes;
        let (rec, stats) = if streams {
            let (slot, first, stats) = self.write_streamed(txid, &pgnos, &once, kinds)?;
            (
                Record::Streamed {
                    slot,
                    first,
                    raw_len: stats.journal_bytes_raw,
                    full_bytes: stats.journal_bytes_full,
                },
                stats,
            )
        } else {
            self.framed_record(txid, &pgnos, &once, kinds)?
        };
        pgnos.retain(|p| !once.contains(p));
        self.publish_prepared(txid, pgnos, &once);
        Ok(Prepared {
            core,
            txid: Some(txid),
            base: self.base.txid,
            next_page: PageNo::new(self.next_page),
            payload: Some(rec),
            durability: self.durability,
            stats,
            t0,
            done: false,
        })
    }

    /// Seal every page (number, txid, checksum), counting them by kind on the way (one pass
    /// over the dirty pages; streamed pages are counted too).
    #[inline]
    fn seal_pages(&mut self, txid: TxId) -> Result<PagesByKind> {
        let mut kinds = PagesByKind::default();
        for s in self.streamed.values() {
            kinds.count(s.kind);
        }
        for (p, d) in self.dirty.iter_mut() {
            page::seal(unique(&mut d.buf)?, PageNo::new(*p), txid);
            kinds.count(page::page_kind(&d.buf));
        }
        Ok(kinds)
    }

    /// The journal record of a commit built in memory: the entries encoded and compressed, and
    /// its room in the journal reserved. Returns the record and the commit's statistics.
    #[inline]
    fn framed_record(
        &self,
        txid: TxId,
        pgnos: &[u64],
        once: &PgnoSet,
        kinds: PagesByKind,
    ) -> Result<(Record, CommitStats)> {
        let core = &self.core;
        let mut payload = PayloadBuilder::for_pages(pgnos.len() + self.streamed.len());
        self.encode_entries(pgnos, once, &mut payload, &mut |_| Ok(()))?;
        let stats =
            self.commit_stats(txid, pgnos.len(), once.len(), kinds, (payload.full_bytes, payload.buf.len() as u64));
        let payload = record::compress(payload, core.opts.max_record_bytes)?;
        // The last step that can fail: room in the journal (invariant 5 of `journal/space.rs`).
        // A full disk or no descriptor fails this commit alone; nothing is published yet.
        let packed = record::packs(&payload, self.durability != Durability::Sync);
        let slot = core.space.lock().reserve(txid.get(), &payload, packed).map_err(|e| {
            if e.poison {
                core.poison(&e.error);
            }
            e.error
        })?;
        Ok((Record::Framed(slot, payload), stats))
    }

    /// Publish the journaled pages `pgnos` as transaction `txid`'s versions (invisible until
    /// `finish`), recycle the buffers of the pages written `once`, and record the transaction
    /// in the log, the allocator summary and the prepared position. Nothing here can fail.
    #[inline]
    fn publish_prepared(&mut self, txid: TxId, pgnos: Vec<u64>, once: &PgnoSet) {
        let core = &self.core;
        let versions: Vec<(PageNo, PageBuf)> =
            pgnos.iter().filter_map(|p| self.dirty.remove(p).map(|d| (PageNo::new(*p), d.buf))).collect();
        // Published under a transaction id no snapshot has yet: invisible until `finish`.
        let (visible, needed) = core.readers.snapshot_ids();
        core.table.publish(txid, versions, visible, &needed);
        // The pages written once are in the file: their buffers serve the next transactions (a
        // large value would otherwise fault in fresh heap pages for every copy).
        core.table.recycle(once.iter().filter_map(|p| self.dirty.remove(p).map(|d| d.buf)).collect());
        let base_next = self.base.next_page.get();
        let reclaimed: Vec<PageNo> =
            self.streamed.keys().filter(|p| **p < base_next).map(|p| PageNo::new(*p)).collect();
        Counters::add(&core.counters.written_once_reused_pages, reclaimed.len() as u64);
        core.txlog.lock().push_back(TxRecord {
            txid,
            pages: pgnos.into_iter().map(PageNo::new).collect(),
            reclaimed,
            next_page: PageNo::new(self.next_page),
            journal_end: None,
            journal_bytes: 0,
        });
        *core.alloc.lock() = AllocSummary { free: std::mem::take(&mut self.free) };
        *core.prepared.lock() = Committed { txid, next_page: PageNo::new(self.next_page) };
    }
}

impl PageTxn {
    /// Every journal entry of the commit, in record order (written-once pages streamed earlier,
    /// then the dirty pages in page order), each added to `pb` and followed by a call of `each`.
    /// The in-memory path of `prepare` calls it once (with `each` doing nothing), the streamed
    /// path twice, so both build the same entries from the same inputs.
    fn encode_entries(
        &self,
        pgnos: &[u64],
        once: &PgnoSet,
        pb: &mut PayloadBuilder,
        each: &mut dyn FnMut(&mut PayloadBuilder) -> Result<()>,
    ) -> Result<()> {
        let ps = self.core.page_size;
        let mut streamed: Vec<(u64, u64)> = self.streamed.iter().map(|(p, s)| (*p, s.sum)).collect();
        streamed.sort_unstable();
        for (p, sum) in streamed {
            pb.add_written_once(p, sum, ps);
            each(pb)?;
        }
        for p in pgnos {
            let d = &self.dirty[p];
            if once.contains(p) {
                pb.add_written_once(*p, page::stored_checksum(&d.buf), ps);
            } else if d.fresh {
                pb.add_page(*p, &d.buf, None);
            } else if let Some(w) = &d.written {
                pb.add_page_ranges(*p, &d.buf, w);
            } else {
                let base = self
                    .base
                    .page_again(&self.core, PageNo::new(*p))
                    .ok_or_else(|| Error::corrupted_at(PageNo::new(*p), "base page of a dirty page not found again"))?;
                pb.add_page(*p, &d.buf, Some(base));
            }
            each(pb)?;
        }
        Ok(())
    }

    /// The record of a big commit, streamed into the journal (faults issue §5): the payload is
    /// never held whole beside the dirty pages it is made of. A first pass encodes each entry
    /// into one reused buffer only to add up the payload's length and entry count; the record's
    /// place is reserved for that length; a second pass encodes the entries again into a chunk
    /// buffer (`STREAM_CHUNK`), hashing each chunk and writing it into the reserved place after
    /// the record's first block, padding included. The first block (header with the checksum, and
    /// the payload's first bytes) is returned for `finish` to write after every earlier record:
    /// until then the place holds no header, so nothing there verifies as a record. Stored uncompressed: a compressed length is not known before the
    /// bytes are compressed, and the checksum covers the header (lengths included) first.
    ///
    /// Memory: one page of entry in the first pass, about `STREAM_CHUNK` in the second.
    /// Failures: before the reservation, this commit fails alone (`TransactionTooLarge`, a full
    /// disk at rotation); after it, the environment is poisoned (the reserved place would
    /// otherwise be a hole in the log, and bytes may have reached the file).
    fn write_streamed(
        &self,
        txid: TxId,
        pgnos: &[u64],
        once: &PgnoSet,
        kinds: PagesByKind,
    ) -> Result<(Slot, Vec<u8>, CommitStats)> {
        let core = &self.core;
        let mut pb = PayloadBuilder::default();
        let mut raw = 0u64;
        self.encode_entries(pgnos, once, &mut pb, &mut |pb| {
            raw += pb.buf.len() as u64;
            pb.buf.clear();
            Ok(())
        })?;
        let (count, full_bytes) = (pb.count, pb.full_bytes);
        let max = core.opts.max_record_bytes;
        let raw_len = u32::try_from(raw)
            .ok()
            .filter(|l| u64::from(*l) <= max)
            .ok_or(Error::TransactionTooLarge { bytes: raw, max: max.min(u32::MAX as u64) })?;
        // Truthful whenever it is read: `durable_txid` only grows (FORMAT.md §6.1).
        let synced_through = core.journal.lock().durable_txid();
        let len = record::record_len_for(raw, false);
        let slot = core.space.lock().reserve_len(txid.get(), len, false).map_err(|e| {
            if e.poison {
                core.poison(&e.error);
            }
            e.error
        })?;
        let head = self.stream_payload(&slot, txid, synced_through, count, raw_len, pgnos, once).inspect_err(|e| {
            core.poison(&Error::Poisoned(format!("a streamed journal record could not be written: {e}")))
        })?;
        let stats = self.commit_stats(txid, pgnos.len(), once.len(), kinds, (full_bytes, raw));
        Ok((slot, head, stats))
    }

    /// The second pass of `write_streamed`: the payload and padding into `slot`, hashed, except
    /// the record's first block (`BLOCK` bytes, or the whole record if shorter), which is
    /// returned with the header in it for `finish` to write in one piece. So until `finish`,
    /// the slot's first block is untouched: a journal file whose first record was streamed but
    /// never finished still starts with zeros (a new file) or an old generation's record (a
    /// recycled one), and the next open recognises it as its own and removes it, rather than
    /// setting it aside as a stranger's (`recovery::sort_files`).
    #[allow(clippy::too_many_arguments)]
    fn stream_payload(
        &self,
        slot: &Slot,
        txid: TxId,
        synced_through: u64,
        count: u32,
        raw_len: u32,
        pgnos: &[u64],
        once: &PgnoSet,
    ) -> Result<Vec<u8>> {
        let core = &self.core;
        let mut rec = record::StreamedRecord::begin(
            txid.get(),
            slot.generation,
            core.db_id,
            self.next_page,
            synced_through,
            count,
            raw_len,
        );
        let file = slot.buffered.clone();
        let end = slot.offset + slot.len;
        let first_end = slot.offset + slot.len.min(record::BLOCK as u64);
        // The header's place, filled in below once the checksum is known.
        let mut first = vec![0u8; record::HEADER_LEN];
        let mut at = slot.offset + record::HEADER_LEN as u64;
        let counters = &core.counters;
        let mut emit = |mut buf: &[u8]| -> Result<()> {
            if at + buf.len() as u64 > end {
                return Err(Error::Invalid("internal: a streamed record outgrew its reservation".into()));
            }
            if at < first_end {
                let k = buf.len().min((first_end - at) as usize);
                first.extend_from_slice(&buf[..k]);
                buf = &buf[k..];
                at += k as u64;
            }
            if !buf.is_empty() {
                file.write_all_at(buf, at).ctx("journal write (streamed record)")?;
                Counters::add(&counters.journal_writes, 1);
                at += buf.len() as u64;
            }
            Ok(())
        };
        let mut pb =
            PayloadBuilder { buf: Vec::with_capacity(record::STREAM_CHUNK + 2 * core.page_size), ..Default::default() };
        self.encode_entries(pgnos, once, &mut pb, &mut |pb| {
            if pb.buf.len() >= record::STREAM_CHUNK {
                rec.update(&pb.buf);
                emit(&pb.buf)?;
                pb.buf.clear();
            }
            Ok(())
        })?;
        rec.update(&pb.buf);
        // Zero padding to the record's end (not covered by the checksum; written so that the
        // whole reserved place holds this record's bytes, as a framed record's does).
        let pad = (slot.len - record::HEADER_LEN as u64).saturating_sub(raw_len as u64);
        pb.buf.resize(pb.buf.len() + pad as usize, 0);
        emit(&pb.buf)?;
        if at != end || first.len() as u64 != first_end - slot.offset {
            return Err(Error::Invalid("internal: a streamed record does not fill its reservation".into()));
        }
        header_into_first_block(rec, first, pb.count == count)
    }
}

/// The end of `stream_payload`: the record's header (with its checksum) into the first block,
/// provided both passes over the entries agreed (`same_count`) and the payload was hashed whole.
#[inline]
fn header_into_first_block(rec: record::StreamedRecord, mut first: Vec<u8>, same_count: bool) -> Result<Vec<u8>> {
    match rec.finish() {
        Some((_, head)) if same_count => {
            first[..record::HEADER_LEN].copy_from_slice(&head);
            Ok(first)
        }
        _ => Err(Error::Invalid("internal: the two passes over a streamed record disagree".into())),
    }
}

impl Drop for PageTxn {
    fn drop(&mut self) {
        HELD.with(|h| unmark(&mut h.borrow_mut(), Arc::as_ptr(&self.core) as usize));
        self.core.readers.end_write(self.readers_lane);
        // The last transaction of a closed environment releases its locks.
        self.core.release_lock_if_idle();
    }
}

crate::sync::thread_local! {
    /// Environments whose writer lock this thread holds, by a `PageTxn` or inside `check()` (so
    /// that calls which would wait for that lock refuse instead of deadlocking).
    static HELD: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Environments whose `check()` runs on this thread (it holds the writer and flush locks).
    static CHECKING: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Remove one mark of `me` (a thread may hold the writer lock twice over only as `check()`'s
/// mark; `begin` refuses a second `PageTxn`).
fn unmark(marks: &mut Vec<usize>, me: usize) {
    if let Some(i) = marks.iter().position(|p| *p == me) {
        marks.swap_remove(i);
    }
}

/// What `Busy` says when the calling thread holds the write transaction.
pub(crate) const HELD_BY_THIS_THREAD: &str =
    "this thread already holds the write transaction (commit or abort it first); waiting would deadlock";
/// What `Busy` says inside `check_with`'s callback.
pub(crate) const CHECKING_ON_THIS_THREAD: &str =
    "this thread is inside check(), which holds the writer and flush locks; waiting would deadlock";

/// Whether the calling thread holds `core`'s write transaction (or runs its `check()`).
pub(crate) fn held_by_this_thread(core: &Arc<Core>) -> bool {
    let me = Arc::as_ptr(core) as usize;
    HELD.with(|h| h.borrow().contains(&me))
}

/// Whether the calling thread runs `core`'s `check()` (and so holds its flush lock).
pub(crate) fn checking_on_this_thread(core: &Arc<Core>) -> bool {
    let me = Arc::as_ptr(core) as usize;
    CHECKING.with(|h| h.borrow().contains(&me))
}

/// `Busy` if the calling thread holds `core`'s writer lock (a `WriteTxn`, or inside `check()`).
pub(crate) fn refuse_if_held(core: &Arc<Core>) -> Result<()> {
    if checking_on_this_thread(core) {
        Err(Error::Busy(CHECKING_ON_THIS_THREAD))
    } else if held_by_this_thread(core) {
        Err(Error::Busy(HELD_BY_THIS_THREAD))
    } else {
        Ok(())
    }
}

/// Marks the calling thread as running `core`'s `check()` until dropped (taken once `check()`
/// holds the writer lock).
pub(crate) struct CheckMark(usize);

impl CheckMark {
    pub(crate) fn new(core: &Arc<Core>) -> CheckMark {
        let me = Arc::as_ptr(core) as usize;
        HELD.with(|h| h.borrow_mut().push(me));
        CHECKING.with(|h| h.borrow_mut().push(me));
        CheckMark(me)
    }
}

impl Drop for CheckMark {
    fn drop(&mut self) {
        HELD.with(|h| unmark(&mut h.borrow_mut(), self.0));
        CHECKING.with(|h| unmark(&mut h.borrow_mut(), self.0));
    }
}

/// A prepared transaction's record: framed in memory (most commits), or streamed, its payload
/// already in the journal file and only its header still to be written (`write_streamed`).
enum Record {
    Framed(Slot, record::Compressed),
    /// `first`: the record's first block (header included), still to be written.
    Streamed {
        slot: Slot,
        first: Vec<u8>,
        raw_len: u64,
        full_bytes: u64,
    },
}

/// A transaction between `prepare` and `finish`: its record is not written yet and snapshots do
/// not see it, but the next write transaction already builds on it.
pub(crate) struct Prepared {
    core: Arc<Core>,
    txid: Option<TxId>,
    base: TxId,
    next_page: PageNo,
    payload: Option<Record>,
    durability: Durability,
    stats: CommitStats,
    t0: std::time::Instant,
    done: bool,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.done && self.txid.is_some() {
            // Later transactions wait for this record: they must fail, not hang.
            self.core
                .poison(&Error::Poisoned("a prepared transaction was dropped before its record was written".into()));
            let _j = self.core.journal.lock();
            self.core.journal_cv.notify_all();
        }
    }
}

impl Prepared {
    /// The id of the state this commit makes (`None`: it changed nothing, the state stays).
    pub(crate) fn txid(&self) -> Option<TxId> {
        self.txid
    }

    /// The second half of a commit: append the record once every earlier record is appended (so
    /// records stay in transaction order), then make the transaction visible to new snapshots.
    /// On failure the environment is poisoned, and every later prepared transaction fails too.
    pub(crate) fn finish(mut self) -> Result<CommitStats> {
        self.done = true;
        let core = &self.core;
        let (Some(txid), Some(rec)) = (self.txid, self.payload.take()) else {
            // Nothing written: a `Sync` empty commit still makes earlier records durable.
            if self.durability == Durability::Sync {
                let mut j = core.journal.lock();
                core.journal_cv.wait_while(&mut j, |j| {
                    j.last_txid() < self.base.get() && !j.failed() && core.poisoned.lock().is_none()
                });
                if j.last_txid() < self.base.get() {
                    return Err(Error::Poisoned("an earlier journal write failed".into()));
                }
                drop(j);
                Journal::make_durable(&core.journal, self.base.get()).inspect_err(|e| core.poison(e))?;
            }
            return Ok(CommitStats { time: self.t0.elapsed(), ..Default::default() });
        };
        let sync_ahead;
        let appended = {
            let mut j = core.journal.lock();
            core.journal_cv.wait_while(&mut j, |j| {
                j.last_txid() + 1 < txid.get() && !j.failed() && core.poisoned.lock().is_none()
            });
            if j.failed() || j.last_txid() + 1 != txid.get() {
                core.journal_cv.notify_all();
                return Err(Error::Poisoned("an earlier journal write failed".into()));
            }
            let r = match rec {
                Record::Framed(slot, payload) => j.append(slot, self.next_page.get(), &payload, self.durability),
                Record::Streamed { slot, first, raw_len, full_bytes } => {
                    j.append_streamed(slot, &first, (raw_len, full_bytes), self.durability)
                }
            };
            sync_ahead = j.sync_ahead_due();
            if let Ok(a) = &r {
                for t in core.txlog.lock().iter_mut().rev() {
                    if t.txid == txid {
                        t.journal_end = Some(a.end);
                        t.journal_bytes = a.written_len;
                        Counters::add(&core.counters.journal_unflushed_bytes, a.written_len);
                        break;
                    }
                }
                core.publish_committed(Committed { txid, next_page: self.next_page });
            }
            core.journal_cv.notify_all();
            r
        }
        .inspect_err(|e| core.poison(e))?;
        Counters::add(&core.counters.commits, 1);
        wake_flusher_after(core, sync_ahead, self.stats.written_once_pages > 0, self.next_page);
        let stats = CommitStats { journal_bytes_written: appended.written_len, time: self.t0.elapsed(), ..self.stats };
        if core.opts.flush_log {
            eprintln!(
                "jackdaw journal write: txid {txid}, {} pages ({} written once), journal bytes {} full -> {} diffed -> {} written, {:?}, {:.1} ms; by kind: {}",
                stats.pages,
                stats.written_once_pages,
                stats.journal_bytes_full,
                stats.journal_bytes_raw,
                stats.journal_bytes_written,
                self.durability,
                stats.time.as_secs_f64() * 1e3,
                stats.pages_by_kind
            );
        }
        Ok(stats)
    }
}

/// After a commit: wake the flusher when a flush is due; else, when it runs in the background,
/// ask it to sync the journal (`sync_ahead`: `Journal::sync_ahead_due`) or to grow the data file
/// ahead of the writer (the high-water mark `next_page` past 7/8 of the file).
fn wake_flusher_after(core: &Core, sync_ahead: bool, wrote_once: bool, next_page: PageNo) {
    if core.flush_due() {
        core.wake_flusher();
    } else if core.opts.flusher == FlusherMode::Background {
        if sync_ahead {
            core.nudge_flusher_to_sync();
        } else if !wrote_once && core.grow_due(next_page.get()) {
            // Not after a commit that wrote pages once: the next such commit grows the file
            // itself, and the sync of its pages makes the growth durable (no device flush of its
            // own, where the flusher's growth ahead costs one: `large-values-write-8m` flushed
            // 2.9 times per commit against LMDB's 2.1).
            core.nudge_flusher_to_grow();
        }
    }
}

/// The bytes of a dirty page buffer, which nothing else holds (invariant 2); a shared one is a
/// bug of this module, reported as an error rather than a panic.
fn unique(buf: &mut PageBuf) -> Result<&mut [u8]> {
    buf.get_mut().ok_or_else(|| Error::Invalid("internal: a dirty page buffer is shared".into()))
}
