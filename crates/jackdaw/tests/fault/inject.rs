//! `FaultStorage`: an I/O-error injector behind the public `Storage` traits, over a `MemStorage`.
//!
//! Every fallible call (open, open_journal, create_dir_all, list_dir, rename, remove, sync_dir,
//! lock, and per file read, write, len, set_len, allocate, sync, map) gets a sequence number. A
//! dry run records the kinds of call in order; a faulty run fails call `at` with one fault:
//!
//! - `Eio`: the call fails with `EIO` and does nothing (a write writes nothing);
//! - `Enospc`: a write writes its first half (rounded down to 512 bytes), then fails with
//!   `ENOSPC`; `allocate` and growing `set_len` fail with `ENOSPC` and do nothing;
//! - `ShortRead`: a read fills half the buffer and fails with `UnexpectedEof`;
//! - `DiskFull`: `ENOSPC` where a full file system says it: growth (`allocate`, growing
//!   `set_len`) and writes to a file being created (`TmpFile`: a `*.tmp` file, the zeros of a new
//!   journal file); not writes into space a file already has (a preallocated journal file, the
//!   data file's allocated pages), which a real file system does not refuse. `heal` frees the
//!   space again.
//!
//! Every call on a file whose name ends in `.tmp` (a file not in place yet, which nothing refers
//! to: the zeros of a new journal file, a new data file) is of kind `TmpFile`: its failure fails
//! the operation that needed the file and poisons nothing.
//!
//! Transient: only call `at` fails. Persistent: call `at` and every later call it applies to
//! fail: `Eio` every call (the device is gone), `Enospc` every write and growth (the disk is
//! full; reads still work), `ShortRead` every read.
//!
//! Journal files are reported as `JournalIo::DirectSync` so that the engine's `O_DSYNC` path runs.

use jackdaw::internals::{
    JournalHandles, JournalIo, LockAttempt, LockTarget, Mapping, MemStorage, OpenMode, Storage, StorageFile, SyncSite,
};
use std::io::{self, IoSlice};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    Open,
    OpenJournal,
    CreateDir,
    ListDir,
    Rename,
    Remove,
    SyncDir,
    Lock,
    Read,
    Write,
    TmpFile,
    Len,
    SetLenGrow,
    SetLenShrink,
    Allocate,
    Sync,
    Map,
}

impl Call {
    /// The faults injected at a call of this kind.
    pub fn faults(self) -> &'static [Fault] {
        match self {
            Call::Write | Call::TmpFile => &[Fault::Eio, Fault::Enospc],
            Call::Allocate | Call::SetLenGrow => &[Fault::Enospc],
            Call::Read => &[Fault::ShortRead],
            _ => &[Fault::Eio],
        }
    }
    /// Calls after which the environment must be poisoned (a failed write or sync, or a failed
    /// metadata change of the journal or the data file).
    pub fn must_poison(self) -> bool {
        matches!(self, Call::Write | Call::Sync | Call::SyncDir | Call::Rename | Call::Remove | Call::SetLenShrink)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    Eio,
    Enospc,
    ShortRead,
    DiskFull,
}

impl Fault {
    fn applies(self, c: Call) -> bool {
        match self {
            Fault::Eio => true,
            Fault::Enospc => matches!(c, Call::Write | Call::TmpFile | Call::Allocate | Call::SetLenGrow),
            Fault::DiskFull => matches!(c, Call::TmpFile | Call::Allocate | Call::SetLenGrow),
            Fault::ShortRead => c == Call::Read,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub at: u64,
    pub fault: Fault,
    pub persistent: bool,
}

struct Inner {
    n: AtomicU64,
    plan: Option<Plan>,
    /// Kinds of every call so far.
    calls: Mutex<Vec<Call>>,
    /// The first call that failed: (index, kind).
    fired: Mutex<Option<(u64, Call)>>,
    /// Calls failed in all.
    failed: AtomicU64,
    /// Every read: (file, offset, length).
    reads: Mutex<Vec<(std::path::PathBuf, u64, usize)>>,
    /// No more faults (`heal`).
    healed: std::sync::atomic::AtomicBool,
    /// `DiskFull` on every call it applies to (`set_disk_full`), besides the plan.
    full: std::sync::atomic::AtomicBool,
    /// What every file says of the free space (`set_space_free`); `None`: the inner storage's.
    space_free: Mutex<Option<u64>>,
}

#[derive(Clone)]
pub struct FaultStorage {
    inner: MemStorage,
    st: Arc<Inner>,
}

impl std::fmt::Debug for FaultStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultStorage")
    }
}

