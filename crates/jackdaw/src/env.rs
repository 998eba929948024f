//! `Env`: opening (creation and recovery), transactions, flushing, closing, stats and `check()`.

use crate::api::{ReadTxn, WriteTxn};
use crate::batch::{BatchHandle, MergerThreads, WriteBatch};
use crate::data::file::{initial_len, FIRST_BITMAP_PAGE, FIRST_FREE_PAGE, META_PAGE};
use crate::data::page::{self, PageKind};
use crate::data::{DataFile, Header};
use crate::error::IoContext;
use crate::ids::TxId;
use crate::journal::{self, recovery, Journal, Space};
use crate::options::{FlusherMode, Options};
use crate::stats::{CheckReport, Counters, Problem, ProblemKind, ReaderInfo, Stats};
use crate::storage::{JournalIo, LockAttempt, LockGuard, LockTarget, OpenMode, Storage, SyncSite};
use crate::sync::thread::JoinHandle;
use crate::sync::AtomicBool;
use crate::sync::{Condvar, Mutex};
use crate::txn::alloc::{any_set_from, count_set_bits, AllocSummary, Geometry};
use crate::txn::core::{Committed, Core, FlusherCtl, Readers};
use crate::txn::{flusher, page_table::PageTable};
use crate::{Error, Result};
use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::data::DATA_FILE;
const LOCK_FILE: &str = "lock";

/// An open database. Cheap to clone (an `Arc` inside); `Send + Sync`.
#[derive(Clone)]
pub struct Env {
    handle: Arc<Handle>,
}

