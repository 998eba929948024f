//! Transactions: the page table (MVCC), the free-space allocator, read snapshots, the write
//! transaction, and the flusher that moves committed versions into the data file.
//!
//! Transaction lifecycle (one writer at a time, any number of readers):
//!
//! ```text
//!  write():  Active ──page_mut/alloc/free──▶ Active ──commit──▶ Journaled ──publish──▶ Committed
//!                └──abort / drop──▶ Discarded (dirty pages and allocator changes dropped)
//!  read():   Live (captures last committed txid under the readers lock) ──drop──▶ Ended
//!  flusher:  Idle ──threshold / idle / flush()──▶ Writing (journal durable ≤ T, pages ≤ T to the
//!            data file) ──▶ Syncing (no lock held) ──▶ Header written ──▶ Retired ──▶ Idle
//! ```

pub(crate) mod alloc;
pub(crate) mod core;
pub(crate) mod flusher;
pub(crate) mod page_table;
pub(crate) mod read;
pub(crate) mod write;

pub use read::PageRef;
pub(crate) use read::Snapshot;
pub(crate) use write::PageTxn;

/// The byte ranges `(start, end)` of a page that an in-place change wrote: what a page
/// modification reports to `PageTxn::modify`, so that the journal carries only those bytes.
pub(crate) type Written = smallvec::SmallVec<[(usize, usize); 4]>;
