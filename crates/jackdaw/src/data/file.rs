//! The data file: fixed-size pages at stable numbers, read through a bounds-checked map and
//! written with positional writes (never through the map).
//!
//! Invariants owned here:
//! 1. The file is at least `next_page * page_size` bytes long before a journal record that refers
//!    to those pages is written (growth is fallocated and synced first), so replay and the flusher
//!    never write past the end, and a read of a committed page never faults.
//! 2. Every read through a [`MapState`] is checked against the mapped length (a page past the end
//!    is `Corrupted`, not SIGBUS) and, the first time, against its checksum and number, unless
//!    this process wrote the page to the file itself since open (`write_page`, `write_pages`: the
//!    bytes written were sealed or verified in memory, so they are trusted as written). So each
//!    page number is verified at most once per open, and a page that was in the file at open is
//!    verified before its first use.

use super::header::{Header, SLOT_WRITE};
use super::page;
use crate::error::IoContext;
use crate::storage::{Mapping, StorageFile, SyncSite};
use crate::sync::AtomicU64;
use crate::sync::{Mutex, RwLock};
use crate::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use super::page::META_PAGE;
pub(crate) use super::page::{FIRST_BITMAP_PAGE, FIRST_FREE_PAGE};

/// Pages covered by one free-space bitmap page (its bits).
pub(crate) fn section_pages(page_size: usize) -> u64 {
    ((page_size - page::PAGE_HEADER) * 8) as u64
}
/// The bitmap page of section `k`.
pub(crate) fn bitmap_page(page_size: usize, k: u64) -> u64 {
    if k == 0 {
        FIRST_BITMAP_PAGE
    } else {
        k * section_pages(page_size)
    }
}

/// The free-space map's geometry: sections of `section` pages, each with its bitmap page
/// (its bits are the allocator's, `txn/alloc.rs`; where they live is the file's layout).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub page_size: usize,
    pub section: u64,
}

impl Geometry {
    pub(crate) fn new(page_size: usize) -> Geometry {
        Geometry { page_size, section: section_pages(page_size) }
    }
    pub(crate) fn section_of(&self, pgno: u64) -> u64 {
        pgno / self.section
    }
    pub(crate) fn bitmap_page(&self, k: u64) -> u64 {
        bitmap_page(self.page_size, k)
    }
    pub(crate) fn is_bitmap_page(&self, pgno: u64) -> bool {
        pgno == self.bitmap_page(self.section_of(pgno))
    }
    /// Byte and bit of `pgno` inside its bitmap page.
    pub(crate) fn bit(&self, pgno: u64) -> (usize, u8) {
        let i = pgno % self.section;
        (crate::data::page::PAGE_HEADER + (i / 8) as usize, 1u8 << (i % 8))
    }
    /// Sections needed to cover `next_page` pages.
    pub(crate) fn sections(&self, next_page: u64) -> u64 {
        next_page.div_ceil(self.section)
    }
}

/// Size of a new data file that holds `need` bytes: at least 64 pages.
pub(crate) fn initial_len(need: u64, page_size: u64) -> u64 {
    need.max(page_size * 64)
}

/// Pages a file of `pages` pages grows by: double it while under 2,048 pages (8 MiB at 4 KiB
/// pages), then 2,048 pages, then an eighth once that is more. In bounded steps, so that a full
/// disk is met near the end of the space (a doubling step asked for up to 1 GiB at a time and
/// failed with megabytes still free), and a big file stays within an eighth of its contents.
pub(crate) fn grow_step(pages: u64) -> u64 {
    (pages / 8).max(pages.min(2048))
}

/// The words of a page bitmap covering pages `[first, end)`, each with the mask of its bits in
/// the range.
fn word_masks(first: u64, end: u64) -> impl Iterator<Item = (usize, u64)> {
    let words = if first < end { first / 64..(end - 1) / 64 + 1 } else { 0..0 };
    words.map(move |w| {
        let lo = first.max(w * 64) - w * 64;
        let hi = end.min(w * 64 + 64) - w * 64;
        let mask = if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
        (w as usize, mask)
    })
}