struct Handle {
    core: Arc<Core>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    merger: Mutex<Option<MergerThreads>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Handle {
    fn close(&self) -> Result<()> {
        // Inside `check_with`'s callback this thread holds the flush lock the final flush needs.
        if crate::txn::write::checking_on_this_thread(&self.core) {
            return Err(Error::Busy(crate::txn::write::CHECKING_ON_THIS_THREAD));
        }
        if let Some(m) = self.merger.lock().take() {
            m.stop();
        }
        close(&self.core, &self.flusher)
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Env({})", self.handle.core.dir.display())
    }
}

impl Env {
    /// Open the database in directory `path`, creating it if missing, recovering it if it was not
    /// closed cleanly.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Env> {
        opts.validate()?;
        let core = Arc::new(if opts.read_only {
            crate::readonly::open_core(path.as_ref(), opts)?
        } else {
            open_core(path.as_ref(), opts)?
        });
        let flusher = if core.opts.flusher == FlusherMode::Background && !core.opts.read_only {
            let c = core.clone();
            let h = crate::sync::thread::Builder::new()
                .name("jackdaw-flusher".into())
                .spawn(move || flusher::run(c))
                .ctx("start flusher thread")?;
            Some(h)
        } else {
            None
        };
        Ok(Env { handle: Arc::new(Handle { core, flusher: Mutex::new(flusher), merger: Mutex::new(None) }) })
    }

    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.handle.core
    }

    /// Begin the write transaction, waiting while another is active.
    pub fn write(&self) -> Result<WriteTxn> {
        WriteTxn::begin(self.core(), true)
    }

    /// Begin the write transaction, or fail at once with `Error::Busy`.
    pub fn try_write(&self) -> Result<WriteTxn> {
        WriteTxn::begin(self.core(), false)
    }

    /// Begin a read transaction: an owned snapshot of the last committed state.
    pub fn read(&self) -> Result<ReadTxn> {
        ReadTxn::try_begin(self.core())
    }

    /// Move every committed page version that no snapshot still needs into the data file, sync it
    /// and write the header (on the caller's thread).
    pub fn flush(&self) -> Result<()> {
        if self.core().closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        // Inside `check_with`'s callback this thread holds the flush lock (a `WriteTxn` does not).
        if crate::txn::write::checking_on_this_thread(self.core()) {
            return Err(Error::Busy(crate::txn::write::CHECKING_ON_THIS_THREAD));
        }
        if self.core().opts.read_only {
            // Nothing is ever written: nothing to flush.
            return Ok(());
        }
        flusher::flush_once(self.core())
    }

    /// Flush, sync and stop the flusher. Afterwards new transactions on any clone fail with
    /// `Error::Closed`; snapshots still alive keep reading until dropped. Releases the database's
    /// locks, so the same directory can be opened again (in this process too, while clones of
    /// this `Env` live on); but while a read transaction (or this thread's write transaction) is
    /// still alive the locks stay, `close` returns `Error::Busy` saying so (everything else is
    /// done), and the last of those transactions releases them when it ends.
    pub fn close(&self) -> Result<()> {
        self.handle.close()
    }

    /// Submit a batch to the transaction merger and wait until it is committed with the
    /// environment's durability. A thread holding a `WriteTxn` gets `Error::Busy` (it would wait
    /// for itself).
    pub fn write_batch(&self, batch: WriteBatch) -> Result<()> {
        self.write_batch_async(batch).wait()
    }

    /// Submit a batch; `wait()` on the handle blocks until it is committed.
    pub fn write_batch_async(&self, batch: WriteBatch) -> BatchHandle {
        let refuse = |e: Error| {
            let (tx, rx) = crate::sync::mpsc::sync_channel(1);
            let _ = tx.send(Err(e));
            BatchHandle::ready(rx)
        };
        let core = self.core();
        if core.closed.load(Ordering::Acquire) {
            return refuse(Error::Closed);
        }
        if let Err(e) = crate::txn::write::refuse_if_held(core) {
            return refuse(e);
        }
        if core.opts.read_only {
            return refuse(Error::ReadOnly(core.dir.clone()));
        }
        let mut m = self.handle.merger.lock();
        if m.is_none() {
            match MergerThreads::start(core) {
                Ok(t) => *m = Some(t),
                Err(e) => return refuse(e),
            }
        }
        match m.as_ref() {
            Some(t) => t.submit(batch).of(core),
            None => refuse(Error::Closed),
        }
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.core().dir
    }

    /// Make every committed transaction durable: every transaction whose `commit()` has
    /// returned, whatever its durability (`Buffered`, `None`), is on the device when this
    /// returns, and so is every earlier one. Returns the id of the last transaction made durable.
    ///
    /// This is how a stream of `Buffered` commits is grouped under one device sync (a Raft log
    /// acknowledges a group of appends after one `sync()`). It takes no write transaction: it
    /// runs while another thread holds one (a commit racing with it may or may not be covered;
    /// the returned id says). A failed sync poisons the environment, like a failed commit.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use jackdaw::{Durability, Env, Options};
    /// let env = Env::open(dir.path(), Options::default().durability(Durability::Buffered))?;
    /// let mut last = None;
    /// for i in 0u32..10 {
    ///     let mut tx = env.write()?;
    ///     let log = match tx.open_tree("log")? { Some(t) => t, None => tx.create_tree("log")? };
    ///     tx.put(&log, i.to_be_bytes(), b"entry")?;
    ///     last = Some(tx.commit()?.txid);
    /// }
    /// let durable = env.sync()?; // one device sync for the ten commits
    /// assert!(durable >= last.unwrap());
    /// # Ok::<(), jackdaw::Error>(())
    /// ```
    pub fn sync(&self) -> Result<TxId> {
        let core = self.core();
        if core.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(why) = core.poisoned.lock().clone() {
            return Err(Error::Poisoned(why));
        }
        let target = core.committed().txid;
        if core.opts.read_only {
            // Every transaction it sees is durable already (in the data file or the journal).
            return Ok(TxId::new(target));
        }
        {
            let j = core.journal.lock();
            if j.failed() {
                return Err(Error::Poisoned("an earlier journal write failed".into()));
            }
        }
        Journal::make_durable(&core.journal, target).inspect_err(|e| core.poison(e))?;
        Ok(TxId::new(core.journal.lock().durable_txid()))
    }

    /// A picture of the environment.
    pub fn stats(&self) -> Stats {
        stats(self.core())
    }

    /// Verify the whole database: header slots, every page in use (checksum, number, kind), the
    /// free-space map, every tree (order, fences, kinds, counts, overflow chains), reachability
    /// (no page reachable twice; reachable and free pages together are all pages) and the journal
    /// chain. `Ok(report)` whenever the check ran, with every problem found in `report.problems`
    /// (empty when sound; [`CheckReport::into_result`] turns problems into `Err(Corrupted)`).
    /// `Err` only when the check could not run: I/O error, closed, poisoned, or `Busy` (this
    /// thread holds the write transaction).
    pub fn check(&self) -> Result<CheckReport> {
        check(self.core(), |rtx: &ReadTxn, problems: &mut Vec<Problem>| {
            crate::api::catalog::reachable(&*rtx.snap, problems)
        })
    }

    internals_pub! {
        /// `check()` for databases written through raw page access (feature `internals`):
        /// `reachable` returns every page the caller uses (the meta page excluded) instead of the
        /// tree walk.
        fn check_with<F>(&self, reachable: F) -> Result<CheckReport>
        where
            F: FnOnce(&ReadTxn) -> Result<Vec<u64>>,
        {
            check(self.core(), |rtx: &ReadTxn, problems: &mut Vec<Problem>| match reachable(rtx) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(Problem::from_error(ProblemKind::Reachability, None, None, "walking reachable pages: ", &e));
                    Vec::new()
                }
            })
        }
    }
}

