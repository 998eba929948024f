//! SQLite through `rusqlite` (bundled SQLite), WAL mode.
//!
//! Durability modes: `none` → `PRAGMA synchronous=OFF` (no sync at all, the WAL and its
//! checkpoints are left to the OS), `buff` → `synchronous=NORMAL` (WAL frames written at commit,
//! synced only at checkpoints), `sync` → `synchronous=FULL` (the WAL is synced at every commit).
//! One table `kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID` in `data.sqlite`,
//! `journal_mode=WAL`, default page size (4 KiB), default auto-checkpoint (1,000 pages),
//! `cache_size` 64 MiB per connection (the default 2 MiB makes a million-row transaction spill),
//! no mmap. Writes run `INSERT OR REPLACE` / `DELETE` through prepared statements in one
//! `BEGIN … COMMIT`; each read snapshot is a `BEGIN … COMMIT` on a connection of its own (taken
//! from a pool, so that parallel readers each have one). A one-key write from many threads
//! (`put_one`, YCSB's updates and inserts) runs on a writer connection of the calling thread's own
//! (from a second pool) as `BEGIN IMMEDIATE … COMMIT`, the writers waiting for SQLite's write lock
//! in its busy handler (`busy_timeout` 60 s on every connection).

use crate::engine::{CommitInfo, Engine, Mode, ReadOps, Visit, WriteOps};
use anyhow::{Context, Result};
use rusqlite::{CachedStatement, Connection};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

pub const MODES: [&str; 3] = ["WAL, synchronous=OFF", "WAL, synchronous=NORMAL", "WAL, synchronous=FULL"];

const CACHE_KIB: i64 = 64 * 1024;

/// Whether `rel` (a path under the database directory) is part of the journal: the write-ahead
/// log `data.sqlite-wal` and its index `data.sqlite-shm` (SQLite removes both when the last
/// connection closes cleanly); `data.sqlite` is data.
pub fn is_journal(rel: &Path) -> bool {
    let name = rel.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    name.ends_with("-wal") || name.ends_with("-shm") || name.ends_with("-journal")
}

pub struct SqliteEngine {
    path: PathBuf,
    /// `PRAGMA synchronous` of the mode (a per-connection setting).
    sync: &'static str,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Connections for `put_one`, one per concurrent writing thread.
    writers: Mutex<Vec<Connection>>,
}

fn connect(path: &Path) -> Result<Connection> {
    let c = Connection::open(path).with_context(|| format!("sqlite: open {}", path.display()))?;
    c.pragma_update(None, "cache_size", -CACHE_KIB)?;
    c.busy_timeout(std::time::Duration::from_secs(60))?;
    Ok(c)
}

impl SqliteEngine {
    pub fn open(dir: &Path, mode: Mode) -> Result<SqliteEngine> {
        let path = dir.join("data.sqlite");
        let c = connect(&path)?;
        let jm: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        anyhow::ensure!(jm.eq_ignore_ascii_case("wal"), "sqlite: journal_mode is {jm}, not wal");
        let sync = match mode {
            Mode::None => "OFF",
            Mode::Buff => "NORMAL",
            Mode::Sync => "FULL",
        };
        c.pragma_update(None, "synchronous", sync)?;
        c.execute_batch("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")?;
        Ok(SqliteEngine {
            path,
            sync,
            writer: Mutex::new(c),
            readers: Mutex::new(Vec::new()),
            writers: Mutex::new(Vec::new()),
        })
    }
}

struct W<'a> {
    ins: CachedStatement<'a>,
    del: CachedStatement<'a>,
}

impl WriteOps for W<'_> {
    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.ins.execute((key, value))?;
        Ok(())
    }
    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.del.execute([key])?;
        Ok(())
    }
}

struct R<'a> {
    get: RefCell<CachedStatement<'a>>,
    conn: &'a Connection,
}

impl ReadOps for R<'_> {
    #[inline]
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let mut st = self.get.borrow_mut();
        let mut rows = st.query([key])?;
        match rows.next()? {
            Some(row) => {
                out.extend_from_slice(row.get_ref(0)?.as_blob()?);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        // The blob as the statement's row holds it (SQLite assembles it from its pages).
        let mut st = self.get.borrow_mut();
        let mut rows = st.query([key])?;
        match rows.next()? {
            Some(row) => {
                f(row.get_ref(0)?.as_blob()?);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64> {
        let mut n = 0;
        let mut st;
        let mut rows = match hi {
            Some(hi) => {
                st = self.conn.prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k")?;
                st.query((lo, hi))?
            }
            None => {
                st = self.conn.prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k")?;
                st.query([lo])?
            }
        };
        while let Some(row) = rows.next()? {
            f(row.get_ref(0)?.as_blob()?, row.get_ref(1)?.as_blob()?)?;
            n += 1;
        }
        Ok(n)
    }
    fn scan_limit(&self, lo: &[u8], limit: u64, f: &mut Visit<'_>) -> Result<u64> {
        let mut st = self.conn.prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = st.query((lo, limit as i64))?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            f(row.get_ref(0)?.as_blob()?, row.get_ref(1)?.as_blob()?)?;
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for SqliteEngine {
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo> {
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction()?;
        {
            let mut w = W {
                ins: tx.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)")?,
                del: tx.prepare_cached("DELETE FROM kv WHERE k = ?1")?,
            };
            f(&mut w)?;
        }
        let t = Instant::now();
        tx.commit()?;
        Ok(CommitInfo { commit_time: t.elapsed(), jackdaw: None })
    }

    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
        let pooled = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => connect(&self.path)?,
        };
        conn.execute_batch("BEGIN")?;
        let res = (|| {
            let r = R { get: RefCell::new(conn.prepare_cached("SELECT v FROM kv WHERE k = ?1")?), conn: &conn };
            f(&r)
        })();
        let end = conn.execute_batch("COMMIT");
        self.readers.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
        res?;
        end?;
        Ok(())
    }

    fn put_one(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let pooled = self.writers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = connect(&self.path)?;
                c.pragma_update(None, "synchronous", self.sync)?;
                c
            }
        };
        let res = (|| -> Result<()> {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let put = (|| -> Result<()> {
                conn.prepare_cached("INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)")?.execute((key, value))?;
                conn.execute_batch("COMMIT")?;
                Ok(())
            })();
            if put.is_err() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            put
        })();
        self.writers.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
        res
    }

    fn concurrency(&self) -> &'static str {
        "writes: one BEGIN IMMEDIATE transaction per operation on a writer connection of each thread's own (SQLite's write lock taken in turn); reads: one pooled connection per concurrent reader"
    }

    fn close(self: Box<Self>) -> Result<()> {
        let SqliteEngine { path: _, sync: _, writer, readers, writers } = *self;
        for c in readers.into_inner().unwrap_or_else(|e| e.into_inner()) {
            c.close().map_err(|(_, e)| e)?;
        }
        for c in writers.into_inner().unwrap_or_else(|e| e.into_inner()) {
            c.close().map_err(|(_, e)| e)?;
        }
        writer.into_inner().unwrap_or_else(|e| e.into_inner()).close().map_err(|(_, e)| e)?;
        Ok(())
    }
}