/// A mapping of the data file plus the set of pages already verified through it.
pub(crate) struct MapState {
    map: Arc<dyn Mapping>,
    page_size: usize,
    /// Bit per page: checksum verified once.
    verified: Box<[AtomicU64]>,
}

impl MapState {
    fn new(map: Arc<dyn Mapping>, page_size: usize, prev: Option<&MapState>) -> MapState {
        let pages = map.len() / page_size;
        let verified: Box<[AtomicU64]> = (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        if let Some(p) = prev {
            for (a, b) in verified.iter().zip(p.verified.iter()) {
                a.store(b.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
        MapState { map, page_size, verified }
    }

    /// Pages covered by the mapping.
    pub(crate) fn pages(&self) -> u64 {
        (self.map.len() / self.page_size) as u64
    }

    /// Page `pgno`, verified the first time it is read through this mapping.
    #[inline]
    pub(crate) fn page(&self, pgno: u64) -> Result<&[u8]> {
        let bytes = self.raw(pgno)?;
        if !self.is_verified(pgno) {
            self.verify_first(bytes, pgno)?;
        }
        Ok(bytes)
    }

    /// The first read of page `pgno` through this mapping: verify it, and mark it verified
    /// (out of line: once per page).
    #[cold]
    fn verify_first(&self, bytes: &[u8], pgno: u64) -> Result<()> {
        page::verify(bytes, crate::PageNo::new(pgno))?;
        self.mark_verified(pgno, 1);
        Ok(())
    }

    /// Whether page `pgno` was verified through this mapping (false past the mapping).
    #[inline]
    fn is_verified(&self, pgno: u64) -> bool {
        self.verified.get((pgno / 64) as usize).is_some_and(|w| w.load(Ordering::Acquire) & (1 << (pgno % 64)) != 0)
    }

    /// Mark pages `[first, first + n)` as verified: their bytes in the file are sealed images this
    /// process wrote itself (see `DataFile::write_pages`). Pages past the mapping are skipped.
    fn mark_verified(&self, first: u64, n: u64) {
        let end = first.saturating_add(n).min(self.pages());
        for (w, mask) in word_masks(first, end) {
            self.verified[w].fetch_or(mask, Ordering::AcqRel);
        }
    }

    /// Whether pages `[first, first + n)` are all inside the mapping and verified already (a
    /// word of the bitmap at a time: overflow runs ask for thousands of pages).
    pub(crate) fn verified_run(&self, first: u64, n: u64) -> bool {
        let Some(end) = first.checked_add(n) else { return false };
        end <= self.pages()
            && word_masks(first, end).all(|(w, mask)| self.verified[w].load(Ordering::Acquire) & mask == mask)
    }

    /// Copy the consecutive pages `[first, first + split.count)` out of the mapping as `split`
    /// says: each page's first `head` bytes handed to `head_ok` (with the page's index in the
    /// run), the rest appended to `out` (only `tail` bytes of the last page), one `memcpy` per
    /// page. No check of the bytes: the caller knows the pages were verified (`verified_run`) and
    /// checks the heads with `head_ok`. Returns `false`, `out` as it was, as soon as `head_ok`
    /// refuses a head; on error (a page past the mapping, an inconsistent split) `out` keeps its
    /// length too.
    pub(crate) fn copy_run(
        &self,
        first: u64,
        split: Split,
        out: &mut Vec<u8>,
        head_ok: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        let Split { stride, head, count, tail, extra } = split;
        split.check()?;
        if stride != self.page_size {
            return Err(Error::Invalid(format!("copy_run: stride {stride} is not the page size")));
        }
        // The whole run is one slice of the map (one bounds check, not one per page); a run
        // reaching past the mapping is refused naming its first page outside.
        let run = usize::try_from(first)
            .ok()
            .and_then(|p| p.checked_mul(stride))
            .and_then(|off| self.map.slice(off, count.checked_mul(stride)?));
        let Some(run) = run else {
            let past = (first..first.saturating_add(count as u64)).find_map(|p| self.raw(p).err());
            return Err(past.unwrap_or_else(|| Error::corrupted(Some(first), "run past the end")));
        };
        let base = out.len();
        out.reserve(split.data_len().saturating_add(extra));
        let body = stride - head;
        for (i, p) in run.chunks_exact(stride).enumerate() {
            // Start loading the whole next page before copying this one. The CPU's own
            // prefetcher stops at each 4 KiB boundary, and the copy of a page's data (4,048
            // bytes: a vector loop, where one `memcpy` of a contiguous value would be a string
            // move) does not keep enough loads in flight: from memory, a 64 KiB value copied
            // page by page ran at 6.6–7.3 GB/s, one `memcpy` of it at 8.1–9.1, page by page
            // with this at 10.8–11.0 (a throwaway program, bench/HISTORY.md).
            if let Some(next) = run.get((i + 1) * stride..(i + 2) * stride) {
                crate::storage::sys::prefetch(next, 0);
                crate::storage::sys::prefetch_lines(next);
            }
            if !head_ok(i, &p[..head]) {
                out.truncate(base);
                return Ok(false);
            }
            let len = if i + 1 == count { tail } else { body };
            out.extend_from_slice(&p[head..head + len]);
        }
        Ok(true)
    }

    /// Page `pgno` without verification (check(), tools).
    #[inline]
    pub(crate) fn raw(&self, pgno: u64) -> Result<&[u8]> {
        let off = usize::try_from(pgno).ok().and_then(|p| p.checked_mul(self.page_size));
        match off.and_then(|off| self.map.slice(off, self.page_size)) {
            Some(b) => Ok(b),
            None => Err(self.past_end(pgno, off.is_none())),
        }
    }

    /// The error for a page number out of range or past the mapping (out of line).
    #[cold]
    fn past_end(&self, pgno: u64, overflow: bool) -> Error {
        if overflow {
            Error::corrupted(Some(pgno), "page number out of range")
        } else {
            Error::corrupted(Some(pgno), format!("page is past the end of the data file ({} pages)", self.pages()))
        }
    }
}

/// How `MapState::copy_run` splits a run of pages (an overflow run): `count` pages of `stride`
/// bytes, the first `head` bytes of each handed to the caller's test, and of the last page only
/// `head + tail` bytes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    pub stride: usize,
    pub head: usize,
    pub count: usize,
    pub tail: usize,
    /// Bytes to reserve in `out` past the run's (for what the caller appends after it).
    pub extra: usize,
}

impl Split {
    /// The data bytes the run appends to `out`.
    pub(crate) fn data_len(&self) -> usize {
        self.count.saturating_sub(1) * self.stride.saturating_sub(self.head) + self.tail
    }
    /// `Invalid` unless the layout adds up.
    fn check(&self) -> Result<()> {
        let ok = self.count > 0
            && self.head <= self.stride
            && self.tail <= self.stride - self.head
            && self.count.checked_mul(self.stride).is_some();
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!("inconsistent run layout {self:?}")))
        }
    }
}

