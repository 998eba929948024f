//! The one error type of the engine.
//!
//! `Error` is `Clone` so that one failure (a failed journal write, say) can be handed to every
//! waiter of a group commit; `io::Error` is wrapped in an `Arc` for that reason.

use crate::ids::PageNo;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in Jackdaw.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed (the call site is named).
    #[error("I/O error during {op}: {source}")]
    Io {
        /// The operation that failed ("journal write", "create data file", ...).
        op: &'static str,
        /// The operating system's error.
        source: Arc<io::Error>,
    },
    /// Data read from disk failed a check. `page` is the data file page number when one is known.
    #[error("the database is damaged{}: {reason}", at_page(page))]
    Corrupted {
        /// The data file page, when the damage is in one.
        page: Option<PageNo>,
        /// What failed, in words.
        reason: String,
    },
    /// Another `Env` (in this process or another) has the database in directory `path` open;
    /// `pid` is the holder's process id when it could be found.
    #[error("the database at {} is open in another Env ({}); close it first", path.display(), holder(*pid))]
    Locked {
        /// The database directory.
        path: PathBuf,
        /// The process holding it, when it could be found.
        pid: Option<u32>,
    },
    /// A key longer than the tree allows; `limit` says which limit (see the crate docs' table).
    #[error("a {limit} of {len} bytes is over the limit of {max} bytes; use a shorter one")]
    KeyTooLarge {
        /// The key's length in bytes.
        len: usize,
        /// The largest length allowed.
        max: usize,
        /// Which limit.
        limit: Limit,
    },
    /// A value longer than the engine allows; `limit` says which limit.
    #[error("a {limit} of {len} bytes is over the limit of {max} bytes")]
    ValueTooLarge {
        /// The value's length in bytes.
        len: u64,
        /// The largest length allowed.
        max: u64,
        /// Which limit.
        limit: Limit,
    },
    /// A tree name longer than `max_tree_name(page_size)` bytes.
    #[error("a tree name of {len} bytes is over the limit of {max} bytes; use a shorter name")]
    TreeNameTooLong {
        /// The name's length in bytes.
        len: usize,
        /// The largest length allowed.
        max: usize,
    },
    /// A transaction whose journal record would pass the record format's limit (4 GiB of
    /// payload): commit it in smaller transactions.
    #[error("the transaction's journal record would take {bytes} bytes, over the limit of {max}; split it into smaller transactions")]
    TransactionTooLarge {
        /// The record's payload in bytes.
        bytes: u64,
        /// The largest payload a record can carry.
        max: u64,
    },
    /// An earlier write or sync failed; the environment refuses writes until it is reopened
    /// (an fsync is never retried: the kernel may already have dropped the dirty pages).
    #[error("the environment is poisoned by an earlier write failure ({0}); reopen it")]
    Poisoned(String),
    /// The files are not a Jackdaw database.
    #[error("not a Jackdaw database: {0}")]
    NotADatabase(String),
    /// A Jackdaw database of a format version or page size this build cannot open.
    #[error("incompatible database format: {0}")]
    IncompatibleFormat(String),
    /// The environment was closed.
    #[error("the environment is closed")]
    Closed,
    /// The operation would have to wait (`try_write` while another writer is active).
    #[error("busy: {0}")]
    Busy(&'static str),
    /// Long-lived readers keep more than `Options::max_pinned_bytes` from being retired (page
    /// versions in memory plus journal files the flusher cannot pass): new write transactions are
    /// refused until they end. Nothing is lost and the environment stays usable.
    #[error("{}", pinned_message(*pinned_bytes, *cap_bytes, *oldest_reader_age))]
    PinnedLimit {
        /// Bytes the readers keep: page versions in memory plus unflushed journal bytes.
        pinned_bytes: u64,
        /// `Options::max_pinned_bytes`.
        cap_bytes: u64,
        /// How long the oldest live read transaction has been open (`None` if it ended meanwhile).
        oldest_reader_age: Option<std::time::Duration>,
    },
    /// The tree does not exist (or no longer does: a handle to a deleted tree).
    #[error("no such tree: {0}")]
    NoSuchTree(String),
    /// A tree of the other kind (a multi-value call on a plain tree, or the reverse).
    #[error("tree {0} is of the other kind (plain vs multi-value): read a multi-value tree with multi_get, keys and range (a cursor walks plain trees only)")]
    WrongTreeKind(String),
    /// A tree of that name exists already (rename target).
    #[error("a tree named {0} exists already")]
    TreeExists(String),
    /// A write (a write transaction, a batch) on an environment opened with
    /// `Options::read_only(true)`.
    #[error("the database at {} is open read-only; reopen it without the read_only option to write", .0.display())]
    ReadOnly(PathBuf),
    /// An argument out of range (an option, a page number past the end, ...).
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// Which size limit a [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`] names. The crate docs
/// list every limit with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// A key of a plain tree: `max_key_size(page_size)` (2,001 bytes at 4 KiB pages).
    Key,
    /// A key of a multi-value tree: `max_tree_name(page_size)` (1,953 bytes at 4 KiB pages).
    MultiKey,
    /// A value of a plain tree: `MAX_VALUE_SIZE` (4 GiB − 1).
    Value,
    /// One value under a key of a multi-value tree: `max_key_size(page_size)` (2,001 bytes at
    /// 4 KiB pages; the values are keys of a nested tree).
    MultiValue,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::Key => "key",
            Limit::MultiKey => "key of a multi-value tree",
            Limit::Value => "value",
            Limit::MultiValue => "value of a multi-value tree",
        })
    }
}