/// What `close` says when transactions still hold the environment's locks.
const STILL_LOCKED: &str = "closed, but read or write transactions of this Env are still open; the database stays \
                            locked until the last of them ends";

fn close(core: &Arc<Core>, flusher: &Mutex<Option<JoinHandle<()>>>) -> Result<()> {
    // Let an active write transaction of another thread finish first (unless this thread holds
    // it: it would wait for itself; that transaction's commit then fails with `Closed`).
    let writer = if crate::txn::write::held_by_this_thread(core) { None } else { Some(core.writer.lock()) };
    if core.closed.swap(true, Ordering::AcqRel) {
        // Closed already: `Ok` only if nothing failed (a failed write must never read as `Ok`).
        return match core.poisoned.lock().as_ref() {
            Some(m) => Err(Error::Poisoned(m.clone())),
            None if core.lock.lock().is_some() && core.close_done.load(Ordering::Acquire) => {
                Err(Error::Busy(STILL_LOCKED))
            }
            None => Ok(()),
        };
    }
    drop(writer);
    let r = if core.opts.read_only { Ok(()) } else { close_files(core, flusher) };
    // Nothing of this Env writes from here on: the locks go now, or with the last transaction.
    let readers = core.readers.lock();
    core.close_done.store(true, Ordering::Release);
    let released = core.release_lock_if_idle(&readers);
    drop(readers);
    match r {
        Ok(()) if !released => Err(Error::Busy(STILL_LOCKED)),
        r => r,
    }
}

/// The work of `close` after refusing new transactions: the last commits' records, the
/// flusher's stop, the final flush and journal sync.
fn close_files(core: &Arc<Core>, flusher: &Mutex<Option<JoinHandle<()>>>) -> Result<()> {
    // Commits prepared before the close get their records written (pipelined commits).
    {
        let mut j = core.journal.lock();
        let prepared = core.prepared.lock().txid;
        core.journal_cv
            .wait_while(&mut j, |j| core.committed().txid < prepared && !j.failed() && core.poisoned.lock().is_none());
    }
    if let Some(h) = flusher.lock().take() {
        core.flusher_ctl.lock().stop = true;
        core.flusher_cv.notify_all();
        let _ = h.join();
    }
    core.space.lock().discard_spare();
    if core.poisoned.lock().is_some() {
        return Err(Error::Poisoned("closed after a write failure".into()));
    }
    flusher::flush_once(core)?;
    let last = core.committed().txid;
    // A failed journal write or sync poisons, here too (so that a second `close` is not `Ok`).
    Journal::make_durable(&core.journal, last).inspect_err(|e| core.poison(e))?;
    // Everything is in the data file (unless a live snapshot held the flush back): the journal's
    // files are of no further use, so a closed database is its data file alone. No directory
    // sync: a file that comes back after a power loss holds only flushed records, and opening
    // retires it (DURABILITY §3).
    if core.flushed_txid.load(Ordering::Acquire) >= last {
        let doomed = core.space.lock().release_all(last);
        doomed.remove().inspect_err(|e| core.poison(e))?;
        // The growth slack goes back to the file system when nothing maps the old length: no
        // snapshot alive (checked under the readers mutex; none can begin, the environment is
        // closed) and no write transaction on this thread.
        let readers = core.readers.lock();
        if readers.live() == 0 && !crate::txn::write::held_by_this_thread(core) {
            core.data.trim_to(core.committed().next_page).inspect_err(|e| core.poison(e))?;
        }
    }
    Ok(())
}

fn new_db_id(opts: &Options) -> u64 {
    let t =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    xxhash_rust::xxh3::xxh3_64(
        &[
            t.to_le_bytes(),
            (std::process::id() as u64).to_le_bytes(),
            (opts.clock.now().as_nanos() as u64).to_le_bytes(),
        ]
        .concat(),
    )
}

