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

/// A method that is public with the `internals` feature and crate-private without it (raw page
/// access and test hooks: see [`internals`]).
macro_rules! internals_pub {
    ($(#[$m:meta])* fn $($rest:tt)*) => {
        #[cfg(feature = "internals")]
        $(#[$m])*
        pub fn $($rest)*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code)]
        $(#[$m])*
        pub(crate) fn $($rest)*
    };
}

mod api;
mod batch;
mod data;
mod env;
mod error;
mod ids;
mod journal;
mod options;
mod stats;
// Parts of it are used only by tests and tools, through `internals`.
#[cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]
mod storage;
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
    Bytes, Cursor, Iter, KeyRange, Range, ReadCursor, ReadTxn, ReadValues, SnapSource, Source, Tree, TreeStats,
    TxSource, ValueReader, Values, WriteCursor, WriteRange, WriteTxn, WriteValues,
};
pub use batch::{BatchHandle, BatchKey, BatchValue, WriteBatch};
pub use env::Env;
pub use error::{Error, Limit, Result};
pub use ids::TxId;
pub use options::{Durability, FlusherMode, FreeSpacePolicy, Options};
/// The deterministic scheduler the engine was built against (feature `shuttle`, for `tests/shuttle.rs`).
#[cfg(feature = "shuttle")]
pub use shuttle;
pub use stats::{CheckReport, CommitStats, PagesByKind, Problem, ProblemKind, ReaderInfo, Stats};
pub use tree::node::max_key_size;
pub use tree::overflow::MAX_VALUE_SIZE;

/// What the engine's own tests, its crash harness and low-level tools need, and applications do
/// not: raw page access, the storage traits (the real, in-memory and test storages are written
/// against them), the sync sites and test clocks. Enabled by the cargo feature `internals`; no
/// stability promise. With it, `ReadTxn` and `WriteTxn` also get raw page methods (`page`,
/// `page_mut`, `alloc_page`, `free_page`, `next_page`), `Options` the `storage` and `clock`
/// setters, and `Env` `check_with` (a check of a database written through raw pages).
#[cfg(feature = "internals")]
pub mod internals {
    pub use crate::data::file::META_PAGE;
    pub use crate::data::page::{page_kind, page_no, page_txid, PageKind, PAGE_HEADER};
    pub use crate::options::{Clock, ManualClock, SystemClock};
    pub use crate::storage::*;
    pub use crate::txn::PageRef;
}
#[cfg(feature = "serde")]
pub use typed::Serde;
pub use typed::{AsKey, AsValue, Key, KeyPrefix, ReadAccess, TypedRange, TypedTree, TypedValues, Value};
