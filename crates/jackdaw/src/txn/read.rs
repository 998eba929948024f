//! Read snapshots.
//!
//! A snapshot captures the last committed transaction id while it registers as a reader of it
//! (`readers.rs`: on its thread's lane, whose lock the flusher also takes to compute how far it
//! may write): so no page version the snapshot needs can be written over in the data file while
//! it lives. After that it reads without locks: the page table when it holds a version
//! `<= txid`, else the mapped data file.

use super::core::Core;
use super::page_table::Era;
use super::readers::{Memo, Seat};
use crate::data::MapState;
use crate::{Error, PageNo, Result, TxId};
use std::sync::Arc;

/// A page as seen by a transaction: borrowed from the map, from a page-table version the view's
/// era keeps (page_table invariant 5), or from the writer's own copy.
pub type PageRef<'a> = &'a [u8];

/// What a snapshot sees: used by readers and by the writer for its base state.
pub(crate) struct View {
    pub txid: TxId,
    pub next_page: PageNo,
    pub map: Arc<MapState>,
    /// The page table's era, taken before any lookup, which keeps the versions the view finds
    /// (page_table invariant 5), so they are read in place, with no reference count written: by
    /// a snapshot, and by the writer for its base state (whose versions it diffs its copies
    /// against at commit, found again through `page_again`).
    pub era: Arc<Era>,
}

impl View {
    #[inline]
    pub(crate) fn page<'a>(&'a self, core: &Core, pgno: PageNo) -> Result<PageRef<'a>> {
        self.page_hinted(core, pgno, false)
    }

    /// `page`, for a page the caller reads whole: every line of it starts loading
    /// (`PageRead::page_whole`).
    #[inline]
    pub(crate) fn page_whole<'a>(&'a self, core: &Core, pgno: PageNo) -> Result<PageRef<'a>> {
        self.page_hinted(core, pgno, true)
    }

    #[inline(always)]
    fn page_hinted<'a>(&'a self, core: &Core, pgno: PageNo, whole: bool) -> Result<PageRef<'a>> {
        if pgno >= self.next_page || pgno < crate::data::file::FIRST_BITMAP_PAGE {
            return Err(self.outside(pgno));
        }
        if let Some(b) = core.table.lookup_in(pgno, self.txid, whole, &self.era) {
            return Ok(b);
        }
        let p = self.map.page(pgno.get())?;
        if whole {
            crate::data::page::prefetch_all(p);
        }
        Ok(p)
    }

    /// Page `pgno` of a snapshot's view again, already read (and verified) through `page`: the
    /// table's version read in place, else the data file's (where the table's version is once
    /// retired: the same bytes). For the writer, which diffs its copies against its base's versions
    /// at commit.
    pub(crate) fn page_again<'a>(&'a self, core: &Core, pgno: PageNo) -> Option<&'a [u8]> {
        if let Some(b) = core.table.lookup_in(pgno, self.txid, false, &self.era) {
            return Some(b);
        }
        self.map.raw(pgno.get()).ok()
    }

    /// The error for a page number outside the snapshot (out of line: every page read checks).
    #[cold]
    fn outside(&self, pgno: PageNo) -> Error {
        Error::corrupted_at(pgno, format!("page number outside [2, {}) of transaction {}", self.next_page, self.txid))
    }

    /// Whether this view reads pages `[first, first + n)` from the data file, every one already
    /// verified (so a positional read returns what `page` would).
    fn file_run(&self, core: &Core, first: PageNo, n: u64) -> bool {
        first >= crate::data::file::FIRST_BITMAP_PAGE
            && first.get().checked_add(n).is_some_and(|end| end <= self.next_page.get())
            && self.map.verified_run(first.get(), n)
            && (first.get()..first.get() + n).all(|pgno| !core.table.holds(PageNo::new(pgno), self.txid))
    }
}

