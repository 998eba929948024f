//! FreeDB on Jackdaw: the CD database (xmcd entries, as in the `freedb-complete` dump) imported
//! into Jackdaw with secondary indexes and case-insensitive prefix search.
//!
//! - [`parse`]: the xmcd parser (no engine in it);
//! - [`codec`]: the compact album record;
//! - [`input`]: reading a directory tree, a `.tar` or a `.tar.bz2` as a stream;
//! - [`gen`]: the synthetic dump;
//! - [`db`]: the schema on Jackdaw's typed API and the resume mark;
//! - [`import`]: the read / parse / write pipeline, resume, reindex;
//! - [`query`]: search and stats;
//! - [`demo`]: the one-command showcase;
//! - [`bench`]: the same import and queries on SQLite and LMDB.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod codec;
pub mod db;
pub mod demo;
pub mod device;
pub mod gen;
pub mod import;
pub mod input;
pub mod parse;
pub mod query;

/// Most albums `generate`, `demo` and `bench` take: thirty times the real dump's 3.3 M (each
/// program sizes its work by it up front, so a mistyped count is refused, not an abort).
pub const MAX_ALBUMS: u64 = 100_000_000;

/// Most albums a batch takes (`--batch`): a batch's albums are held in memory until committed.
pub const MAX_BATCH: u64 = 100_000;
