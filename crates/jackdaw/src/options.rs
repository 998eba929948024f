//! `Options`: how an environment is opened. Immutable once the environment is open.

use crate::storage::{FsStorage, Storage};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a commit is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Durable when `commit` returns: the journal record is on the device (and so is every earlier
    /// record, whatever its mode).
    #[default]
    Sync,
    /// Written to the operating system at commit: survives a crash of the process, not a power
    /// loss, until the next `Sync` commit or flush.
    Buffered,
    /// Kept in memory at commit: lost with the process unless a later `Sync` or `Buffered` commit,
    /// a flush or `close` writes it out.
    None,
}

/// Which free pages the allocator reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FreeSpacePolicy {
    /// Reuse freed pages (lowest page number first) before growing the file.
    #[default]
    Reuse,
    /// Never reuse: always allocate at the end of the file. The control group of the free-space
    /// benchmark ("What is your control group?").
    AppendOnly,
}

/// Who runs the flusher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlusherMode {
    /// A background thread, woken by commits past the threshold and by the idle interval.
    #[default]
    Background,
    /// No thread: the flusher runs only when `Env::flush` is called (deterministic tests).
    Manual,
}

/// A source of time, replaceable by tests.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// Time since an arbitrary, fixed origin.
    fn now(&self) -> Duration;
}

/// The real monotonic clock, read coarsely: what it times (readers' ages, the flusher's idle
/// wait) is counted in milliseconds and more, and every read transaction reads it once. The
/// coarse clock (`CLOCK_MONOTONIC_COARSE`, the last scheduler tick: a few ms of resolution) costs
/// a fraction of the precise one (`Instant::now`: ~90 instructions a read transaction, ~2% of a
/// point read in its own transaction); where the kernel refuses it, `Instant` is used.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
    coarse: bool,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock { origin: Instant::now(), coarse: crate::storage::sys::monotonic_coarse().is_some() }
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Duration {
        if self.coarse {
            // (It answered once, so it always does; were it to fail, an age would read as 0.)
            return crate::storage::sys::monotonic_coarse().unwrap_or_default();
        }
        self.origin.elapsed()
    }
}

/// A clock that moves only when a test advances it.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub struct ManualClock {
    nanos: AtomicU64,
}

#[cfg_attr(not(feature = "internals"), allow(dead_code))]
impl ManualClock {
    /// Move the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.nanos.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

/// How to open an environment. Build with `Options::default()` and the setters.
///
/// Defaults:
/// - `page_size`: 4096 bytes (a power of two from 4096 to 65536, fixed at creation and read back
///   from the file afterwards);
/// - `durability`: [`Durability::Sync`];
/// - `flush_threshold_bytes`: 64 MiB of journal written since the last flush wakes the flusher
///   (this bounds recovery time); so do page versions in memory past half of `max_pinned_bytes`;
/// - `flush_idle`: after 1 s without a commit the flusher writes out whatever is unflushed;
/// - `max_pinned_bytes`: 1 GiB of unflushed page versions; past it new write transactions fail with
///   `Error::PinnedLimit` (after giving the flusher a chance), so a forgotten reader cannot exhaust
///   memory;
/// - `journal_file_bytes`: 16 MiB per journal file at most (at least 64 KiB, rounded up to 4 KiB):
///   the first new file is 1 MiB and each new one doubles up to it; a larger record gets a file
///   of its own size;
/// - `journal_files_kept`: 6 retired journal files kept for recycling: the 4 full-size files that
///   one flush threshold of journal fills, plus 2 for the records written while that flush runs.
///   With 4, a stream of small random transactions created (and zero-filled) a new file at nearly
///   every flush: 17 files for 1 M keys in 10,000 commits, against 9 with 6 (device bytes per
///   operation of the bench's `fill-rnd-1m` 1,470 -> 1,290, for up to 32 MiB more on disk);
/// - `free_space`: [`FreeSpacePolicy::Reuse`];
/// - `flusher`: [`FlusherMode::Background`];
/// - `write_once_min_pages`: 64: a transaction with at least this many pages that no snapshot or
///   recovery can need writes them straight to the data file (0 disables the path); a value of
///   this many pages or more goes the same way unless free pages can hold it (and the
///   transaction's dirty pages with it stay within half of `max_dirty_pages`): then it reuses
///   them, so overwritten large values keep the file's size;
/// - `max_dirty_pages`: 8192 (32 MiB of 4 KiB pages): when a write transaction holds this many
///   dirty pages, it writes the least recently changed half of the pages it appended (past the
///   committed high-water mark, so no snapshot or recovery can need them) straight to the data
///   file, as pages written once (synced at commit), and reuses their buffers: a big transaction
///   (a bulk load) needs bounded memory. A spilled page changed again is read back. 0 disables
///   spilling (so does `write_once_min_pages` 0);
/// - `read_only`: off (see [`Options::read_only`]);
/// - `flush_log`: off (when on, each journal write and each flush prints one line to stderr:
///   pages, bytes, time and pages by kind — leaves, branches, overflow, free-space maps, meta);
/// - `storage`: the real file system (feature `internals`: another storage);
/// - `clock`: the system's monotonic clock.
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) page_size: u32,
    pub(crate) durability: Durability,
    pub(crate) flush_threshold_bytes: u64,
    pub(crate) flush_idle: Duration,
    pub(crate) max_pinned_bytes: u64,
    pub(crate) journal_file_bytes: u64,
    pub(crate) journal_files_kept: usize,
    pub(crate) free_space: FreeSpacePolicy,
    pub(crate) flusher: FlusherMode,
    pub(crate) write_once_min_pages: usize,
    pub(crate) max_dirty_pages: usize,
    pub(crate) flush_log: bool,
    /// The largest record payload (`u32::MAX`, what the record header can say; lower only in
    /// tests, through `max_record_bytes`).
    pub(crate) max_record_bytes: u64,
    /// A commit whose journaled pages (dirty pages not written once) reach this many bytes
    /// streams its record (`txn/write.rs` `write_streamed`); 0 never does. Default 16 MiB; lower
    /// only in tests, through `stream_record_bytes`.
    pub(crate) stream_record_bytes: u64,
    pub(crate) read_only: bool,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 4096,
            durability: Durability::Sync,
            flush_threshold_bytes: 64 << 20,
            flush_idle: Duration::from_secs(1),
            max_pinned_bytes: 1 << 30,
            journal_file_bytes: 16 << 20,
            journal_files_kept: 6,
            free_space: FreeSpacePolicy::Reuse,
            flusher: FlusherMode::Background,
            write_once_min_pages: 64,
            max_dirty_pages: 8192,
            flush_log: false,
            max_record_bytes: u32::MAX as u64,
            stream_record_bytes: crate::journal::record::STREAM_RECORD_MIN,
            read_only: false,
            storage: Arc::new(FsStorage),
            clock: Arc::new(SystemClock::default()),
        }
    }
}

