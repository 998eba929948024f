//! redb.
//!
//! Durability modes: `none` → `Durability::None`, `buff` → `Durability::None` (redb has no
//! "written to the OS, not synced" level: a non-durable commit stays in redb's memory and page
//! cache until a durable commit or `close`, which makes pending non-durable commits durable),
//! `sync` → `Durability::Immediate` (fsync at commit). Default builder (1 GiB cache). One table
//! `kv` of `&[u8] → &[u8]` in the file `data.redb`.

use crate::engine::{CommitInfo, Engine, Mode, ReadOps, Visit, WriteOps};
use anyhow::{Context, Result};
use redb::{Database, Durability, ReadOnlyTable, ReadableDatabase, Table, TableDefinition};
use std::path::Path;
use std::time::Instant;

pub const MODES: [&str; 3] = ["Durability::None", "Durability::None", "Durability::Immediate"];

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

/// Whether `rel` (a path under the database directory) is a journal file: never, redb keeps
/// everything (its copy-on-write pages and both commit slots) in the one file `data.redb`.
pub fn is_journal(_rel: &Path) -> bool {
    false
}

pub struct RedbEngine {
    db: Database,
    durability: Durability,
}

impl RedbEngine {
    pub fn open(dir: &Path, mode: Mode) -> Result<RedbEngine> {
        let path = dir.join("data.redb");
        let db = Database::builder().create(&path).with_context(|| format!("redb: open {}", path.display()))?;
        let durability = match mode {
            Mode::None | Mode::Buff => Durability::None,
            Mode::Sync => Durability::Immediate,
        };
        let tx = db.begin_write()?;
        tx.open_table(TABLE)?;
        tx.commit()?;
        Ok(RedbEngine { db, durability })
    }
}

struct W<'a, 't> {
    table: &'a mut Table<'t, &'static [u8], &'static [u8]>,
}

impl WriteOps for W<'_, '_> {
    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.table.insert(key, value)?;
        Ok(())
    }
    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.table.remove(key)?;
        Ok(())
    }
}

struct R<'a> {
    table: &'a ReadOnlyTable<&'static [u8], &'static [u8]>,
}

impl ReadOps for R<'_> {
    #[inline]
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        match self.table.get(key)? {
            Some(v) => {
                out.extend_from_slice(v.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        // The guard lends the bytes of redb's page.
        Ok(self.table.get(key)?.map(|v| f(v.value())).is_some())
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64> {
        let it = match hi {
            Some(hi) => self.table.range::<&[u8]>(lo..hi)?,
            None => self.table.range::<&[u8]>(lo..)?,
        };
        let mut n = 0;
        for item in it {
            let (k, v) = item?;
            f(k.value(), v.value())?;
            n += 1;
        }
        Ok(n)
    }
    fn scan_limit(&self, lo: &[u8], limit: u64, f: &mut Visit<'_>) -> Result<u64> {
        let mut n = 0;
        for item in self.table.range::<&[u8]>(lo..)?.take(limit as usize) {
            let (k, v) = item?;
            f(k.value(), v.value())?;
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for RedbEngine {
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(self.durability)?;
        {
            let mut table = tx.open_table(TABLE)?;
            f(&mut W { table: &mut table })?;
        }
        let t = Instant::now();
        tx.commit()?;
        Ok(CommitInfo { commit_time: t.elapsed(), jackdaw: None })
    }

    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
        let tx = self.db.begin_read()?;
        let table = tx.open_table(TABLE)?;
        f(&R { table: &table })
    }

    fn concurrency(&self) -> &'static str {
        "writes: one write transaction per operation, writers take redb's single writer in turn; reads: one read transaction per operation, concurrent"
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}