/// Write a new, empty database file at `path` (under a temporary name, then renamed).
fn create(storage: &dyn Storage, dir: &Path, opts: &Options) -> Result<()> {
    let ps = opts.page_size as usize;
    let tmp = dir.join(format!("{DATA_FILE}.tmp"));
    let f = storage.open(&tmp, OpenMode::CreateReadWrite).ctx("create data file")?;
    f.set_len(0).ctx("truncate data file")?;
    let len = initial_len(FIRST_FREE_PAGE * ps as u64, ps as u64);
    f.allocate(len).ctx("allocate data file")?;
    let mut pages = vec![0u8; FIRST_FREE_PAGE as usize * ps];
    let db_id = new_db_id(opts);
    for (pgno, kind) in [(FIRST_BITMAP_PAGE, PageKind::FreeMap), (META_PAGE, PageKind::Meta)] {
        let p = &mut pages[pgno as usize * ps..(pgno as usize + 1) * ps];
        page::init(p, pgno, kind);
        page::seal(p, pgno, 0);
    }
    for rev in 0..2u64 {
        let h = Header {
            page_size: ps as u32,
            revision: rev,
            db_id,
            flushed_txid: 0,
            next_page: FIRST_FREE_PAGE,
            journal_gen: 0,
            journal_offset: 0,
        };
        pages[rev as usize * ps..rev as usize * ps + crate::data::header::HEADER_LEN].copy_from_slice(&h.encode());
    }
    f.write_all_at(&pages, 0).ctx("write new data file")?;
    f.sync_all(SyncSite::DataGrow).ctx("sync new data file")?;
    storage.rename(&tmp, &dir.join(DATA_FILE)).ctx("name data file")?;
    storage.sync_dir(dir, SyncSite::DbDir).ctx("sync database directory")?;
    Ok(())
}

/// The `lock` file's and the data file's locks, held together.
struct Locks {
    _lock_file: Box<dyn LockGuard>,
    _data_file: Box<dyn LockGuard>,
}
impl LockGuard for Locks {}

/// Lock `path` for the database in `dir`, or `Error::Locked` naming `dir` and the holder.
fn take_lock(storage: &dyn Storage, dir: &Path, path: &Path, target: LockTarget) -> Result<Box<dyn LockGuard>> {
    match storage.lock(path, target).ctx("lock database")? {
        LockAttempt::Acquired(g) => Ok(g),
        LockAttempt::Held { pid } => Err(Error::Locked { path: dir.to_path_buf(), pid }),
    }
}

fn open_core(dir: &Path, opts: Options) -> Result<Core> {
    let storage = opts.storage.clone();
    let (lock, journal_dir, data, mut header) = lock_and_open_files(storage.as_ref(), dir, &opts)?;
    let counters = Arc::new(Counters::default());

    // Recovery: replay the log after the header into the data file.
    let (max_gen, recyclable) =
        recover(storage.as_ref(), &journal_dir, &mut header, &data, &counters, opts.journal_files_kept)?;
    let ps = header.page_size as usize;
    let alloc = load_alloc(&data, &header)?;
    let journal = Journal::new(header.db_id, counters.clone(), header.flushed_txid);
    let space = Space::new(
        storage.clone(),
        journal_dir.clone(),
        opts.journal_file_bytes,
        opts.journal_files_kept,
        counters.clone(),
        header.flushed_txid,
        max_gen,
        recyclable,
        opts.flusher == FlusherMode::Background,
    );
    let committed = Committed { txid: header.flushed_txid, next_page: header.next_page };
    Ok(Core {
        page_size: ps,
        db_id: header.db_id,
        dir: dir.to_path_buf(),
        journal_dir,
        data,
        journal: Mutex::new(journal),
        space: Mutex::new(space),
        journal_cv: Condvar::new(),
        table: PageTable::default(),
        committed: Mutex::new(committed),
        prepared: Mutex::new(committed),
        txlog: Mutex::new(VecDeque::new()),
        readers: Mutex::new(Readers::default()),
        writer: crate::sync::WriterLock::default(),
        alloc: Mutex::new(alloc),
        flush_state: Mutex::new(header),
        flusher_ctl: Mutex::new(FlusherCtl::default()),
        flusher_cv: Condvar::new(),
        counters,
        journal_bytes_at_flush: crate::sync::AtomicU64::new(0),
        grow_nudged_at: crate::sync::AtomicU64::new(0),
        tree_ids: crate::sync::AtomicU64::new(1),
        flushed_txid: crate::sync::AtomicU64::new(header.flushed_txid),
        poisoned: Mutex::new(None),
        closed: AtomicBool::new(false),
        close_done: AtomicBool::new(false),
        lock: Mutex::new(Some(lock)),
        opts,
    })
}

