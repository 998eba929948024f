//! The one error type of the engine.
//!
//! `Error` is `Clone` so that one failure (a failed journal write, say) can be handed to every
//! waiter of a group commit; `io::Error` is wrapped in an `Arc` for that reason.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in Jackdaw.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed (the call site is named).
    #[error("I/O error during {op}: {source}")]
    Io { op: &'static str, source: Arc<io::Error> },
    /// Data read from disk failed a check. `page` is the page number when one is known; `check()`
    /// reports every problem it found in `reason`, one per line.
    #[error("database corrupted (page {page:?}): {reason}")]
    Corrupted { page: Option<u64>, reason: String },
    /// Another `Env` (in this process or another) has the database in directory `path` open;
    /// `pid` is the holder's process id when it could be found.
    #[error("the database at {} is open in another Env ({}); close it first", path.display(), holder(*pid))]
    Locked { path: PathBuf, pid: Option<u32> },
    /// A key longer than the tree allows.
    #[error("key of {len} bytes exceeds the maximum of {max}")]
    KeyTooLarge { len: usize, max: usize },
    /// A value longer than the engine allows.
    #[error("value of {len} bytes exceeds the maximum of {max}")]
    ValueTooLarge { len: u64, max: u64 },
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
    /// Long-lived readers pin more page versions than `Options::max_pinned_bytes` allows; new write
    /// transactions are refused until they end.
    #[error("readers pin {pinned_bytes} bytes of page versions, over the cap of {cap_bytes}; end long-lived read transactions")]
    PinnedLimit { pinned_bytes: u64, cap_bytes: u64 },
    /// The tree does not exist (or no longer does: a handle to a deleted tree).
    #[error("no such tree: {0}")]
    NoSuchTree(String),
    /// A tree of the other kind (a multi-value call on a plain tree, or the reverse).
    #[error("tree {0} is of the other kind (plain vs multi-value)")]
    WrongTreeKind(String),
    /// A tree of that name exists already (rename target).
    #[error("a tree named {0} exists already")]
    TreeExists(String),
    /// An argument out of range (an option, a page number past the end, ...).
    #[error("invalid argument: {0}")]
    Invalid(String),
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
        Error::Corrupted { page, reason: reason.into() }
    }
    /// True for `Io` errors that say the disk is full.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
    }
}

/// Attach an operation name to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn ctx(self, op: &'static str) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, op: &'static str) -> Result<T> {
        self.map_err(|e| Error::io(op, e))
    }
}
