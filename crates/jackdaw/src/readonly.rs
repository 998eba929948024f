//! `Options::read_only(true)`: opening a database without writing anything.
//!
//! - **Lock**: a shared lock on the data file (`Storage::lock_shared`, `flock(LOCK_SH)`), so any
//!   number of read-only `Env`s (of any processes) open the database at once, and none while a
//!   writing `Env` holds its exclusive locks (which a read-only one, in turn, keeps out:
//!   `Error::Locked` both ways).
//! - **Recovery in memory**: the journal is replayed exactly as at a normal open (the same
//!   `recovery::replay`, with its checks), but into an overlay over the data file that keeps every
//!   page write in memory; the rebuilt pages are then published in the page table as the last
//!   recovered transaction's versions, so snapshots read them before the data file. Nothing is
//!   written: not the data file, its header, the journal files (no file is recycled, removed or
//!   set aside), nor a lock file. The memory cost is the pages the journal rebuilds.
//! - **No writes**: no flusher thread, no journal writer; write transactions and batches fail with
//!   `Error::ReadOnly`; `flush` and `sync` have nothing to do; `close` writes nothing. Every file
//!   operation of the `Env` goes through `ReadOnlyStorage`, which refuses writes under the
//!   database directory (and opens its files read-only).

use crate::data::page::{self, PageKind};
use crate::data::DataFile;
use crate::data::DATA_FILE;
use crate::error::IoContext;
use crate::journal::{self, recovery, Journal, Space};
use crate::options::Options;
use crate::stats::Counters;
use crate::storage::{JournalHandles, LockAttempt, LockTarget, Mapping, OpenMode, Storage, StorageFile, SyncSite};
use crate::sync::Mutex;
use crate::txn::alloc::{count_set_bits, AllocSummary, Geometry};
use crate::txn::core::{Committed, Core, Opened};
use crate::txn::page_table::PageTable;
use crate::{Error, PageNo, Result, TxId};
use std::collections::BTreeMap;
use std::io::{self, IoSlice};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Open the database in `dir` read-only (see the module doc).
pub(crate) fn open_core(dir: &Path, opts: Options) -> Result<Core> {
    let storage = opts.storage.clone();
    let (lock, file, header, flen) = lock_and_open_shared(storage.as_ref(), dir)?;
    let ps = header.page_size as usize;
    let journal_dir = dir.join(journal::DIR);
    let replay_storage: Arc<dyn Storage> = Arc::new(ReadOnlyStorage { inner: storage.clone(), dir: dir.to_path_buf() });
    let (end, paths, rebuilt) = replay_in_memory(&file, flen, ps, replay_storage.as_ref(), &journal_dir, &header)?;

    let data = DataFile::open(file, ps)?;
    let counters = Arc::new(Counters::default());
    let table = PageTable::new(ps, 0);
    if !rebuilt.is_empty() {
        let pages = rebuilt.iter().map(|(pgno, buf)| (PageNo::new(*pgno), table.copy_of(buf))).collect();
        table.publish(TxId::new(end.last_txid), pages, TxId::new(end.last_txid), &[]);
    }
    let alloc = load_alloc(&data, &rebuilt, end.next_page)?;
    // Above every generation in the directory, so `check()` takes no file for a stray one.
    let max_gen = paths.keys().copied().chain(end.verified.iter().copied()).fold(header.journal_gen, u64::max);
    let journal = Journal::new(header.db_id, counters.clone(), end.last_txid);
    let space = Space::new(
        storage.clone(),
        journal_dir.clone(),
        opts.journal_file_bytes,
        0,
        counters.clone(),
        end.last_txid,
        max_gen,
        Vec::new(),
        false,
    );
    let committed = Committed { txid: TxId::new(end.last_txid), next_page: PageNo::new(end.next_page) };
    // From here on every file operation of this Env (check's journal scan included) goes through
    // the read-only view: nothing under `dir` can be written, created, renamed or removed.
    let opts = Options { storage: replay_storage, ..opts };
    Ok(Core::new(Opened {
        opts,
        dir: dir.to_path_buf(),
        journal_dir,
        data,
        header,
        journal,
        space,
        table,
        committed,
        alloc,
        counters,
        lock,
    }))
}

/// Read-only open's first step: the data file must exist; take its shared lock, open it
/// read-only and read its header (checked against the file's length). Returns the lock, the
/// file, the header and the file's length.
#[allow(clippy::type_complexity)]
fn lock_and_open_shared(
    storage: &dyn Storage,
    dir: &Path,
) -> Result<(Box<dyn crate::storage::LockGuard>, Arc<dyn StorageFile>, crate::data::Header, u64)> {
    let data_path = dir.join(DATA_FILE);
    if !storage.exists(&data_path) {
        return Err(Error::NotADatabase(format!(
            "no Jackdaw database in {} (no {DATA_FILE}); a read-only open creates nothing",
            dir.display()
        )));
    }
    let lock = match storage.lock_shared(&data_path).ctx("lock database (shared)")? {
        LockAttempt::Acquired(g) => g,
        LockAttempt::Held { pid } => return Err(Error::Locked { path: dir.to_path_buf(), pid }),
    };
    let file = storage.open(&data_path, OpenMode::ReadOnly).ctx("open data file")?;
    let (header, flen) = DataFile::read_header_checked(file.as_ref())?;
    Ok((lock, file, header, flen))
}