/// What the snapshots of one readers' lane begin from while the committed state, the data
/// file's map and the memo stay the same (`Readers::begin`): the environment, the view and the
/// memo. On cache lines of its own: its reference count is written by every begin and end on
/// its lane, and by no other lane's.
///
/// It holds the `Core` for its snapshots (so that they write no count the other lanes write)
/// and the lane holds it: a cycle, which `close` breaks (`AllLanes::clear_epochs`, with every
/// lane held after `closed` is set, from when no lane keeps an epoch).
#[repr(align(128))]
pub(crate) struct Epoch {
    core: Arc<Core>,
    view: View,
    /// The memo of `view.txid` when the epoch was made (`Readers::memo`).
    memo: Option<Memo>,
}

/// A registered reader of one committed state. Holds its environment through its lane's
/// `Epoch` (no reference count of its own: see `readers.rs`).
pub(crate) struct Snapshot {
    epoch: Arc<Epoch>,
    seat: Seat,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.core().readers.end(self.seat);
        // The last transaction of a closed environment releases its locks.
        self.core().release_lock_if_idle();
    }
}

impl Snapshot {
    /// Read pages `[first, first + count)` as this snapshot sees them, copied out of its mapping
    /// (`MapState::copy_run`), when they are exactly verified bytes of the data file: each
    /// page's first `head` bytes go to `laid_out`, which says whether they are the pages the
    /// caller expects; the rest is appended to `out` (`tail` bytes of the last page). `false`,
    /// with `out` as it was, when the pages are not such a run or `laid_out` refuses them.
    pub(crate) fn read_run(
        &self,
        (first, count): (PageNo, usize),
        (head, tail, extra): (usize, usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        if !self.view().file_run(self.core(), first, count as u64) {
            return Ok(false);
        }
        let split = crate::data::file::Split { stride: self.core().page_size(), head, count, tail, extra };
        let whole = self.view().map.copy_run(first.get(), split, out, laid_out)?;
        if whole {
            self.core().data.run_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(whole)
    }

    /// Capture the last committed state (see the module doc), even after `close` (`check()`).
    /// Never `Err`: the registration it shares with `try_begin` refuses only for that one.
    pub(crate) fn begin(core: &Arc<Core>) -> Result<Arc<Snapshot>> {
        Snapshot::register(core, false)
    }

    /// `begin`, or `Closed` once the environment is closed: decided under the lane's lock, so
    /// a snapshot never begins after `close` has found no reader and released the locks.
    pub(crate) fn try_begin(core: &Arc<Core>) -> Result<Arc<Snapshot>> {
        Snapshot::register(core, true)
    }

    fn register(core: &Arc<Core>, refuse_closed: bool) -> Result<Arc<Snapshot>> {
        let now = core.opts.clock.now();
        let era_gen = core.table.era_gen();
        let (epoch, seat) =
            core.readers.begin(&core.data, era_gen, &core.closed, refuse_closed, now, |c, map, memo| Epoch {
                core: core.clone(),
                view: View { txid: c.txid, next_page: c.next_page, map, era: core.table.era() },
                memo,
            })?;
        Ok(Arc::new(Snapshot { epoch, seat }))
    }

    /// The environment's state.
    #[inline]
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.epoch.core
    }

    /// What this snapshot sees.
    #[inline]
    pub(crate) fn view(&self) -> &View {
        &self.epoch.view
    }

    /// The memo of this state when the snapshot began (`Readers::memo`).
    #[inline]
    pub(crate) fn memo(&self) -> Option<&Memo> {
        self.epoch.memo.as_ref()
    }

    /// Publish `m` as the memo of this snapshot's state, for the snapshots that begin after.
    pub(crate) fn publish_memo(&self, m: Memo) {
        self.core().readers.set_memo(self.view().txid, m);
    }

    /// The id of the last transaction this snapshot sees.
    pub(crate) fn txid(&self) -> TxId {
        self.view().txid
    }

    /// The page high-water mark of the snapshot.
    pub(crate) fn next_page(&self) -> PageNo {
        self.view().next_page
    }

    /// Page `pgno` as of this snapshot (checksum verified on first read from the data file).
    #[inline]
    pub(crate) fn page(&self, pgno: PageNo) -> Result<PageRef<'_>> {
        self.view().page(self.core(), pgno)
    }

    pub(crate) fn page_whole(&self, pgno: PageNo) -> Result<PageRef<'_>> {
        self.view().page_whole(self.core(), pgno)
    }
}