fn at_page(page: &Option<PageNo>) -> String {
    match page {
        Some(p) => format!(" at page {p} of the data file"),
        None => String::new(),
    }
}

/// Who holds a lock, for `Error::Locked`'s message.
fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(p) if p == std::process::id() => format!("process {p}, this one"),
        Some(p) => format!("process {p}"),
        None => "holder's process unknown".into(),
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(op: &'static str, e: io::Error) -> Error {
        Error::Io { op, source: Arc::new(e) }
    }
    pub(crate) fn corrupted(page: Option<u64>, reason: impl Into<String>) -> Error {
        Error::Corrupted { page: page.map(PageNo::new), reason: reason.into() }
    }
    /// `Corrupted` at page `page`.
    pub(crate) fn corrupted_at(page: PageNo, reason: impl Into<String>) -> Error {
        Error::Corrupted { page: Some(page), reason: reason.into() }
    }
    /// True for `Io` errors that say the disk is full.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
    }
}

/// Attach an operation name to an `io::Result`.
fn pinned_message(pinned: u64, cap: u64, age: Option<std::time::Duration>) -> String {
    let who = match age {
        Some(a) => format!("the oldest read transaction has been open for {:.1} s", a.as_secs_f64()),
        None => "the read transaction that held them has ended; retry".to_string(),
    };
    format!(
        "readers keep {pinned} bytes of page versions and journal from being retired, over the cap of {cap} set by max_pinned_bytes \
         ({who}): end long-lived read transactions, and drop or copy out (`to_vec`) the keys and values read from them"
    )
}

pub(crate) trait IoContext<T> {
    fn ctx(self, op: &'static str) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, op: &'static str) -> Result<T> {
        self.map_err(|e| Error::io(op, e))
    }
}

