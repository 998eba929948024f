//! Jackdaw: an embedded, transactional, ordered key-value storage engine.
//!
//! An [`Env`] is one database in a directory: named trees of byte keys in order, written by one
//! write transaction at a time ([`WriteTxn`], committed through a journal: durable on return in
//! the default [`Durability::Sync`] mode) and read by any number of concurrent read transactions
//! ([`ReadTxn`], each a consistent snapshot that never blocks the writer). A tree is *plain* (one
//! value per key) or *multi-value* (a sorted set of values per key, with O(1) counts).
//!
//! ```
//! use jackdaw::{Env, Options};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let env = Env::open(dir.path(), Options::default())?;
//!
//! // Write: one transaction, committed atomically.
//! let mut tx = env.write()?;
//! let users = tx.create_tree("users")?;
//! tx.put(&users, "ada", "Ada Lovelace")?;
//! tx.put(&users, "alan", "Alan Turing")?;
//! let tags = tx.create_multi_tree("tags")?;
//! tx.multi_put(&tags, "ada", "math")?;
//! tx.multi_put(&tags, "ada", "poetry")?;
//! tx.commit()?;
//!
//! // Read: a snapshot; ranges are ordered and double-ended.
//! let r = env.read()?;
//! assert_eq!(r.get(&users, "ada")?.unwrap().as_ref(), b"Ada Lovelace");
//! let names: Vec<_> = r.range(&users, "a".."b")?.map(|e| e.map(|(k, _)| k.to_vec())).collect::<Result<_, _>>()?;
//! assert_eq!(names, [b"ada".to_vec(), b"alan".to_vec()]);
//! assert_eq!(r.multi_count(&tags, "ada")?, 2);
//! assert_eq!(r.keys(&tags, ..)?.count(), 1);
//! # Ok::<(), jackdaw::Error>(())
//! ```
//!
//! Next: [`TypedTree`] (keys and values as Rust types, with order-preserving key encodings),
//! [`WriteBatch`] (many writers' changes grouped into shared commits), [`Env::check`] (a full
//! structural check of the database), [`Env::sync`] (durability of `Durability::Buffered` and
//! `Durability::None` commits on demand), [`Options`] (page size, durability, flusher).
//!
//! # Limits
//!
//! Every size limit, with its value at 4 KiB pages (the default) and the error a call over it
//! returns. `ps` is the page size; the functions give the exact value at any page size
//! (`max_key_size`: 4,049 at 8 KiB, 32,721 at 64 KiB; `max_tree_name`: 4,001 at 8 KiB, 32,673 at
//! 64 KiB). `tests/limits.rs` checks each edge.
//!
//! | What | Limit | At 4 KiB pages | Error over it |
//! |---|---|---|---|
//! | Key of a plain tree | [`max_key_size`]`(ps)` | 2,001 bytes | [`Error::KeyTooLarge`] `{ limit: `[`Limit::Key`]`, .. }` |
//! | Key of a multi-value tree | [`max_tree_name`]`(ps)` (room for a nested tree's descriptor) | 1,953 bytes | [`Error::KeyTooLarge`] `{ limit: `[`Limit::MultiKey`]`, .. }` |
//! | Value of a plain tree | [`MAX_VALUE_SIZE`] (any page size) | 4 GiB − 1 (4,294,967,295 bytes) | [`Error::ValueTooLarge`] `{ limit: `[`Limit::Value`]`, .. }` |
//! | One value of a multi-value tree | [`max_key_size`]`(ps)` (values are keys of a nested tree) | 2,001 bytes | [`Error::ValueTooLarge`] `{ limit: `[`Limit::MultiValue`]`, .. }` |
//! | Tree name | [`max_tree_name`]`(ps)` | 1,953 bytes (and not empty: [`Error::Invalid`]) | [`Error::TreeNameTooLong`] |
//! | Transaction | its journal record's payload (page images and diffs, before compression) ≤ 4 GiB − 1; existing pages it changes ≤ (4 GiB − 1) / (`ps` + 16) (1,044,472 at 4 KiB pages: their images could pass the record's limit), refused as soon as one more is changed | same | [`Error::TransactionTooLarge`] (at the change past the page count, else at commit): split it |
//! | Page size | a power of two in 4,096..=65,536, fixed at creation | — | [`Error::Invalid`] from [`Env::open`] |
//!
//! Layers, bottom up (dependencies point one way; `tests/layers.rs` enforces it):
//! `storage` (the only code that touches the OS) ← `data` (data file, header slots, pages) ←
//! `journal` (records, writer, recovery) ← `txn` (page table, allocator, snapshots, the write
//! transaction, the flusher) ← `tree` (B+tree pages, search, split, merge, cursors, overflow)
//! ← `api` and `typed` (tree handles, read/write transactions, iterators, typed trees) ←
//! `batch` (write batches, group commit) ← `env`, `backup` and `readonly` (open, recovery,
//! close, stats, check, hot backup) ← `lib`. Leaves named from anywhere: `error`, `options`,
//! `stats`, `sync`, `ids`.
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
mod backup;
mod batch;
mod data;
mod env;
mod error;
mod ids;
mod journal;
mod options;
mod readonly;
mod stats;
// Parts of it are used only by tests and tools, through `internals`.
#[cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]
mod storage;
mod sync;
mod tree;
mod txn;
pub mod typed;

/// The README's Rust code blocks, compiled and run as doc tests so that the quickstart stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

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
    Bytes, Cursor, Iter, KeyIter, KeyRange, Keys, Range, ReadCursor, ReadTxn, ReadValues, SnapSource, Source, Tree,
    TreeStats, TxSource, ValueReader, Values, WriteCursor, WriteKeys, WriteRange, WriteTxn, WriteValues,
};
pub use backup::{restore_from, BackupOptions, BackupProgress, BackupStage, BackupStats};
pub use batch::{BatchHandle, BatchKey, BatchValue, WriteBatch};
pub use env::Env;
pub use error::{report, Error, Limit, Result};
pub use ids::{PageNo, TxId};
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
    pub use crate::api::tree_layout;
    pub use crate::data::file::META_PAGE;
    pub use crate::data::page::{page_kind, page_no, page_txid, PageKind, PAGE_HEADER};
    pub use crate::options::{Clock, ManualClock, SystemClock};
    pub use crate::storage::*;
    pub use crate::tree::layout::{NestedTree, OverflowChain, PageInfo, TreeLayout};
    pub use crate::txn::PageRef;
}
#[cfg(feature = "serde")]
pub use typed::Serde;
pub use typed::{AsKey, AsValue, Key, KeyPrefix, ReadAccess, TypedRange, TypedTree, TypedValues, Value};