/// `open_core`'s first step: create the database and journal directories if missing, take the
/// locks (creating the data file if missing) and open the data file. Returns the locks, the
/// journal directory, the data file and its header (checked against the file's length).
fn lock_and_open_files(
    storage: &dyn Storage,
    dir: &Path,
    opts: &Options,
) -> Result<(Box<dyn LockGuard>, std::path::PathBuf, DataFile, Header)> {
    if let Err(e) = storage.create_dir_all(dir) {
        if e.kind() == std::io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTDIR) {
            return Err(Error::NotADatabase(format!(
                "{} is a file, not a directory; Env::open takes the directory that holds (or will hold) the \
                 database's files",
                dir.display()
            )));
        }
        return Err(Error::io("create database directory", e));
    }
    // The `lock` file first (the data file may not exist yet), then the data file once it does:
    // both held while open, so deleting the `lock` file lets no second Env in.
    let lock = take_lock(storage, dir, &dir.join(LOCK_FILE), LockTarget::LockFile)?;
    let journal_dir = dir.join(journal::DIR);
    storage.create_dir_all(&journal_dir).ctx("create journal directory")?;
    let data_path = dir.join(DATA_FILE);
    if !storage.exists(&data_path) {
        create(storage, dir, opts)?;
    }
    let lock: Box<dyn LockGuard> =
        Box::new(Locks { _lock_file: lock, _data_file: take_lock(storage, dir, &data_path, LockTarget::Existing)? });
    let file = storage.open(&data_path, OpenMode::ReadWrite).ctx("open data file")?;
    let header = DataFile::read_headers(file.as_ref())?;
    let ps = header.page_size as usize;
    let flen = file.len().ctx("data file length")?;
    if flen < header.next_page.saturating_mul(ps as u64) {
        return Err(Error::corrupted(
            None,
            format!("data file is {flen} bytes, shorter than the {} pages its header records", header.next_page),
        ));
    }
    let data = DataFile::open(file, ps)?;
    Ok((lock, journal_dir, data, header))
}

/// `open_core`'s recovery: replay the log after `header` into the data file; if anything was
/// replayed (or the journal generation moves on), sync the data file and write the next header.
/// Every journal file is then retired: up to `kept` are returned for reuse, the rest removed.
/// Returns the largest journal generation found and the reusable files.
fn recover(
    storage: &dyn Storage,
    journal_dir: &Path,
    header: &mut Header,
    data: &DataFile,
    counters: &Counters,
    kept: usize,
) -> Result<(u64, Vec<(u64, std::path::PathBuf)>)> {
    let (end, paths) = recovery::replay(storage, journal_dir, header, data)?;
    let sorted = recovery::sort_files(storage, header, paths, &end)?;
    Counters::add(&counters.stray_journal_files, sorted.set_aside);
    let max_gen = sorted.max_generation;
    let new_gen = max_gen
        .checked_add(1)
        .ok_or_else(|| Error::corrupted(None, "journal generation at the largest value a generation can take"))?;
    if end.records > 0 || new_gen != header.journal_gen + 1 {
        data.sync(SyncSite::DataFlush)?;
        counters.synced(SyncSite::DataFlush);
        *header = Header {
            revision: header.revision + 1,
            flushed_txid: end.last_txid,
            next_page: end.next_page,
            journal_gen: new_gen,
            journal_offset: 0,
            ..*header
        };
        data.write_header(header)?;
        counters.synced(SyncSite::Header);
    }
    // Every journal file is now retired.
    let mut recyclable = Vec::new();
    for (g, p) in sorted.retired {
        if recyclable.len() < kept {
            recyclable.push((g, p));
        } else {
            storage.remove(&p).ctx("remove retired journal")?;
        }
    }
    Ok((max_gen, recyclable))
}

/// Per-section free counts from the bitmap pages.
fn load_alloc(data: &DataFile, header: &Header) -> Result<AllocSummary> {
    let g = Geometry::new(data.page_size);
    let map = data.map();
    let mut free = Vec::new();
    for k in 0..g.sections(header.next_page) {
        let pgno = g.bitmap_page(k);
        let p = map.page(pgno)?;
        if page::page_kind(p) != Some(PageKind::FreeMap) {
            return Err(Error::corrupted(Some(pgno), "free-space bitmap page has another kind"));
        }
        let limit = (header.next_page - k * g.section).min(g.section);
        free.push(count_set_bits(p, limit));
    }
    Ok(AllocSummary { free })
}

/// What a snapshot of `txid` keeps from being retired (`ReaderInfo::pinned_bytes`): the distinct
/// pages changed after it, each counted once however often it was rewritten, plus the journal
/// records written after it.
fn pinned_by(log: &std::collections::VecDeque<crate::txn::core::TxRecord>, txid: u64, page_size: u64) -> u64 {
    let later = log.iter().filter(|t| t.txid > txid);
    let pages: std::collections::HashSet<u64> = later.clone().flat_map(|t| t.pages.iter().copied()).collect();
    pages.len() as u64 * page_size + later.map(|t| t.journal_bytes).sum::<u64>()
}