/// The open data file.
pub(crate) struct DataFile {
    pub(crate) file: Arc<dyn StorageFile>,
    pub(crate) page_size: usize,
    len: AtomicU64,
    map: RwLock<Arc<MapState>>,
    grow_lock: Mutex<()>,
    /// Growth syncs done (for stats).
    pub(crate) synced_grow: AtomicU64,
    /// Growths made (each `grow` that extended the file), and the last of them known durable.
    /// Invariant: every growth up to `grown_synced` has been followed by a completed sync of the
    /// file (any site: `fdatasync` makes durable the size and extents a later read needs), so
    /// `sync_growth` syncs only when `grown_synced < grown`.
    grown: AtomicU64,
    grown_synced: AtomicU64,
    /// Incremented by every remap, after the new map is in place (`map_generation`).
    map_gen: AtomicU64,
    /// Overflow values copied out of the map as one run (for stats).
    pub(crate) run_reads: AtomicU64,
}

impl DataFile {
    pub(crate) fn open(file: Arc<dyn StorageFile>, page_size: usize) -> Result<DataFile> {
        let len = file.len().ctx("data file length")?;
        let map = file.map(len).ctx("map data file")?;
        Ok(DataFile {
            file,
            page_size,
            len: AtomicU64::new(len),
            map: RwLock::new(Arc::new(MapState::new(map, page_size, None))),
            grow_lock: Mutex::new(()),
            synced_grow: AtomicU64::new(0),
            grown: AtomicU64::new(0),
            grown_synced: AtomicU64::new(0),
            map_gen: AtomicU64::new(0),
            run_reads: AtomicU64::new(0),
        })
    }

    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// Whether the file system can still give the file `bytes` more (`StorageFile::space_free`);
    /// true when it cannot tell, or when asking fails (the growth then finds out itself).
    pub(crate) fn has_room(&self, bytes: u64) -> bool {
        self.file.space_free().ok().flatten().is_none_or(|free| bytes <= free)
    }

