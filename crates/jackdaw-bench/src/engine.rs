//! The one trait every engine adapter implements.
//!
//! Transactions are scoped by closures: [`Engine::write`] begins a write transaction, hands the
//! closure a [`WriteOps`] (put / delete), and commits when the closure returns `Ok`, timing the
//! commit call alone; [`Engine::read`] opens a read snapshot and hands the closure a [`ReadOps`]
//! (point get that copies the value out, ordered scan). Scoping by closure lets every adapter keep
//! its borrowed handles (LMDB transactions, redb tables, SQLite prepared statements) on the stack
//! without self-referential structs, and costs one indirect call per operation, the same for every
//! engine.

use anyhow::Result;
use serde::Serialize;
use std::time::Duration;

/// Durability mode of WORKLOADS.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Nothing made durable at commit: the engine and the OS decide when data reaches the disk.
    None,
    /// Written to the OS at commit, not synced.
    Buff,
    /// Durable at commit.
    Sync,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Buff => "buff",
            Mode::Sync => "sync",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Jackdaw's own account of one commit (from `CommitStats`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct JackdawCommit {
    pub pages: u64,
    pub written_once_pages: u64,
    pub journal_bytes_full: u64,
    pub journal_bytes_raw: u64,
    pub journal_bytes_written: u64,
}

impl JackdawCommit {
    pub fn add(&mut self, o: &JackdawCommit) {
        self.pages += o.pages;
        self.written_once_pages += o.written_once_pages;
        self.journal_bytes_full += o.journal_bytes_full;
        self.journal_bytes_raw += o.journal_bytes_raw;
        self.journal_bytes_written += o.journal_bytes_written;
    }
}

/// What a committed write transaction reports back.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommitInfo {
    /// Wall time of the engine's commit call alone.
    pub commit_time: Duration,
    /// Jackdaw's `CommitStats`, for Jackdaw only.
    pub jackdaw: Option<JackdawCommit>,
}

/// Operations inside a write transaction.
pub trait WriteOps {
    /// Insert or overwrite.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Remove the key if present.
    fn delete(&mut self, key: &[u8]) -> Result<()>;
}

/// The visitor of an ordered scan.
pub type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// Operations on a read snapshot.
pub trait ReadOps {
    /// Copy the value of `key` into `out` (cleared first); false when absent.
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// Hand the value of `key` to `f` as the engine's own read returns it, not copied where the
    /// engine lends its bytes (a view of its pages or cache); false when absent.
    fn get_view(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool>;
    /// Visit the pairs with `lo <= key < hi` (no upper bound when `hi` is `None`) in key order;
    /// returns how many were visited.
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut Visit<'_>) -> Result<u64>;
    /// Visit at most `limit` pairs with `lo <= key`, in key order (YCSB's scan: a start key and a
    /// record count); returns how many were visited. The default stops [`ReadOps::scan`] early;
    /// adapters override it with their iterator's own limit.
    fn scan_limit(&self, lo: &[u8], limit: u64, f: &mut Visit<'_>) -> Result<u64> {
        #[derive(Debug)]
        struct Stop;
        impl std::fmt::Display for Stop {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("scan limit reached")
            }
        }
        impl std::error::Error for Stop {}
        if limit == 0 {
            return Ok(0);
        }
        let mut n = 0u64;
        let res = self.scan(lo, None, &mut |k, v| {
            f(k, v)?;
            n += 1;
            if n >= limit {
                return Err(anyhow::Error::new(Stop));
            }
            Ok(())
        });
        match res {
            Ok(_) => Ok(n),
            Err(e) if e.is::<Stop>() => Ok(n),
            Err(e) => Err(e),
        }
    }
}

/// An open database of one engine, holding one ordered key-value table.
pub trait Engine: Send + Sync {
    /// Run one write transaction: `f` does the puts and deletes, then the adapter commits (unless
    /// `f` failed, in which case the transaction is aborted and the error returned).
    fn write(&self, f: &mut dyn FnMut(&mut dyn WriteOps) -> Result<()>) -> Result<CommitInfo>;
    /// Run `f` on one read snapshot. Callable from several threads at once (one snapshot each).
    fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()>;
    /// Close, writing out whatever the engine writes at close.
    fn close(self: Box<Self>) -> Result<()>;
    /// Engine-internal counters (cumulative since open), where the engine has them.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// Write one key as a transaction of its own, callable from many threads at once (YCSB's
    /// insert and update). The default runs [`Engine::write`]; Jackdaw submits a `WriteBatch`,
    /// which its merger groups with the other threads' batches into shared commits.
    fn put_one(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(&mut |w| w.put(key, value)).map(|_| ())
    }
    /// How this adapter serves concurrent writers and readers (the YCSB report states it).
    fn concurrency(&self) -> &'static str {
        ""
    }
    /// A short description of how the engine does I/O, where it says.
    fn info(&self) -> String {
        String::new()
    }
}