fn stats(core: &Arc<Core>) -> Stats {
    let c = &core.counters;
    let committed = core.committed();
    let free_pages = core.alloc.lock().total_free();
    let now = core.opts.clock.now();
    let readers: Vec<(u64, std::time::Duration)> = core.readers.lock().slots.iter().flatten().copied().collect();
    let readers = {
        let log = core.txlog.lock();
        readers
            .into_iter()
            .map(|(txid, start)| ReaderInfo {
                txid: TxId::new(txid),
                age: now.saturating_sub(start),
                pinned_bytes: pinned_by(&log, txid, core.page_size as u64),
            })
            .collect::<Vec<_>>()
    };
    let (journal_files, journal_file_bytes, io) = {
        let sp = core.space.lock();
        let (n, b) = sp.files();
        (n, b, sp.io)
    };
    Stats {
        page_size: core.page_size,
        pages_in_use: committed.next_page - free_pages - FIRST_BITMAP_PAGE,
        free_pages,
        next_page: committed.next_page,
        data_file_bytes: core.data.len(),
        slack_bytes: core.data.len().saturating_sub(committed.next_page.saturating_mul(core.page_size as u64)),
        journal_file_bytes,
        journal_files,
        journal_files_created: Counters::get(&c.journal_files_created),
        journal_files_recycled: Counters::get(&c.journal_files_recycled),
        journal_files_prepared: Counters::get(&c.journal_files_prepared),
        stray_journal_files: Counters::get(&c.stray_journal_files),
        journal_io: io.map_or("no journal file opened yet", JournalIo::name),
        last_committed_txid: TxId::new(committed.txid),
        last_flushed_txid: TxId::new(core.flushed_txid.load(Ordering::Relaxed)),
        oldest_reader_txid: readers.iter().map(|r| r.txid).min(),
        readers,
        scratch_bytes: core.table.bytes(),
        commits: Counters::get(&c.commits),
        journal_writes: Counters::get(&c.journal_writes),
        journal_direct_writes: Counters::get(&c.journal_direct_writes),
        journal_bytes_full: Counters::get(&c.journal_bytes_full),
        journal_bytes_raw: Counters::get(&c.journal_bytes_raw),
        journal_bytes_written: Counters::get(&c.journal_bytes_stored),
        flushes: Counters::get(&c.flushes),
        flushed_pages: Counters::get(&c.flushed_pages),
        written_once_pages: Counters::get(&c.written_once_pages),
        spilled_pages: Counters::get(&c.spilled_pages),
        overflow_run_reads: core.data.run_reads.load(Ordering::Relaxed),
        syncs: crate::storage::SyncSite::ALL
            .iter()
            .map(|s| {
                let n = Counters::get(&c.syncs[s.index()]);
                let extra = if *s == SyncSite::DataGrow { core.data.synced_grow.load(Ordering::Relaxed) } else { 0 };
                (s.name(), n + extra)
            })
            .collect(),
        poisoned: core.poisoned.lock().is_some(),
    }
}

fn check<F>(core: &Arc<Core>, reachable: F) -> Result<CheckReport>
where
    F: FnOnce(&ReadTxn, &mut Vec<Problem>) -> Vec<u64>,
{
    // A thread holding the write transaction (or inside `check_with`) would wait for itself.
    if core.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    crate::txn::write::refuse_if_held(core)?;
    // Hold the writer and the flusher still so the allocator summary, snapshot and journal agree.
    let _w = core.writer.lock();
    if core.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    let _mark = crate::txn::write::CheckMark::new(core);
    wait_for_pipelined_commits(core);
    // After a write failure the files may lack what memory holds: not "corrupted", poisoned.
    if let Some(m) = core.poisoned.lock().as_ref() {
        return Err(Error::Poisoned(m.clone()));
    }
    // And the flusher: the header and the journal files must not move while they are read.
    let flush_state = core.flush_state.lock();
    let header = *flush_state;
    let rtx = ReadTxn::begin(core);
    let committed_txid = core.committed().txid;
    let g = Geometry::new(core.page_size);
    use ProblemKind as K;
    let mut problems: Vec<Problem> = Vec::new();
    let mut report = CheckReport::default();
    let next_page = rtx.next_page();

    // 1. Header slots.
    if let Err(e) = DataFile::read_headers(core.data.file.as_ref()) {
        problems.push(Problem::from_error(K::Header, None, None, "header slots: ", &e));
    }
    // 2. Free-space map.
    let free_set = check_free_space_map(core, &rtx, &g, next_page, &mut report, &mut problems);
    // 3. Every page in use: checksum, number, kind.
    check_pages_in_use(&rtx, &free_set, next_page, &mut report, &mut problems);
    // 4. Reachability: what the trees (or the caller) use.
    let pages = reachable(&rtx, &mut problems);
    check_reachability(pages, &free_set, &g, next_page, &mut report, &mut problems);
    // 5. The journal chain after the header, and the journal files against the header and the
    //    writer.
    check_journal_chain(core, &header, committed_txid, &mut report, &mut problems);
    drop(flush_state);
    report.problems = problems;
    Ok(report)
}

