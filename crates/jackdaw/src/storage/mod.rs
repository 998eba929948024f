//! Storage: the only layer that touches the operating system.
//!
//! Every file and directory operation of the engine goes through [`Storage`] and [`StorageFile`]:
//! the real implementation ([`FsStorage`]) uses `pread`/`pwritev`/`fdatasync`/`flock`/`mmap`; the
//! in-memory one ([`MemStorage`]) keeps files in RAM and serves the engine's mapped reads too, so
//! a whole environment can run without a disk. Tests wrap either one in fault-injecting
//! implementations (crash images, failing calls, blocking syncs): see crates/jackdaw/tests/support.
//!
//! Every sync takes a [`SyncSite`] label so that a fault injector can tell the call sites apart
//! (and a test can disable one at a time to show it is needed).
//!
//! All `unsafe` code of the crate lives in [`sys`].

mod fs;
mod mem;
pub(crate) mod sys;

pub use fs::FsStorage;
pub use mem::MemStorage;

use std::io::{self, IoSlice};
use std::path::Path;
use std::sync::Arc;

/// Which call site asks for a sync. Stats count syncs per site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SyncSite {
    /// The zero-filled body of a new journal file, before it is named.
    JournalPrealloc,
    /// The journal directory after a journal file was created or renamed (removals of retired
    /// files need no sync: a retired file left behind by a crash is recognised and ignored).
    JournalDir,
    /// A journal record written through the page cache (fallback path, or making `Buffered`/`None`
    /// records durable before a `Sync` commit or a flush).
    JournalData,
    /// The data file after it grew (size and extents), before anything refers to the new pages.
    DataGrow,
    /// The data file after the flusher (or recovery) wrote pages, before the header moves on.
    DataFlush,
    /// A header slot after it was written.
    Header,
    /// The database directory after the data file was created.
    DbDir,
    /// The data file after pages written once went straight to it, before their journal record.
    DataWriteOnce,
}

impl SyncSite {
    /// Every site, for stats tables and ablation loops.
    pub const ALL: [SyncSite; 8] = [
        SyncSite::JournalPrealloc,
        SyncSite::JournalDir,
        SyncSite::JournalData,
        SyncSite::DataGrow,
        SyncSite::DataFlush,
        SyncSite::Header,
        SyncSite::DbDir,
        SyncSite::DataWriteOnce,
    ];
    /// A short stable name.
    pub fn name(self) -> &'static str {
        match self {
            SyncSite::JournalPrealloc => "journal.prealloc",
            SyncSite::JournalDir => "journal.dir",
            SyncSite::JournalData => "journal.data",
            SyncSite::DataGrow => "data.grow",
            SyncSite::DataFlush => "data.flush",
            SyncSite::Header => "header",
            SyncSite::DbDir => "db.dir",
            SyncSite::DataWriteOnce => "data.write_once",
        }
    }
    pub(crate) fn index(self) -> usize {
        SyncSite::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read and write; create the file if it does not exist.
    CreateReadWrite,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read only; the file must exist (`Options::read_only`).
    ReadOnly,
}

/// How journal writes reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalIo {
    /// `O_DIRECT | O_DSYNC`: each write is durable when it returns, bypassing the page cache.
    DirectSync,
    /// The file system refused `O_DIRECT` (tmpfs, ...): buffered write followed by `fdatasync`.
    BufferedFsync,
    /// The in-memory backend: nothing reaches a device.
    Memory,
}

impl JournalIo {
    pub fn name(self) -> &'static str {
        match self {
            JournalIo::DirectSync => "O_DIRECT|O_DSYNC",
            JournalIo::BufferedFsync => "write+fdatasync (O_DIRECT refused)",
            JournalIo::Memory => "memory",
        }
    }
}