fn os(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

impl FaultStorage {
    pub fn new(inner: MemStorage, plan: Option<Plan>) -> FaultStorage {
        FaultStorage {
            inner,
            st: Arc::new(Inner {
                n: AtomicU64::new(0),
                plan,
                calls: Mutex::new(Vec::new()),
                fired: Mutex::new(None),
                failed: AtomicU64::new(0),
                reads: Mutex::new(Vec::new()),
                healed: std::sync::atomic::AtomicBool::new(false),
                full: std::sync::atomic::AtomicBool::new(false),
                space_free: Mutex::new(None),
            }),
        }
    }
    pub fn calls(&self) -> Vec<Call> {
        self.st.calls.lock().unwrap().clone()
    }
    pub fn fired(&self) -> Option<(u64, Call)> {
        *self.st.fired.lock().unwrap()
    }
    /// Every `read_exact_at` so far: (file, offset, length).
    pub fn reads(&self) -> Vec<(std::path::PathBuf, u64, usize)> {
        self.st.reads.lock().unwrap().clone()
    }
    /// Inject no more faults from now on (the disk has room again, the device is back).
    pub fn heal(&self) {
        self.st.healed.store(true, Ordering::SeqCst);
        self.st.full.store(false, Ordering::SeqCst);
    }
    /// From now on every file reports `bytes` free (`StorageFile::space_free`); `None` leaves it
    /// to the inner storage (which does not know).
    pub fn set_space_free(&self, bytes: Option<u64>) {
        *self.st.space_free.lock().unwrap() = bytes;
    }
    /// From now on, until `heal`, the disk is full (`Fault::DiskFull`).
    pub fn set_disk_full(&self) {
        self.st.full.store(true, Ordering::SeqCst);
    }
    /// Calls made so far (the index the next call gets).
    pub fn call_count(&self) -> u64 {
        self.st.n.load(Ordering::SeqCst)
    }
    pub fn failed_calls(&self) -> u64 {
        self.st.failed.load(Ordering::SeqCst)
    }

    /// Count a call; the fault to inject, if any.
    fn decide(&self, c: Call) -> Option<Fault> {
        let i = self.st.n.fetch_add(1, Ordering::SeqCst);
        self.st.calls.lock().unwrap().push(c);
        if self.st.full.load(Ordering::SeqCst) && Fault::DiskFull.applies(c) {
            self.st.failed.fetch_add(1, Ordering::SeqCst);
            self.st.fired.lock().unwrap().get_or_insert((i, c));
            return Some(Fault::DiskFull);
        }
        if self.st.healed.load(Ordering::SeqCst) {
            return None;
        }
        let p = self.st.plan?;
        let hit = (i == p.at && p.fault.applies(c)) || (p.persistent && i > p.at && p.fault.applies(c));
        // A call at `at` of another kind than the dry run's: fail it anyway with EIO (the caller
        // compares call logs and reports the divergence).
        let fault = if hit {
            Some(p.fault)
        } else if i == p.at {
            Some(Fault::Eio)
        } else {
            None
        };
        if fault.is_some() {
            self.st.failed.fetch_add(1, Ordering::SeqCst);
            let mut f = self.st.fired.lock().unwrap();
            if f.is_none() {
                *f = Some((i, c));
            }
        }
        fault
    }

    fn simple(&self, c: Call) -> io::Result<()> {
        match self.decide(c) {
            None => Ok(()),
            Some(Fault::Enospc | Fault::DiskFull) => Err(os(libc::ENOSPC)),
            Some(_) => Err(os(libc::EIO)),
        }
    }

    fn wrap(&self, path: &Path, f: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        let tmp = path.to_string_lossy().ends_with(".tmp");
        Arc::new(FaultFile { s: self.clone(), f, path: path.to_path_buf(), tmp })
    }
}

impl Storage for FaultStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        self.simple(Call::Open)?;
        Ok(self.wrap(path, self.inner.open(path, mode)?))
    }
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        self.simple(Call::OpenJournal)?;
        let h = self.inner.open_journal(path)?;
        Ok(JournalHandles {
            direct: self.wrap(path, h.direct),
            buffered: self.wrap(path, h.buffered),
            io: JournalIo::DirectSync,
        })
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.simple(Call::CreateDir)?;
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.simple(Call::ListDir)?;
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.simple(Call::Rename)?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.simple(Call::Remove)?;
        self.inner.remove(path)
    }
    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()> {
        self.simple(Call::SyncDir)?;
        self.inner.sync_dir(path, site)
    }
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        self.simple(Call::Lock)?;
        self.inner.lock(path, target)
    }
}