/// Replay the journal after `header` into an overlay over `file` (the same code and checks as
/// a normal open, writes kept in memory). Returns the scan's end, the journal files, and the
/// rebuilt pages by page number.
#[allow(clippy::type_complexity)]
fn replay_in_memory(
    file: &Arc<dyn StorageFile>,
    flen: u64,
    ps: usize,
    replay_storage: &dyn Storage,
    journal_dir: &Path,
    header: &crate::data::Header,
) -> Result<(recovery::ScanEnd, BTreeMap<u64, PathBuf>, BTreeMap<u64, Vec<u8>>)> {
    let overlay = Arc::new(Overlay { base: file.clone(), pages: Mutex::new(BTreeMap::new()), len: Mutex::new(flen) });
    let (end, paths) = {
        let scratch = DataFile::open(overlay.clone(), ps)?;
        recovery::replay(replay_storage, journal_dir, header, &scratch)?
    };
    // Keyed by offset in the overlay; by page number from here on.
    let rebuilt: BTreeMap<u64, Vec<u8>> =
        std::mem::take(&mut *overlay.pages.lock()).into_iter().map(|(off, b)| (off / ps as u64, b)).collect();
    drop(overlay);
    Ok((end, paths, rebuilt))
}

/// Per-section free counts from the bitmap pages (the rebuilt version of a page first).
fn load_alloc(data: &DataFile, rebuilt: &BTreeMap<u64, Vec<u8>>, next_page: u64) -> Result<AllocSummary> {
    let g = Geometry::new(data.page_size);
    let map = data.map();
    let mut free = Vec::new();
    for k in 0..g.sections(next_page) {
        let pgno = g.bitmap_page(k);
        let p: &[u8] = match rebuilt.get(&pgno) {
            Some(b) => b,
            None => map.page(pgno)?,
        };
        if page::page_kind(p) != Some(PageKind::FreeMap) {
            return Err(Error::corrupted(Some(pgno), "free-space bitmap page has another kind"));
        }
        let limit = (next_page - k * g.section).min(g.section);
        free.push(count_set_bits(p, limit));
    }
    Ok(AllocSummary { free })
}

/// The data file as recovery sees it in a read-only open: reads fall through to the file,
/// page writes stay in memory (by offset: recovery writes whole pages at page offsets), growth
/// only changes the length it reports.
struct Overlay {
    base: Arc<dyn StorageFile>,
    pages: Mutex<BTreeMap<u64, Vec<u8>>>,
    len: Mutex<u64>,
}

impl StorageFile for Overlay {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        // Recovery reads base pages it has not rebuilt (diff bases, bitmap pages): from the file,
        // unless this range was written here.
        let pages = self.pages.lock();
        if let Some(p) = pages.get(&offset) {
            if p.len() == buf.len() {
                buf.copy_from_slice(p);
                return Ok(());
            }
        }
        drop(pages);
        let base_len = self.base.len()?;
        if offset >= base_len {
            buf.fill(0);
            return Ok(());
        }
        self.base.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.pages.lock().insert(offset, buf.to_vec());
        Ok(())
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
        let mut off = offset;
        for b in bufs {
            self.write_all_at(b, off)?;
            off += b.len() as u64;
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(*self.len.lock())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        *self.len.lock() = len;
        Ok(())
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut l = self.len.lock();
        *l = (*l).max(len);
        Ok(())
    }
    fn sync_data(&self, _site: SyncSite) -> io::Result<()> {
        Ok(())
    }
    fn sync_all(&self, _site: SyncSite) -> io::Result<()> {
        Ok(())
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        let base_len = self.base.len()?;
        self.base.map(len.min(base_len))
    }
}

/// The storage of a read-only `Env` (recovery and everything after): under the database
/// directory, files open read-only, and creating, renaming, locking or writing a journal is
/// refused; the one removal `recovery::list` makes (an unfinished `*.jnl.tmp`, which never held a
/// record) is skipped. Paths elsewhere (a backup's destination, a compaction's scratch database)
/// go to the real storage unchanged.
#[derive(Debug)]
struct ReadOnlyStorage {
    inner: Arc<dyn Storage>,
    dir: PathBuf,
}

impl ReadOnlyStorage {
    fn inside(&self, path: &Path) -> bool {
        path.starts_with(&self.dir)
    }
}

fn refused(what: &str, path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("read-only open: no {what} of {}", path.display()))
}

impl Storage for ReadOnlyStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        self.inner.open(path, if self.inside(path) { OpenMode::ReadOnly } else { mode })
    }
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        if self.inside(path) {
            return Err(refused("journal writer", path));
        }
        self.inner.open_journal(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        if self.inside(path) {
            return Err(refused("directory creation", path));
        }
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.inside(from) || self.inside(to) {
            return Err(refused("rename", from));
        }
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        if self.inside(path) {
            return Ok(());
        }
        self.inner.remove(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        if self.inside(path) {
            return Err(refused("removal", path));
        }
        self.inner.remove_dir(path)
    }
    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()> {
        if self.inside(path) {
            return Ok(());
        }
        self.inner.sync_dir(path, site)
    }
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        if self.inside(path) {
            return Err(refused("exclusive lock", path));
        }
        self.inner.lock(path, target)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<LockAttempt> {
        self.inner.lock_shared(path)
    }
}
