//! One adapter per engine. Each adapter's doc comment says how it maps the durability modes.

use crate::engine::{Engine, Mode};
use anyhow::Result;
use std::path::Path;

pub mod jackdaw;
pub mod lmdb;
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod sqlite;

/// RocksDB's mapping of none / buff / sync (kept here so that it is reported even when the
/// adapter is not compiled in).
pub const ROCKSDB_MODES: [&str; 3] =
    ["sync=false, manual_wal_flush (never flushed by a commit)", "sync=false", "sync=true"];

#[cfg(feature = "rocksdb")]
pub fn open_rocksdb(dir: &Path, mode: Mode) -> Result<Box<dyn Engine>> {
    Ok(Box::new(rocksdb::RocksdbEngine::open(dir, mode)?))
}

#[cfg(not(feature = "rocksdb"))]
pub fn open_rocksdb(_dir: &Path, _mode: Mode) -> Result<Box<dyn Engine>> {
    anyhow::bail!("rocksdb: built without the `rocksdb` cargo feature")
}