    /// The current mapping (covers every page of every committed state).
    pub(crate) fn map(&self) -> Arc<MapState> {
        self.map.read().clone()
    }

    /// How many times the file was mapped anew: a map taken after reading `g` is at least as new
    /// as generation `g` (so one kept with the generation read before taking it is current
    /// while the generation has not moved: the readers' lanes keep their epochs so,
    /// `txn::readers::Readers::begin`).
    pub(crate) fn map_generation(&self) -> u64 {
        self.map_gen.load(Ordering::Acquire)
    }

    /// Make sure pages `[0, pages)` exist on disk, durably, and are mapped: a `grow_step` past
    /// the current end (or to `pages` if that is further); when the disk has no room for the
    /// step, exactly `pages` (a full disk fails only when even that does not fit). Also makes
    /// any earlier growth of `ensure_pages_lazy` durable.
    pub(crate) fn ensure_pages(&self, pages: u64) -> Result<()> {
        self.ensure_pages_lazy(pages)?;
        self.sync_growth()
    }

    /// `ensure_pages` without the sync: for a commit whose own sync of the data file (pages
    /// written once, `data.write_once`) comes before its record anyway, or which calls
    /// `sync_growth` before the record. Until one of them, a crash may lose the growth, which
    /// nothing refers to yet.
    pub(crate) fn ensure_pages_lazy(&self, pages: u64) -> Result<()> {
        let ps = self.page_size as u64;
        let need = pages.checked_mul(ps).ok_or_else(|| Error::Invalid("database too large".into()))?;
        // A step the file system says it cannot give is not tried: a failing `fallocate` takes
        // every free block before it gives them back, and a journal file made meanwhile (the
        // spare's thread) would meet a full disk.
        let step = |cur: u64| {
            let cur_pages = cur / ps;
            let to = cur_pages.saturating_add(grow_step(cur_pages)).max(pages).saturating_mul(ps);
            if self.has_room(to.saturating_sub(cur)) {
                to
            } else {
                need
            }
        };
        match self.grow(need, step) {
            Err(e) if e.is_disk_full() => self.grow(need, |_| need),
            r => r,
        }
    }

    /// Grow the file to `pages` pages exactly, if it is shorter (the flusher's growth ahead of the
    /// writer, in small steps, so that the file does not double early). Same rules as
    /// `ensure_pages`.
    pub(crate) fn grow_to(&self, pages: u64) -> Result<()> {
        let need =
            pages.checked_mul(self.page_size as u64).ok_or_else(|| Error::Invalid("database too large".into()))?;
        self.grow(need, |_| need)?;
        self.sync_growth()
    }

    /// Make every growth so far durable (`fsync`, `data.grow`) unless a sync since has. A
    /// failed sync is `Poisoned` (never retried).
    pub(crate) fn sync_growth(&self) -> Result<()> {
        let g = self.grown.load(Ordering::Acquire);
        if self.grown_synced.load(Ordering::Acquire) >= g {
            return Ok(());
        }
        self.file
            .sync_all(SyncSite::DataGrow)
            .map_err(|e| Error::Poisoned(format!("sync of data file growth failed: {e}")))?;
        self.synced_grow.fetch_add(1, Ordering::Relaxed);
        self.grown_synced.fetch_max(g, Ordering::AcqRel);
        Ok(())
    }

