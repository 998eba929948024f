//! One adapter per engine, and the registry of them ([`Kind`]). Each adapter's doc comment says
//! how it maps the durability modes. Adapters depend on `engine.rs` (the trait), never the
//! other way.

use crate::engine::{Engine, Mode};
use anyhow::Result;
use std::path::Path;

pub mod jackdaw;
pub mod lmdb;
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod sqlite;

/// Which engine, and with which variant of its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Jackdaw,
    /// Jackdaw with `FreeSpacePolicy::AppendOnly`: the control group of `free-space-control`.
    JackdawAppend,
    Lmdb,
    Redb,
    Sqlite,
    Rocksdb,
}

impl Kind {
    /// Every engine the harness knows, in report order.
    pub const ALL: [Kind; 6] =
        [Kind::Jackdaw, Kind::JackdawAppend, Kind::Lmdb, Kind::Redb, Kind::Sqlite, Kind::Rocksdb];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Jackdaw => "jackdaw",
            Kind::JackdawAppend => "jackdaw-append",
            Kind::Lmdb => "lmdb",
            Kind::Redb => "redb",
            Kind::Sqlite => "sqlite",
            Kind::Rocksdb => "rocksdb",
        }
    }

    pub fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Jackdaw itself (either policy) rather than a peer: the ratio column compares to peers only.
    pub fn is_jackdaw(self) -> bool {
        matches!(self, Kind::Jackdaw | Kind::JackdawAppend)
    }

    /// How this engine maps the durability modes none / buff / sync.
    pub fn mode_mapping(self, mode: Mode) -> &'static str {
        let m = match self {
            Kind::Jackdaw | Kind::JackdawAppend => jackdaw::MODES,
            Kind::Lmdb => lmdb::MODES,
            Kind::Redb => redb::MODES,
            Kind::Sqlite => sqlite::MODES,
            Kind::Rocksdb => ROCKSDB_MODES,
        };
        m[mode.index()]
    }

    /// Whether the file at `rel` (a path relative to the database directory) belongs to the
    /// engine's journal (write-ahead log) rather than its data: the split of the size on disk
    /// (`device::disk_usage_split`). Each adapter says which of its files are the log.
    pub fn is_journal_file(self, rel: &Path) -> bool {
        match self {
            Kind::Jackdaw | Kind::JackdawAppend => jackdaw::is_journal(rel),
            Kind::Lmdb => lmdb::is_journal(rel),
            Kind::Redb => redb::is_journal(rel),
            Kind::Sqlite => sqlite::is_journal(rel),
            Kind::Rocksdb => rocksdb_is_journal(rel),
        }
    }

    /// Open (creating if missing) the database of this engine in directory `dir`.
    pub fn open(self, dir: &Path, mode: Mode) -> Result<Box<dyn Engine>> {
        std::fs::create_dir_all(dir)?;
        match self {
            Kind::Jackdaw => Ok(Box::new(jackdaw::JackdawEngine::open(dir, mode, false)?)),
            Kind::JackdawAppend => Ok(Box::new(jackdaw::JackdawEngine::open(dir, mode, true)?)),
            Kind::Lmdb => Ok(Box::new(lmdb::LmdbEngine::open(dir, mode)?)),
            Kind::Redb => Ok(Box::new(redb::RedbEngine::open(dir, mode)?)),
            Kind::Sqlite => Ok(Box::new(sqlite::SqliteEngine::open(dir, mode)?)),
            Kind::Rocksdb => open_rocksdb(dir, mode),
        }
    }

    /// Why this engine cannot run in this build, if it cannot.
    pub fn unavailable(self) -> Option<&'static str> {
        match self {
            Kind::Rocksdb if !cfg!(feature = "rocksdb") => Some(
                "built without the `rocksdb` cargo feature (needs clang + libclang-dev; \
                 cargo run --release -p jackdaw-bench --features rocksdb)",
            ),
            _ => None,
        }
    }
}

/// RocksDB's mapping of none / buff / sync (kept here so that it is reported even when the
/// adapter is not compiled in).
pub const ROCKSDB_MODES: [&str; 3] =
    ["sync=false, manual_wal_flush (never flushed by a commit)", "sync=false", "sync=true"];

/// RocksDB's journal files (kept here, like [`ROCKSDB_MODES`], so that the split is reported the
/// same way whether or not the adapter is compiled in): the write-ahead logs `NNNNNN.log`; the
/// SST files, `MANIFEST-*`, `CURRENT`, `OPTIONS-*`, `LOCK` and the info `LOG` files are data.
pub fn rocksdb_is_journal(rel: &Path) -> bool {
    rel.extension().is_some_and(|e| e == "log")
}

#[cfg(feature = "rocksdb")]
pub fn open_rocksdb(dir: &Path, mode: Mode) -> Result<Box<dyn Engine>> {
    Ok(Box::new(rocksdb::RocksdbEngine::open(dir, mode)?))
}

#[cfg(not(feature = "rocksdb"))]
pub fn open_rocksdb(_dir: &Path, _mode: Mode) -> Result<Box<dyn Engine>> {
    anyhow::bail!("rocksdb: built without the `rocksdb` cargo feature")
}
