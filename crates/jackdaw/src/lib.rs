//! Jackdaw: an embedded, transactional, ordered key-value storage engine.
//!
//! Layers, bottom up (dependencies point one way):
//! `storage` (the only code that touches the OS) ← `data` (data file, header slots, pages) ←
//! `journal` (records, writer, recovery) ← `txn` (page table, allocator, snapshots, the write
//! transaction, the flusher) ← `tree` (B+tree pages, search, split, merge, cursors, overflow)
//! ← `api` (tree handles, read/write transactions, iterators) and `env` (open, recovery, close,
//! stats, check).
//! See docs/ARCHITECTURE.md for the write and read paths.
#![deny(unsafe_code)]

mod api;
mod batch;
mod data;
mod env;
mod error;
mod journal;
mod options;
mod stats;
pub mod storage;
mod sync;
mod tree;
mod txn;
pub mod typed;

/// A xorshift64 generator for the unit tests' fixed pseudo-random sequences.
#[cfg(test)]
pub(crate) fn test_rng(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

pub use api::catalog::max_tree_name;
pub use api::{
    Bytes, Cursor, KeyRange, Range, ReadTxn, Source, Tree, TreeStats, ValueReader, Values, WriteRange, WriteTxn,
};
pub use batch::{BatchHandle, BatchKey, BatchValue, WriteBatch};
pub use data::file::META_PAGE;
pub use data::page::{page_kind, page_no, page_txid, PageKind, PAGE_HEADER};
pub use env::Env;
pub use error::{Error, Result};
pub use options::{Clock, Durability, FlusherMode, FreeSpacePolicy, ManualClock, Options, SystemClock};
/// The deterministic scheduler the engine was built against (feature `shuttle`, for `tests/shuttle.rs`).
#[cfg(feature = "shuttle")]
pub use shuttle;
pub use stats::{CheckReport, CommitStats, PagesByKind, ReaderInfo, Stats};
pub use tree::node::max_key_size;
pub use tree::overflow::MAX_VALUE_SIZE;
pub use txn::PageRef;
#[cfg(feature = "serde")]
pub use typed::Serde;
pub use typed::{AsKey, AsValue, Key, KeyPrefix, ReadAccess, TypedRange, TypedTree, TypedValues, Value};