    /// Give back the file's slack above page `pages` (the last committed high-water mark), at
    /// `close` when no snapshot is alive: growth steps ahead of the writer leave up to an eighth
    /// of the file unused. Never below `initial_len`. The mapping is replaced by one of the new
    /// length first thing after, so nothing maps past the end; the caller guarantees no view of
    /// the old mapping is alive. Not synced: a longer file after a crash is harmless (DURABILITY
    /// §8.3 step 7b).
    pub(crate) fn trim_to(&self, pages: u64) -> Result<()> {
        let ps = self.page_size as u64;
        let want = initial_len(pages.saturating_mul(ps), ps);
        let _g = self.grow_lock.lock();
        if want >= self.len() {
            return Ok(());
        }
        self.file.set_len(want).ctx("trim data file")?;
        self.remap(want)
    }

    /// Grow to `to(current length)` bytes if the file is shorter than `need` bytes; not synced
    /// (`sync_growth`, or any later sync of the file).
    fn grow(&self, need: u64, to: impl FnOnce(u64) -> u64) -> Result<()> {
        if need <= self.len() {
            return Ok(());
        }
        let _g = self.grow_lock.lock();
        let cur = self.len();
        if need <= cur {
            return Ok(());
        }
        let new_len = to(cur);
        // A full disk fails here, before anything refers to the new pages: nothing to undo.
        self.file.allocate(new_len).ctx("grow data file")?;
        // Counted after `allocate` returned: a sync that reads the count after this covers it.
        self.grown.fetch_add(1, Ordering::AcqRel);
        self.remap(new_len)
    }

