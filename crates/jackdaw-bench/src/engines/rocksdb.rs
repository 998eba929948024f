//! RocksDB through the `rocksdb` crate (behind the cargo feature `rocksdb`).
//!
//! Durability modes: `none` → `WriteOptions::sync = false` with `Options::manual_wal_flush =
//! true` and the manual WAL flush never called by a commit (the WAL buffer is written when
//! RocksDB fills it; `close` flushes it once, so that the data outlives the run), `buff` →
//! `sync = false` (the WAL record is written to the OS at every write), `sync` → `sync = true`
//! (WAL fsynced at every write). A transaction is one `WriteBatch` applied with `write_opt`;
//! a read snapshot is a RocksDB snapshot set in the `ReadOptions` of every get and iterator.
//! Default options otherwise, with LZ4 compression (the only codec compiled in).

use crate::engine::{CommitInfo, Engine, Mode, ReadOps, Visit, WriteOps};
use anyhow::{Context, Result};
use rocksdb::{DBCompressionType, Options, ReadOptions, WriteBatch, WriteOptions, DB};
use std::path::Path;
use std::time::Instant;

pub struct RocksdbEngine {
    db: DB,
    sync: bool,
    manual_wal: bool,
}

impl RocksdbEngine {
    pub fn open(dir: &Path, mode: Mode) -> Result<RocksdbEngine> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compression_type(DBCompressionType::Lz4);
        let manual_wal = mode == Mode::None;
        o.set_manual_wal_flush(manual_wal);
        let db = DB::open(&o, dir).with_context(|| format!("rocksdb: open {}", dir.display()))?;
        Ok(RocksdbEngine { db, sync: mode == Mode::Sync, manual_wal })
    }
}

struct W<'a> {
    batch: &'a mut WriteBatch,
}

impl WriteOps for W<'_> {
    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.batch.put(key, value);
        Ok(())
    }
    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.batch.delete(key);
        Ok(())
    }
}

struct R<'a> {
    db: &'a DB,
    snap: &'a rocksdb::SnapshotWithThreadMode<'a, DB>,
    ro: ReadOptions,
}

impl ReadOps for R<'_> {
    #[inline]
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.db.get_pinned_opt(key, &self.ro)? {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        // A pinned slice of the block cache or memtable.
        Ok(self.db.get_pinned_opt(key, &self.ro)?.map(|v| f(&v)).is_some())
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64> {
        let mut ro = ReadOptions::default();
        ro.set_snapshot(self.snap);
        if let Some(hi) = hi {
            ro.set_iterate_upper_bound(hi.to_vec());
        }
        let mut it = self.db.raw_iterator_opt(ro);
        it.seek(lo);
        let mut n = 0;
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            f(k, v)?;
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}

impl Engine for RocksdbEngine {
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo> {
        let mut batch = WriteBatch::default();
        f(&mut W { batch: &mut batch })?;
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync);
        let t = Instant::now();
        self.db.write_opt(batch, &wo)?;
        Ok(CommitInfo { commit_time: t.elapsed(), jackdaw: None })
    }

    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
        let snap = self.db.snapshot();
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snap);
        f(&R { db: &self.db, snap: &snap, ro })
    }

    fn concurrency(&self) -> &'static str {
        "writes: one WriteBatch per operation, applied concurrently from every thread; reads: one snapshot per operation"
    }

    fn close(self: Box<Self>) -> Result<()> {
        if self.manual_wal {
            self.db.flush_wal(false)?;
        }
        drop(self);
        Ok(())
    }
}