struct FaultFile {
    s: FaultStorage,
    f: Arc<dyn StorageFile>,
    path: std::path::PathBuf,
    /// A `*.tmp` file: every call is `Call::TmpFile`.
    tmp: bool,
}

impl FaultFile {
    /// The kind of call `c` on this file.
    fn kind(&self, c: Call) -> Call {
        if self.tmp {
            Call::TmpFile
        } else {
            c
        }
    }

    fn simple(&self, c: Call) -> io::Result<()> {
        self.s.simple(self.kind(c))
    }

    fn write(&self, data: &[u8], offset: u64) -> io::Result<()> {
        match self.s.decide(self.kind(Call::Write)) {
            None => self.f.write_all_at(data, offset),
            Some(Fault::Enospc | Fault::DiskFull) => {
                let half = (data.len() / 2) / 512 * 512;
                if half > 0 {
                    self.f.write_all_at(&data[..half], offset)?;
                }
                Err(os(libc::ENOSPC))
            }
            Some(_) => Err(os(libc::EIO)),
        }
    }
}

impl StorageFile for FaultFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.s.st.reads.lock().unwrap().push((self.path.clone(), offset, buf.len()));
        match self.s.decide(Call::Read) {
            None => self.f.read_exact_at(buf, offset),
            Some(Fault::ShortRead) => {
                let half = buf.len() / 2;
                let _ = self.f.read_exact_at(&mut buf[..half], offset);
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read (injected)"))
            }
            Some(_) => Err(os(libc::EIO)),
        }
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write(buf, offset)
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
        let mut v = Vec::with_capacity(bufs.iter().map(|b| b.len()).sum());
        for b in bufs {
            v.extend_from_slice(b);
        }
        self.write(&v, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.simple(Call::Len)?;
        self.f.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let cur = self.f.len()?;
        self.simple(if len > cur { Call::SetLenGrow } else { Call::SetLenShrink })?;
        self.f.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.simple(Call::Allocate)?;
        self.f.allocate(len)
    }
    fn space_free(&self) -> io::Result<Option<u64>> {
        match *self.s.st.space_free.lock().unwrap() {
            Some(v) => Ok(Some(v)),
            None => self.f.space_free(),
        }
    }
    fn sync_data(&self, site: SyncSite) -> io::Result<()> {
        self.simple(Call::Sync)?;
        self.f.sync_data(site)
    }
    fn sync_all(&self, site: SyncSite) -> io::Result<()> {
        self.simple(Call::Sync)?;
        self.f.sync_all(site)
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        self.s.simple(Call::Map)?;
        self.f.map(len)
    }
}
