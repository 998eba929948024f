//! Transactions: the page table (MVCC), the free-space allocator, read snapshots, the write
//! transaction, and the flusher that moves committed versions into the data file.
//!
//! Transaction lifecycle (one writer at a time, any number of readers; docs/ARCHITECTURE.md §2, §3,
//! §7 and docs/DURABILITY.md §2, §4 have the steps):
//!
//! ```text
//!  write (PageTxn::begin: flush first if over max_pinned_bytes, take the writer lock, base = the
//!         last *prepared* state, which snapshots may not see yet)
//!    Active ──page / page_mut / modify / alloc_page / free_page / reserve_page + write_once_run
//!       │      (spill past max_dirty_pages)──▶ Active
//!       ├──abort / drop──▶ Discarded (dirty pages and local free counts dropped; pages already
//!       │                   written once lie past the prepared next_page, or in free pages
//!       │                   nothing reads (`claim_free`), unreferenced)
//!       └──PageTxn::prepare (under the writer lock; a failure fails this commit alone, except
//!          a failed data-file write or sync, or one after a streamed record's reservation,
//!          which poisons):
//!            seal every dirty page (number, txid, checksum) ─▶ grow the data file (fsync) ─▶
//!            write once the pages past the base next_page (fdatasync) ─▶ build the payload
//!            (or stream it into its reserved place) ─▶ reserve the record's journal place
//!            (Space::reserve, the last fallible step) ─▶ publish the versions in the page
//!            table under txid, invisible; txlog entry; prepared = txid ─▶ writer lock released
//!            (an empty transaction prepares nothing)
//!            ▼
//!    Prepared ──drop──▶ environment poisoned (later transactions would wait for its record)
//!       └──Prepared::finish (any thread): wait on journal_cv until txid − 1 is appended
//!            (records go in txid order) ─▶ append the record by durability mode ─▶
//!            committed = txid: Committed (visible to new snapshots); durable now for Sync, later
//!            for Buffered / None (a Sync commit, a flush's make_durable, close)
//!            ─▶ wake the flusher if a flush is due.  A failed append, or an earlier one,
//!            poisons: Err(Poisoned).  Empty: Sync waits for its base and makes it durable.
//!
//!  read (Snapshot::try_begin, which refuses a closed environment, or Snapshot::begin): Live
//!         (captures the *committed* txid and next_page and registers a reader slot under its
//!         thread's readers lane, readers.rs) ──drop of the last Arc<Snapshot>──▶ Ended
//!
//!  flusher (background thread, or flush_once on the caller's thread):
//!    Idle (waits up to min(flush_idle, 250 ms); may grow the data file ahead)
//!      ──due / requested / idle──▶ flush_once, under flush_state: target T = committed, or the
//!      oldest snapshot if older, registered as a reader ─▶ journal durable through T
//!      (make_durable) ─▶ pages ≤ T written to the data file ─▶ fdatasync (if any) ─▶ header slot
//!      written and synced ─▶ retire (page-table versions, txlog, journal files) ─▶ Idle
//! ```

pub(crate) mod alloc;
pub(crate) mod check;
pub(crate) mod close;
pub(crate) mod core;
pub(crate) mod flusher;
pub(crate) mod page_table;
pub(crate) mod read;
pub(crate) mod readers;
pub(crate) mod stats;
pub(crate) mod write;

pub use read::PageRef;
pub(crate) use read::Snapshot;
pub(crate) use write::PageTxn;

/// The byte ranges `(start, end)` of a page that an in-place change wrote: what a page
/// modification reports to `PageTxn::modify`, so that the journal carries only those bytes.
pub(crate) type Written = smallvec::SmallVec<[(usize, usize); 4]>;