impl Options {
    /// Page size of a new database (ignored when opening an existing one).
    pub fn page_size(mut self, bytes: u32) -> Self {
        self.page_size = bytes;
        self
    }
    /// When a commit is durable (default [`Durability::Sync`]); a transaction can override it.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
    /// Journal bytes written since the last flush that wake the flusher (default 64 MiB).
    pub fn flush_threshold_bytes(mut self, b: u64) -> Self {
        self.flush_threshold_bytes = b;
        self
    }
    /// After this long without a commit the flusher writes out what is unflushed (default 1 s).
    pub fn flush_idle(mut self, d: Duration) -> Self {
        self.flush_idle = d;
        self
    }
    /// Unflushed page versions kept for readers before new write transactions are refused
    /// with `Error::PinnedLimit` (default 1 GiB).
    pub fn max_pinned_bytes(mut self, b: u64) -> Self {
        self.max_pinned_bytes = b;
        self
    }
    /// The largest size of a new journal file (default 16 MiB, at least 64 KiB).
    pub fn journal_file_bytes(mut self, b: u64) -> Self {
        self.journal_file_bytes = b;
        self
    }
    /// Retired journal files kept for reuse (default 6).
    pub fn journal_files_kept(mut self, n: usize) -> Self {
        self.journal_files_kept = n;
        self
    }
    /// Which free pages the allocator reuses (default [`FreeSpacePolicy::Reuse`]).
    pub fn free_space(mut self, p: FreeSpacePolicy) -> Self {
        self.free_space = p;
        self
    }
    /// Who runs the flusher (default [`FlusherMode::Background`]).
    pub fn flusher(mut self, m: FlusherMode) -> Self {
        self.flusher = m;
        self
    }
    /// Pages from which a transaction writes its new pages straight to the data file (default 64;
    /// 0 disables it).
    pub fn write_once_min_pages(mut self, n: usize) -> Self {
        self.write_once_min_pages = n;
        self
    }
    /// Dirty pages a write transaction holds in memory before it spills (default 8192; 0: never).
    pub fn max_dirty_pages(mut self, n: usize) -> Self {
        self.max_dirty_pages = n;
        self
    }
    /// Print one line per journal write and per flush to stderr (default off).
    pub fn flush_log(mut self, on: bool) -> Self {
        self.flush_log = on;
        self
    }
    /// Open without writing anything (default off): the database must exist; it is locked
    /// shared, so any number of read-only `Env`s (in any processes) can have it open at once, and
    /// none while a writing `Env` has it (`Error::Locked` both ways); a journal left by a crash is
    /// replayed in memory, not into the data file; write transactions and batches fail with
    /// `Error::ReadOnly`. For looking at a database (a crashed one included) without changing
    /// it.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }
    internals_pub! {
        /// Where the files live (feature `internals`): the in-memory and fault-injecting storages
        /// of the tests.
        fn storage(mut self, s: Arc<dyn Storage>) -> Self {
            self.storage = s;
            self
        }
    }
    internals_pub! {
        /// The largest journal record payload (feature `internals`; default and ceiling
        /// `u32::MAX`): tests of the transaction size limit set a small one.
        fn max_record_bytes(mut self, b: u64) -> Self {
            self.max_record_bytes = b.min(u32::MAX as u64);
            self
        }
    }
    internals_pub! {
        /// Journaled bytes from which a commit streams its record to the journal instead of
        /// building it in memory (feature `internals`; default 16 MiB, 0 = never): tests set a
        /// small one so that small transactions take the streamed path.
        fn stream_record_bytes(mut self, b: u64) -> Self {
            self.stream_record_bytes = b;
            self
        }
    }
    internals_pub! {
        /// The clock readers' ages are measured with (feature `internals`): a test's manual clock.
        fn clock(mut self, c: Arc<dyn Clock>) -> Self {
            self.clock = c;
            self
        }
    }

    pub(crate) fn validate(&self) -> crate::Result<()> {
        let ps = self.page_size;
        if !(4096..=65536).contains(&ps) || !ps.is_power_of_two() {
            return Err(crate::Error::Invalid(format!("page size {ps} is not a power of two in 4096..=65536")));
        }
        Ok(())
    }
}
