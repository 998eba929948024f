//! Jackdaw, the engine under test.
//!
//! Durability modes: `none` → `Durability::None` (commit keeps the record in memory; a later
//! flush, sync commit or `close` writes it), `buff` → `Durability::Buffered` (journal record
//! written to the OS at commit, not synced), `sync` → `Durability::Sync` (journal record on the
//! device when `commit()` returns). Everything else is `Options::default()`, except for the
//! `jackdaw-append` variant, which sets `FreeSpacePolicy::AppendOnly` (the control group of
//! `free-space-control`). One tree named `kv` holds the data. `--io-log` turns on
//! `Options::flush_log` (one stderr line per journal write and per flush).

use crate::engine::{CommitInfo, Engine, JackdawCommit, Mode, ReadOps, Visit, WriteOps};
use anyhow::{Context, Result};
use jackdaw::{Durability, Env, FreeSpacePolicy, Options, ReadTxn, Tree, WriteBatch, WriteTxn};
use std::path::Path;
use std::time::Instant;

pub const MODES: [&str; 3] = ["Durability::None", "Durability::Buffered", "Durability::Sync"];

const TREE: &str = "kv";

/// Whether `rel` (a path under the database directory) is part of the journal: the files of
/// `journal/` (the data file `data.jdb` and anything else are data).
pub fn is_journal(rel: &Path) -> bool {
    rel.starts_with("journal")
}

static IO_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Open every later Jackdaw environment with `Options::flush_log(on)` (the bench's `--io-log`).
pub fn set_io_log(on: bool) {
    IO_LOG.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub struct JackdawEngine {
    env: Env,
    tree: Tree,
}

impl JackdawEngine {
    pub fn open(dir: &Path, mode: Mode, append_only: bool) -> Result<JackdawEngine> {
        let durability = match mode {
            Mode::None => Durability::None,
            Mode::Buff => Durability::Buffered,
            Mode::Sync => Durability::Sync,
        };
        let mut opts =
            Options::default().durability(durability).flush_log(IO_LOG.load(std::sync::atomic::Ordering::Relaxed));
        if append_only {
            opts = opts.free_space(FreeSpacePolicy::AppendOnly);
        }
        let env = Env::open(dir, opts).with_context(|| format!("jackdaw: open {}", dir.display()))?;
        let existing = env.read()?.open_tree(TREE)?;
        let tree = match existing {
            Some(t) => t,
            None => {
                let mut tx = env.write()?;
                let t = tx.create_tree(TREE)?;
                tx.commit()?;
                t
            }
        };
        Ok(JackdawEngine { env, tree })
    }
}

struct W<'a> {
    tx: &'a mut WriteTxn,
    tree: &'a Tree,
}

impl WriteOps for W<'_> {
    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.tx.put(self.tree, key, value)?)
    }
    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.tx.delete(self.tree, key)?;
        Ok(())
    }
}

struct R<'a> {
    tx: &'a ReadTxn,
    tree: &'a Tree,
}

impl ReadOps for R<'_> {
    #[inline]
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        // One copy straight from the snapshot's pages into `out`, as the LMDB and redb adapters
        // copy from the slice they borrow (`get` would return a handle, and an overflow value
        // would be copied twice: into an owned `Bytes`, then into `out`).
        Ok(self.tx.get_into(self.tree, key, out)?)
    }
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        // A view of the snapshot's page for inline values and values of one overflow page; an
        // owned copy for longer ones (`api::Bytes`).
        Ok(self.tx.get(self.tree, key)?.map(|b| f(&b)).is_some())
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64> {
        let mut n = 0;
        let it = match hi {
            Some(hi) => self.tx.range(self.tree, lo..hi)?,
            None => self.tx.range(self.tree, lo..)?,
        };
        for item in it {
            let (k, v) = item?;
            f(k.as_ref(), v.as_ref())?;
            n += 1;
        }
        Ok(n)
    }
    fn scan_limit(&self, lo: &[u8], limit: u64, f: &mut Visit<'_>) -> Result<u64> {
        let mut n = 0;
        for item in self.tx.range(self.tree, lo..)?.take(limit as usize) {
            let (k, v) = item?;
            f(k.as_ref(), v.as_ref())?;
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for JackdawEngine {
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo> {
        let mut tx = self.env.write()?;
        f(&mut W { tx: &mut tx, tree: &self.tree })?;
        let t = Instant::now();
        let st = tx.commit()?;
        let commit_time = t.elapsed();
        Ok(CommitInfo {
            commit_time,
            jackdaw: Some(JackdawCommit {
                pages: st.pages as u64,
                written_once_pages: st.written_once_pages as u64,
                journal_bytes_full: st.journal_bytes_full,
                journal_bytes_raw: st.journal_bytes_raw,
                journal_bytes_written: st.journal_bytes_written,
            }),
        })
    }

    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
        let tx = self.env.read()?;
        f(&R { tx: &tx, tree: &self.tree })
    }

    fn put_one(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(&self.tree, key, value);
        Ok(self.env.write_batch(b)?)
    }

    fn concurrency(&self) -> &'static str {
        "writes: one WriteBatch per operation from every thread (the merger groups them into shared commits); reads: one snapshot per operation"
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.env.close()?;
        Ok(())
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let s = self.env.stats();
        let mut v = vec![
            ("commits".to_string(), s.commits),
            ("journal_writes".to_string(), s.journal_writes),
            ("journal_direct_writes".to_string(), s.journal_direct_writes),
            ("journal_bytes_written".to_string(), s.journal_bytes_written),
            ("flushes".to_string(), s.flushes),
            ("flushed_pages".to_string(), s.flushed_pages),
        ];
        let mut total = 0;
        for (site, n) in s.syncs {
            total += n;
            v.push((format!("sync.{site}"), n));
        }
        v.push(("syncs".to_string(), total));
        v
    }

    fn info(&self) -> String {
        let s = self.env.stats();
        format!(
            "journal_io={}; pages in use {}, free {}, high-water {} ({} B pages)",
            s.journal_io, s.pages_in_use, s.free_pages, s.next_page, s.page_size
        )
    }
}
