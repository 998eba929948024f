//! LMDB through `heed` (LMDB's mdb.master branch, as heed bundles it).
//!
//! Durability modes: `none` → `MDB_NOSYNC | MDB_WRITEMAP | MDB_MAPASYNC` (commit writes into the
//! shared map, the OS writes it back when it likes), `buff` → `MDB_NOSYNC` (commit `pwrite`s the
//! pages, no sync), `sync` → default flags (commit writes and `fdatasync`s). The map size is
//! 64 GiB (sparse: only written pages take space; with `MDB_WRITEMAP` LMDB truncates the file to
//! the map size, so the apparent size is 64 GiB, the size on disk is what was written). The
//! unnamed database holds the data; reads run with thread-local reader slots (heed's default).

use crate::engine::{CommitInfo, Engine, Mode, ReadOps, Visit, WriteOps};
use anyhow::{Context, Result};
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, RoTxn, RwTxn};
use std::ops::Bound;
use std::path::Path;
use std::time::Instant;

pub const MODES: [&str; 3] = ["MDB_NOSYNC|MDB_WRITEMAP|MDB_MAPASYNC", "MDB_NOSYNC", "default (sync at commit)"];

/// LMDB's map size in GiB, 64 unless `--lmdb-map-gib` set it (valgrind refuses a 64 GiB map).
static MAP_GIB: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(64);

/// Set the map size of the LMDB environments opened from now on (`--lmdb-map-gib`).
pub fn set_map_gib(gib: usize) {
    MAP_GIB.store(gib, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `rel` (a path under the database directory) is a journal file: never, LMDB keeps no
/// log. `data.mdb` is data; `lock.mdb` (the reader table, a few KiB, no key or value in it) is
/// neither a log nor data proper and is counted with the data, as part of the database's size.
pub fn is_journal(_rel: &Path) -> bool {
    false
}

pub struct LmdbEngine {
    env: Env,
    db: Database<Bytes, Bytes>,
}

impl LmdbEngine {
    pub fn open(dir: &Path, mode: Mode) -> Result<LmdbEngine> {
        let flags = match mode {
            Mode::None => EnvFlags::NO_SYNC | EnvFlags::WRITE_MAP | EnvFlags::MAP_ASYNC,
            Mode::Buff => EnvFlags::NO_SYNC,
            Mode::Sync => EnvFlags::empty(),
        };
        let mut o = EnvOpenOptions::new();
        o.map_size(MAP_GIB.load(std::sync::atomic::Ordering::Relaxed) << 30).max_readers(256);
        // SAFETY: NO_SYNC / WRITE_MAP / MAP_ASYNC trade durability (not memory safety within this
        // process) for speed, which is what the modes ask for; the directory is ours alone.
        let env = unsafe {
            o.flags(flags);
            o.open(dir)
        }
        .with_context(|| format!("lmdb: open {}", dir.display()))?;
        let mut wtxn = env.write_txn()?;
        let db: Database<Bytes, Bytes> = env.create_database(&mut wtxn, None)?;
        wtxn.commit()?;
        Ok(LmdbEngine { env, db })
    }
}

struct W<'a, 'e> {
    tx: &'a mut RwTxn<'e>,
    db: Database<Bytes, Bytes>,
}

impl WriteOps for W<'_, '_> {
    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(self.tx, key, value)?)
    }
    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.db.delete(self.tx, key)?;
        Ok(())
    }
}

struct R<'a, 'e> {
    tx: &'a RoTxn<'e, heed::WithTls>,
    db: Database<Bytes, Bytes>,
}

impl ReadOps for R<'_, '_> {
    #[inline]
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.db.get(self.tx, key)? {
            Some(v) => {
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        // A view of the map.
        Ok(self.db.get(self.tx, key)?.map(f).is_some())
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64> {
        let hi_b = match hi {
            Some(h) => Bound::Excluded(h),
            None => Bound::Unbounded,
        };
        // LMDB refuses an empty key (MDB_BAD_VALSIZE), so "from the start" is Unbounded.
        let lo_b = if lo.is_empty() { Bound::Unbounded } else { Bound::Included(lo) };
        let range = (lo_b, hi_b);
        let mut n = 0;
        for item in self.db.range(self.tx, &range)? {
            let (k, v) = item?;
            f(k, v)?;
            n += 1;
        }
        Ok(n)
    }
    fn scan_limit(&self, lo: &[u8], limit: u64, f: &mut Visit<'_>) -> Result<u64> {
        let lo_b = if lo.is_empty() { Bound::Unbounded } else { Bound::Included(lo) };
        let range = (lo_b, Bound::Unbounded);
        let mut n = 0;
        for item in self.db.range(self.tx, &range)?.take(limit as usize) {
            let (k, v) = item?;
            f(k, v)?;
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for LmdbEngine {
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo> {
        let mut tx = self.env.write_txn()?;
        f(&mut W { tx: &mut tx, db: self.db })?;
        let t = Instant::now();
        tx.commit()?;
        Ok(CommitInfo { commit_time: t.elapsed(), jackdaw: None })
    }

    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
        let tx = self.env.read_txn()?;
        f(&R { tx: &tx, db: self.db })
    }

    fn concurrency(&self) -> &'static str {
        "writes: one write transaction per operation, writers take LMDB's single writer lock in turn; reads: one read transaction per operation, concurrent"
    }

    fn close(self: Box<Self>) -> Result<()> {
        let LmdbEngine { env, db: _ } = *self;
        // The environment closes when its last handle goes: wait for that.
        env.prepare_for_closing().wait();
        Ok(())
    }
}