/// `e` and the errors that caused it, outermost first, joined by ": ", leaving out a cause whose
/// text the message so far already ends with. [`Error::Io`] prints the operating system's error
/// and also gives it as its `source()`, so a printer that walks the chain (`anyhow`'s `{:#}`)
/// would say it twice: the `jackdaw`, `freedb` and `jackdaw-raft` programs print with this.
pub fn report(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.ends_with(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One value of every variant; the match is exhaustive, so a new variant must be added here.
    fn every_variant() -> Vec<Error> {
        let all = vec![
            Error::io("journal write", io::Error::from_raw_os_error(libc::ENOSPC)),
            Error::corrupted(Some(12207), "checksum mismatch"),
            Error::corrupted(None, "journal record 7 lowers the page high-water mark"),
            Error::Locked { path: std::path::PathBuf::from("/srv/db"), pid: Some(4242) },
            Error::Locked { path: std::path::PathBuf::from("/srv/db"), pid: None },
            Error::KeyTooLarge { len: 3000, max: 2001, limit: Limit::Key },
            Error::KeyTooLarge { len: 3000, max: 1953, limit: Limit::MultiKey },
            Error::ValueTooLarge { len: 5 << 30, max: u32::MAX as u64, limit: Limit::Value },
            Error::ValueTooLarge { len: 3000, max: 2001, limit: Limit::MultiValue },
            Error::TreeNameTooLong { len: 10000, max: 1953 },
            Error::TransactionTooLarge { bytes: 5 << 30, max: u32::MAX as u64 },
            Error::Poisoned("journal fdatasync failed".into()),
            Error::NotADatabase("random bytes".into()),
            Error::IncompatibleFormat("format version 9".into()),
            Error::Closed,
            Error::Busy("this thread holds the write transaction"),
            Error::PinnedLimit {
                pinned_bytes: 2 << 30,
                cap_bytes: 1 << 30,
                oldest_reader_age: Some(std::time::Duration::from_secs(3600)),
            },
            Error::NoSuchTree("albums".into()),
            Error::WrongTreeKind("albums".into()),
            Error::TreeExists("albums".into()),
            Error::Invalid("page size 1000".into()),
            Error::ReadOnly(std::path::PathBuf::from("/srv/db")),
        ];
        for e in &all {
            match e {
                Error::Io { .. }
                | Error::Corrupted { .. }
                | Error::Locked { .. }
                | Error::KeyTooLarge { .. }
                | Error::ValueTooLarge { .. }
                | Error::TreeNameTooLong { .. }
                | Error::TransactionTooLarge { .. }
                | Error::Poisoned(_)
                | Error::NotADatabase(_)
                | Error::IncompatibleFormat(_)
                | Error::Closed
                | Error::Busy(_)
                | Error::PinnedLimit { .. }
                | Error::NoSuchTree(_)
                | Error::WrongTreeKind(_)
                | Error::TreeExists(_)
                | Error::Invalid(_)
                | Error::ReadOnly(_) => {}
            }
        }
        all
    }

    /// Every message reads as a sentence: no `Some(`/`None` of a debug-printed option, no raw
    /// struct syntax, and the page of a `Corrupted` error said in words.
    #[test]
    fn every_error_message_reads_as_a_sentence() {
        for e in every_variant() {
            let m = e.to_string();
            println!("{m}");
            assert!(!m.contains("Some(") && !m.contains("None"), "{m}");
            assert!(!m.contains('{') && !m.contains("::"), "{m}");
            assert!(m.len() > 12, "{m}");
        }
        let m = Error::corrupted(Some(12207), "checksum mismatch").to_string();
        assert_eq!(m, "the database is damaged at page 12207 of the data file: checksum mismatch");
        let m = Error::TreeNameTooLong { len: 10000, max: 1953 }.to_string();
        assert!(m.contains("tree name of 10000 bytes") && !m.contains("key"), "{m}");
        let m = Error::ValueTooLarge { len: 3000, max: 2001, limit: Limit::MultiValue }.to_string();
        assert!(m.contains("value of a multi-value tree"), "{m}");
    }

    /// An `Io` error under an outer message: its operating-system error said once, the outer
    /// message and every other cause kept.
    #[test]
    fn report_says_each_cause_once() {
        #[derive(Debug)]
        struct Outer(Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("cannot open db")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = Error::io("lock database", io::Error::from_raw_os_error(24));
        let os = io::Error::from_raw_os_error(24).to_string();
        let m = report(&Outer(io));
        assert_eq!(m, format!("cannot open db: I/O error during lock database: {os}"));
        assert_eq!(m.matches(&os).count(), 1, "{m}");
        assert_eq!(report(&Error::Invalid("bad".into())), Error::Invalid("bad".into()).to_string());
    }
}