/// `check`'s wait for pipelined commits in flight to become visible (or for the journal to
/// fail, or the environment to be poisoned).
fn wait_for_pipelined_commits(core: &Core) {
    let mut j = core.journal.lock();
    let prepared = core.prepared.lock().txid;
    core.journal_cv
        .wait_while(&mut j, |j| core.committed().txid < prepared && !j.failed() && core.poisoned.lock().is_none());
}

/// `check`'s step 2: every free-space bitmap page against the allocator's summary, and no
/// fixed page marked free. Returns the set of pages the bitmaps mark free.
fn check_free_space_map(
    core: &Core,
    rtx: &ReadTxn,
    g: &Geometry,
    next_page: u64,
    report: &mut CheckReport,
    problems: &mut Vec<Problem>,
) -> HashSet<u64> {
    use ProblemKind as K;
    let summary = core.alloc.lock().clone();
    if summary.free.len() as u64 != g.sections(next_page) {
        problems.push(Problem::new(
            K::FreeSpaceMap,
            None,
            None,
            format!("allocator has {} sections, the database needs {}", summary.free.len(), g.sections(next_page)),
        ));
    }
    let mut free_set: HashSet<u64> = HashSet::new();
    for k in 0..g.sections(next_page) {
        report.bitmap_pages += 1;
        check_bitmap_section(rtx, g, &summary, k, next_page, &mut free_set, problems);
    }
    for fixed in [FIRST_BITMAP_PAGE, META_PAGE].into_iter().chain((1..g.sections(next_page)).map(|k| g.bitmap_page(k)))
    {
        if free_set.contains(&fixed) {
            problems.push(Problem::new(
                K::FreeSpaceMap,
                Some(fixed),
                None,
                format!("page {fixed} (a fixed page) is marked free"),
            ));
        }
    }
    report.free_pages = free_set.len() as u64;
    free_set
}

/// One section's bitmap page: its kind, its free count against the allocator's, nothing free
/// past the high-water mark; adds the pages it marks free to `free_set`.
fn check_bitmap_section(
    rtx: &ReadTxn,
    g: &Geometry,
    summary: &AllocSummary,
    k: u64,
    next_page: u64,
    free_set: &mut HashSet<u64>,
    problems: &mut Vec<Problem>,
) {
    use ProblemKind as K;
    let bp = g.bitmap_page(k);
    let p = match rtx.page(bp) {
        Ok(p) => p,
        Err(e) => {
            problems.push(Problem::from_error(K::FreeSpaceMap, Some(bp), None, &format!("bitmap page {bp}: "), &e));
            return;
        }
    };
    if page::page_kind(&p) != Some(PageKind::FreeMap) {
        problems.push(Problem::new(
            K::FreeSpaceMap,
            Some(bp),
            None,
            format!("page {bp}: expected a free-space bitmap page"),
        ));
        return;
    }
    let limit = (next_page - k * g.section).min(g.section);
    let n = count_set_bits(&p, limit);
    if summary.free.get(k as usize) != Some(&n) {
        let counted = summary.free.get(k as usize).map_or_else(|| "no such section".to_string(), u64::to_string);
        problems.push(Problem::new(
            K::FreeSpaceMap,
            Some(bp),
            None,
            format!("section {k}: bitmap has {n} free pages, the allocator counts {counted}"),
        ));
    }
    if any_set_from(&p, limit) {
        problems.push(Problem::new(
            K::FreeSpaceMap,
            Some(bp),
            None,
            format!("section {k}: pages past the high-water mark {next_page} are marked free"),
        ));
    }
    for i in 0..limit {
        let (byte, mask) = g.bit(k * g.section + i);
        if p[byte] & mask != 0 {
            free_set.insert(k * g.section + i);
        }
    }
}