    fn remap(&self, new_len: u64) -> Result<()> {
        let map = self.file.map(new_len).ctx("map data file")?;
        let mut cur = self.map.write();
        let ms = MapState::new(map, self.page_size, Some(&cur));
        *cur = Arc::new(ms);
        self.len.store(new_len, Ordering::Release);
        self.map_gen.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Read a page with `pread` (recovery, where the map may be stale).
    pub(crate) fn read_page(&self, pgno: u64, buf: &mut [u8]) -> Result<()> {
        self.file.read_exact_at(buf, pgno * self.page_size as u64).ctx("read data page")
    }

    /// Write one page. Every caller writes a page image that is sealed (the commit that made it
    /// computed its checksum from these very bytes) or was verified (recovery), so once the write
    /// has returned the page counts as verified for reads through the map (invariant 2): a page
    /// this process wrote is not hashed again when it is read back (see `write_pages`).
    /// `buf` may hold several consecutive pages from `pgno` on (pages written once in a run).
    pub(crate) fn write_page(&self, pgno: u64, buf: &[u8]) -> Result<()> {
        debug_assert!(!buf.is_empty() && buf.len().is_multiple_of(self.page_size));
        self.file.write_all_at(buf, pgno * self.page_size as u64).ctx("write data page")?;
        self.map.read().mark_verified(pgno, (buf.len() / self.page_size) as u64);
        Ok(())
    }

    /// Write pages `first..` (one slice per page), then mark them verified (as `write_page`). The
    /// mark is set in the current mapping under its read lock, so a concurrent remap (which copies
    /// the bits under the write lock) either carries it over or is seen by it.
    pub(crate) fn write_pages(&self, first: u64, bufs: &[std::io::IoSlice<'_>]) -> Result<()> {
        self.file.write_vectored_at(bufs, first * self.page_size as u64).ctx("write data pages")?;
        debug_assert!(bufs.iter().all(|b| b.len() == self.page_size));
        self.map.read().mark_verified(first, bufs.len() as u64);
        Ok(())
    }

    /// Pace writeback of pages `[first, first + n)` (see `StorageFile::write_back`).
    pub(crate) fn write_back(&self, first: u64, n: u64) {
        let ps = self.page_size as u64;
        let _ = self.file.write_back(first * ps, n * ps);
    }

    pub(crate) fn sync(&self, site: SyncSite) -> Result<()> {
        let g = self.grown.load(Ordering::Acquire);
        self.file.sync_data(site).ctx("sync data file")?;
        self.grown_synced.fetch_max(g, Ordering::AcqRel);
        Ok(())
    }

    pub(crate) fn write_header(&self, h: &Header) -> Result<()> {
        let slot = h.revision & 1;
        let mut block = vec![0u8; SLOT_WRITE];
        block[..super::header::HEADER_LEN].copy_from_slice(&h.encode());
        self.file.write_all_at(&block, slot * self.page_size as u64).ctx("write header slot")?;
        self.file.sync_data(SyncSite::Header).ctx("sync header slot")
    }

    /// The header of `file` (`read_headers`), checked against the file's length: a file shorter
    /// than the pages its header records is `Corrupted`. Returns the header and the length.
    pub(crate) fn read_header_checked(file: &dyn StorageFile) -> Result<(Header, u64)> {
        let header = DataFile::read_headers(file)?;
        let flen = file.len().ctx("data file length")?;
        if flen < header.next_page.saturating_mul(header.page_size as u64) {
            return Err(Error::corrupted(
                None,
                format!("data file is {flen} bytes, shorter than the {} pages its header records", header.next_page),
            ));
        }
        Ok((header, flen))
    }

    /// Decode both slots (a file too short for a slot yields `Foreign` for it).
    pub(crate) fn read_headers(file: &dyn StorageFile) -> Result<Header> {
        let len = file.len().ctx("data file length")?;
        let slot = |off: u64| -> Result<Result<Header, super::header::SlotError>> {
            if len < off + SLOT_WRITE as u64 {
                return Ok(Err(super::header::SlotError::Foreign));
            }
            let mut b = vec![0u8; super::header::HEADER_LEN];
            file.read_exact_at(&mut b, off).ctx("read header slot")?;
            Ok(Header::decode(&b))
        };
        let a = slot(0)?;
        // Slot 1 sits at page 1; its offset depends on the page size recorded in slot 0.
        let ps = match &a {
            Ok(h) => h.page_size as u64,
            Err(_) => {
                // Try every legal page size for slot 1.
                let mut found = None;
                let mut ps = 4096u64;
                while ps <= 65536 {
                    if let Ok(Ok(h)) = slot(ps) {
                        if h.page_size as u64 == ps {
                            found = Some(ps);
                            break;
                        }
                    }
                    ps *= 2;
                }
                found.unwrap_or(4096)
            }
        };
        let b = slot(ps)?;
        let b = match b {
            Ok(h) if h.page_size as u64 != ps => Err(super::header::SlotError::Damaged("slot 1 page size".into())),
            other => other,
        };
        Header::choose(a, b)
    }
}

/// Pages written (in runs) since the last writeback hint, gathered into one hint: the span from
/// the lowest to the highest page, once it holds `WRITE_BACK_BATCH` written pages (and what is
/// left at `finish`). Pages never written in the span cost the hint nothing (it starts writeback
/// of dirty pages only). Before, a flush of scattered pages (random updates: runs of one page)
/// made one `sync_file_range` per page, ~50,000 calls in a YCSB A run of 100,000 operations.
#[derive(Default)]
pub(crate) struct WriteBack {
    span: Option<(u64, u64)>,
    pages: u64,
}

/// Written pages per writeback hint (4 MiB of 4 KiB pages).
pub(crate) const WRITE_BACK_BATCH: u64 = 1024;

impl WriteBack {
    /// Pages `[first, first + n)` were written.
    pub(crate) fn add(&mut self, data: &DataFile, first: u64, n: u64) {
        let (lo, hi) = self.span.map_or((first, first + n), |(lo, hi)| (lo.min(first), hi.max(first + n)));
        self.span = Some((lo, hi));
        self.pages += n;
        if self.pages >= WRITE_BACK_BATCH {
            self.finish(data);
        }
    }
    /// Hint what is gathered.
    pub(crate) fn finish(&mut self, data: &DataFile) {
        if let Some((lo, hi)) = self.span.take() {
            data.write_back(lo, hi - lo);
        }
        self.pages = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemStorage, OpenMode, Storage};

    /// Runs of verified pages are marked and checked a bitmap word at a time: every run, across
    /// word boundaries and up to the mapping's end, agrees with a page-by-page check.
    #[test]
    fn verified_runs_agree_with_each_page() {
        let ps = 4096;
        let f = MemStorage::new().open(std::path::Path::new("d"), OpenMode::CreateReadWrite).unwrap();
        f.write_all_at(&vec![0u8; 200 * ps], 0).unwrap();
        let data = DataFile::open(f, ps).unwrap();
        let map = data.map();
        for (first, n) in [(3, 5), (60, 10), (64, 64), (127, 1), (130, 70), (199, 5)] {
            map.mark_verified(first, n);
        }
        let page = |p: u64| map.is_verified(p);
        let marked = |p: u64| {
            [(3, 5), (60, 10), (64, 64), (127, 1), (130, 70), (199, 5)].iter().any(|&(f, n)| p >= f && p < f + n)
        };
        for p in 0..200 {
            assert_eq!(page(p), marked(p), "page {p}");
        }
        assert!(!map.is_verified(200), "past the mapping");
        for first in 0..200u64 {
            for n in [0u64, 1, 2, 63, 64, 65, 130] {
                let want = first + n <= 200 && (first..first + n).all(marked);
                assert_eq!(map.verified_run(first, n), want, "run {first}+{n}");
            }
        }
        assert!(!map.verified_run(u64::MAX, 2), "a run whose end overflows");
    }

    /// `copy_run` splits each page into its head and its data as `Split` says (the last page
    /// cut at `tail`), hands each head over with its index, appends after what `out` held, and
    /// leaves `out` untouched when a head is refused, the run reaches past the mapping or the
    /// split does not add up.
    #[test]
    fn copy_run_splits_pages_and_refuses_runs_past_the_map() {
        let ps = 4096;
        let f = MemStorage::new().open(std::path::Path::new("d"), OpenMode::CreateReadWrite).unwrap();
        let bytes: Vec<u8> = (0..8 * ps).map(|i| (i * 31 % 251) as u8).collect();
        f.write_all_at(&bytes, 0).unwrap();
        let data = DataFile::open(f, ps).unwrap();
        let map = data.map();
        let (head, count, tail) = (48, 5, 100);
        let heads = std::cell::RefCell::new(Vec::new());
        let keep = |i: usize, h: &[u8]| {
            heads.borrow_mut().push((i, h.to_vec()));
            true
        };
        let mut out = vec![7u8; 3];
        assert!(map.copy_run(2, Split { stride: ps, head, count, tail, extra: 0 }, &mut out, &keep).unwrap());
        let mut want = vec![7u8; 3];
        let heads = heads.into_inner();
        assert_eq!(heads.len(), count);
        for (i, (at, h)) in heads.iter().enumerate() {
            let p = &bytes[(2 + i) * ps..(3 + i) * ps];
            assert_eq!((*at, &h[..]), (i, &p[..head]), "head of page {}", 2 + i);
            want.extend_from_slice(&p[head..if i + 1 == count { head + tail } else { ps }]);
        }
        assert_eq!(out, want);
        let all = |_: usize, _: &[u8]| true;
        assert!(!map.copy_run(2, Split { stride: ps, head, count, tail, extra: 0 }, &mut out, &|i, _| i < 3).unwrap());
        assert_eq!(out, want, "a refused head leaves out as it was");
        assert!(map.copy_run(6, Split { stride: ps, head, count: 4, tail, extra: 0 }, &mut out, &all).is_err());
        assert_eq!(out, want, "a failed run leaves out as it was");
        assert!(map.copy_run(0, Split { stride: ps, head, count: 4, tail: ps, extra: 0 }, &mut out, &all).is_err());
        assert!(map.copy_run(0, Split { stride: 512, head, count: 4, tail, extra: 0 }, &mut out, &all).is_err());
        assert_eq!(out, want);
    }
}
