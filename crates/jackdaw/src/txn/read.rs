//! Read snapshots.
//!
//! A snapshot captures the last committed transaction id while holding the readers lock, which the
//! flusher also takes to compute how far it may write: so no page version the snapshot needs can
//! be written over in the data file while it lives. After that it reads without locks: the page
//! table when it holds a version `<= txid`, else the mapped data file.

use super::core::Core;
use super::page_table::PageBuf;
use crate::data::MapState;
use crate::{Error, PageNo, Result, TxId};
use std::ops::Deref;
use std::sync::Arc;

/// A page as seen by a transaction: borrowed (from the map or the writer's own copy), or an
/// image held in memory by the page table.
pub enum PageRef<'a> {
    Borrowed(&'a [u8]),
    Held(PageBuf),
}

impl Deref for PageRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PageRef::Borrowed(b) => b,
            PageRef::Held(b) => b,
        }
    }
}

impl AsRef<[u8]> for PageRef<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// What a snapshot sees: used by readers and by the writer for its base state.
pub(crate) struct View {
    pub txid: TxId,
    pub next_page: PageNo,
    pub map: Arc<MapState>,
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
        if let Some(b) = core.table.lookup(pgno, self.txid, whole) {
            return Ok(PageRef::Held(b));
        }
        let p = self.map.page(pgno.get())?;
        if whole {
            crate::data::page::prefetch_all(p);
        }
        Ok(PageRef::Borrowed(p))
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
            && (first.get()..first.get() + n).all(|pgno| core.table.get(PageNo::new(pgno), self.txid).is_none())
    }
}

pub(crate) struct Snapshot {
    pub(crate) core: Arc<Core>,
    pub(crate) view: View,
    slot: usize,
    /// The memo of this state when the snapshot began (`Readers::memo`).
    pub(crate) memo: Option<super::core::Memo>,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut r = self.core.readers.lock();
        r.remove(self.slot);
        // The last transaction of a closed environment releases its locks.
        self.core.release_lock_if_idle(&r);
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
        (head, tail): (usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        if !self.view.file_run(&self.core, first, count as u64) {
            return Ok(false);
        }
        let split = crate::data::file::Split { stride: self.core.page_size(), head, count, tail };
        let whole = self.view.map.copy_run(first.get(), split, out, laid_out)?;
        if whole {
            self.core.data.run_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(whole)
    }

    /// Capture the last committed state (see the module doc for why under the readers lock).
    pub(crate) fn begin(core: &Arc<Core>) -> Arc<Snapshot> {
        let now = core.opts.clock.now();
        let (view, slot, memo) = Snapshot::register(core, &mut core.readers.lock(), now);
        Arc::new(Snapshot { core: core.clone(), view, slot, memo })
    }

    /// `begin`, or `Closed` once the environment is closed: decided under the readers lock, so
    /// a snapshot never begins after `close` has found no reader and released the locks.
    pub(crate) fn try_begin(core: &Arc<Core>) -> Result<Arc<Snapshot>> {
        let now = core.opts.clock.now();
        let (view, slot, memo) = {
            let mut r = core.readers.lock();
            if core.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(Error::Closed);
            }
            Snapshot::register(core, &mut r, now)
        };
        Ok(Arc::new(Snapshot { core: core.clone(), view, slot, memo }))
    }

    /// Register a reader of the committed state in `r` (the readers, locked): its view
    /// (`(txid, next_page)` and the data file's map), its slot and the state's memo, all read
    /// under that lock.
    fn register(
        core: &Core,
        r: &mut super::core::Readers,
        now: std::time::Duration,
    ) -> (View, usize, Option<super::core::Memo>) {
        let c = r.committed;
        let view = View { txid: c.txid, next_page: c.next_page, map: r.current_map(&core.data) };
        (view, r.add(c.txid, now), r.memo(c.txid))
    }

    /// Publish `m` as the memo of this snapshot's state, for the snapshots that begin after.
    pub(crate) fn publish_memo(&self, m: super::core::Memo) {
        self.core.readers.lock().set_memo(self.view.txid, m);
    }

    /// The id of the last transaction this snapshot sees.
    pub(crate) fn txid(&self) -> TxId {
        self.view.txid
    }

    /// The page high-water mark of the snapshot.
    pub(crate) fn next_page(&self) -> PageNo {
        self.view.next_page
    }

    /// Page `pgno` as of this snapshot (checksum verified on first read from the data file).
    #[inline]
    pub(crate) fn page(&self, pgno: PageNo) -> Result<PageRef<'_>> {
        self.view.page(&self.core, pgno)
    }

    pub(crate) fn page_whole(&self, pgno: PageNo) -> Result<PageRef<'_>> {
        self.view.page_whole(&self.core, pgno)
    }
}