/// The file-system operations the engine uses. Implementations must be thread-safe.
pub trait Storage: Send + Sync + std::fmt::Debug + 'static {
    /// Open a regular file.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>>;
    /// Open a journal file that exists, asking for `O_DIRECT | O_DSYNC`; the implementation says
    /// which I/O mode it got. The second handle is a plain buffered one on the same file.
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles>;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Names (not paths) of the entries of a directory.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    fn exists(&self, path: &Path) -> bool;
    /// Atomic rename within one directory.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Remove an empty directory (temporary directories of a backup). The default refuses.
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, format!("cannot remove directory {}", path.display())))
    }
    /// Make the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()>;
    /// Take an exclusive lock on `path` without waiting: `LockAttempt::Held` when someone else
    /// holds it. An `Env` locks its `lock` file (`LockTarget::LockFile`), then its data file once
    /// it exists (`LockTarget::Existing`), and holds both while open. The locks must conflict
    /// with a second open in the same process as well as in another one, and must not be dropped
    /// when the engine closes another handle of the same file (`FsStorage` uses `flock`, an
    /// open-file-description lock; see there).
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt>;
    /// Take a shared lock on the existing file `path` without waiting (`Options::read_only`):
    /// shared locks coexist, and conflict with the exclusive ones of [`Storage::lock`]. The
    /// default takes the exclusive lock (correct, but one reader at a time).
    fn lock_shared(&self, path: &Path) -> io::Result<LockAttempt> {
        self.lock(path, LockTarget::Existing)
    }
}

/// Which file [`Storage::lock`] locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockTarget {
    /// The database's `lock` file: created if missing; once locked, the holder writes its
    /// process id into it (so that a refused opener can name the holder).
    LockFile,
    /// A file that exists (the data file): opened without being created or changed.
    Existing,
}

/// What [`Storage::lock`] got.
pub enum LockAttempt {
    /// The lock is ours until the guard drops.
    Acquired(Box<dyn LockGuard>),
    /// Someone else holds it; the holder's process id when it can be found.
    Held { pid: Option<u32> },
}

/// Held while an `Env` has the database open; dropping it releases the lock.
pub trait LockGuard: Send + Sync {}

/// Both handles of a journal file.
pub struct JournalHandles {
    /// Opened `O_DIRECT|O_DSYNC` when `io == DirectSync`, else the same as `buffered`.
    pub direct: Arc<dyn StorageFile>,
    pub buffered: Arc<dyn StorageFile>,
    pub io: JournalIo,
}

/// One open file.
pub trait StorageFile: Send + Sync {
    /// Read exactly `buf.len()` bytes at `offset`; reading past the end is an error
    /// (`UnexpectedEof`).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write all of `buf` at `offset`.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Write all the slices, back to back, starting at `offset`, in as few calls as possible.
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Reserve blocks up to `len` (extends the file); a full disk fails here, not later.
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Bytes the file system holding this file can still give it (`fstatvfs`: blocks available
    /// to an unprivileged writer × fragment size), or `None` when unknown (the default: storage
    /// without a file system under it).
    fn space_free(&self) -> io::Result<Option<u64>> {
        Ok(None)
    }
    fn sync_data(&self, site: SyncSite) -> io::Result<()>;
    fn sync_all(&self, site: SyncSite) -> io::Result<()>;
    /// Start writing back `[offset, offset + len)` to the device, first waiting for the writeback
    /// of earlier ranges to finish (`sync_file_range`). A pacing hint only: it makes nothing
    /// durable (that takes `sync_data`), but keeps a big flush from flooding the device queue
    /// ahead of journal writes. The default does nothing.
    fn write_back(&self, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }
    /// Map the first `len` bytes for reading. Writes made later through `write_*_at` are visible
    /// through the mapping (the page cache is shared).
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>>;
}

/// A read-only view of a file's first `len()` bytes.
pub trait Mapping: Send + Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `len` bytes at `offset`, or `None` when the range is out of bounds (or, in the memory
    /// backend, crosses an internal chunk boundary: callers read single pages, which never do).
    fn slice(&self, offset: usize, len: usize) -> Option<&[u8]>;
}