/// `check`'s step 3: every page not marked free verifies (checksum, number) and page 3 is
/// the meta page.
fn check_pages_in_use(
    rtx: &ReadTxn,
    free_set: &HashSet<u64>,
    next_page: u64,
    report: &mut CheckReport,
    problems: &mut Vec<Problem>,
) {
    use ProblemKind as K;
    for pgno in FIRST_BITMAP_PAGE..next_page {
        if free_set.contains(&pgno) {
            continue;
        }
        report.pages_in_use += 1;
        report.pages_checked += 1;
        match rtx.page(pgno) {
            Ok(p) => {
                if let Err(e) = page::verify(&p, pgno) {
                    problems.push(Problem::from_error(K::PageChecksum, Some(pgno), None, "", &e));
                } else if pgno == META_PAGE && page::page_kind(&p) != Some(PageKind::Meta) {
                    problems.push(Problem::new(K::PageChecksum, Some(pgno), None, "page 3 is not the meta page"));
                }
            }
            Err(e) => problems.push(Problem::from_error(K::PageChecksum, Some(pgno), None, "", &e)),
        }
    }
}

/// `check`'s step 4: each reachable page is reached once, is allocatable and not marked free;
/// every allocatable page neither free nor reachable is reported leaked.
fn check_reachability(
    pages: Vec<u64>,
    free_set: &HashSet<u64>,
    g: &Geometry,
    next_page: u64,
    report: &mut CheckReport,
    problems: &mut Vec<Problem>,
) {
    use ProblemKind as K;
    report.reachable_pages = pages.len() as u64;
    let mut seen = HashSet::new();
    for p in pages {
        if !seen.insert(p) {
            problems.push(Problem::new(K::Reachability, Some(p), None, format!("page {p} is reachable twice")));
        } else if p < FIRST_FREE_PAGE || p >= next_page || g.is_bitmap_page(p) {
            problems.push(Problem::new(
                K::Reachability,
                Some(p),
                None,
                format!("reachable page {p} is not an allocatable page"),
            ));
        } else if free_set.contains(&p) {
            problems.push(Problem::new(K::Reachability, Some(p), None, format!("reachable page {p} is marked free")));
        }
    }
    for p in FIRST_FREE_PAGE..next_page {
        if !g.is_bitmap_page(p) && !free_set.contains(&p) && !seen.contains(&p) {
            problems.push(Problem::new(
                K::Reachability,
                Some(p),
                None,
                format!("page {p} is in use but not reachable (leaked)"),
            ));
        }
    }
}

/// `check`'s step 5: every journal file's generation is one the writer has reached (a file
/// ahead of it would be taken for part of the log), the header's too, and the chain ends
/// between the last durable and the last committed transaction.
fn check_journal_chain(
    core: &Core,
    header: &Header,
    committed_txid: u64,
    report: &mut CheckReport,
    problems: &mut Vec<Problem>,
) {
    use ProblemKind as K;
    let (durable, next_gen) = {
        let durable = core.journal.lock().durable_txid();
        (durable, core.space.lock().next_generation())
    };
    let storage = core.opts.storage.as_ref();
    let paths = match recovery::list(storage, &core.journal_dir, false) {
        Ok(paths) => paths,
        Err(e) => {
            problems.push(Problem::from_error(K::Journal, None, None, "journal: ", &e));
            return;
        }
    };
    if header.journal_gen > next_gen {
        problems.push(journal_problem(format!(
            "header names journal generation {} but the writer is at generation {next_gen}",
            header.journal_gen
        )));
    }
    for g in paths.keys().filter(|g| **g >= next_gen) {
        problems.push(journal_problem(format!(
            "journal file {} has generation {g}, which the writer (next generation {next_gen}) never wrote",
            journal::file_name(*g)
        )));
    }
    match recovery::scan(storage, &paths, header, |_, _| Ok(())) {
        Ok(end) => {
            report.journal_records = end.records;
            if end.last_txid < durable {
                problems.push(journal_problem(format!(
                    "journal chain ends at transaction {} but transactions up to {durable} are durable",
                    end.last_txid
                )));
            }
            if end.last_txid > committed_txid {
                problems.push(journal_problem(format!(
                    "journal chain reaches transaction {} past the last committed one, {committed_txid}",
                    end.last_txid
                )));
            }
        }
        Err(e) => problems.push(Problem::from_error(K::Journal, None, None, "journal: ", &e)),
    }
}

/// A problem of the journal as a whole (no page, no tree).
fn journal_problem(detail: String) -> Problem {
    Problem::new(ProblemKind::Journal, None, None, detail)
}
