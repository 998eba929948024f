//! `Env`: opening (creation and recovery), transactions, flushing, closing, stats and `check()`.

use crate::api::{ReadTxn, WriteTxn};
use crate::batch::{BatchHandle, MergerThreads, WriteBatch};
use crate::data::file::{initial_len, FIRST_BITMAP_PAGE, FIRST_FREE_PAGE, META_PAGE};
use crate::data::page::{self, PageKind};
use crate::data::{DataFile, Header};
use crate::error::IoContext;
use crate::ids::{PageNo, TxId};
use crate::journal::{self, recovery, Journal, Space};
use crate::options::{FlusherMode, Options};
use crate::stats::{CheckReport, Counters, Problem, ProblemKind, Stats};
use crate::storage::{FsStorage, LockAttempt, LockGuard, LockTarget, OpenMode, Storage, SyncSite};
use crate::sync::thread::JoinHandle;
use crate::sync::Mutex;
use crate::txn::alloc::{count_set_bits, AllocSummary, Geometry};
use crate::txn::core::{Committed, Core, Opened};
use crate::txn::{flusher, page_table::PageTable};
use crate::{Error, Result};
use std::path::Path;
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
    /// `write_batch` on the callers' threads (direct, or in groups).
    group: crate::batch::Group,
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
        crate::txn::close::close(&self.core, &self.flusher)
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Env({})", self.handle.core.dir().display())
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
        let flusher = if core.opts().flusher == FlusherMode::Background && !core.opts().read_only {
            let c = core.clone();
            let h = crate::sync::thread::Builder::new()
                .name("jackdaw-flusher".into())
                .spawn(move || flusher::run(c))
                .ctx("start flusher thread")?;
            Some(h)
        } else {
            None
        };
        Ok(Env {
            handle: Arc::new(Handle {
                core,
                flusher: Mutex::new(flusher),
                merger: Mutex::new(None),
                group: crate::batch::Group::default(),
            }),
        })
    }

    /// Remove the database in directory `path`: its data file, its journal directory and its
    /// `lock` file, and nothing else (other files in `path`, and `path` itself, stay). For a
    /// program that created a database and must take it back (its first write failed), or for
    /// tests. `Ok` when there is no database there; `Error::Locked` while an `Env` of this or
    /// another process has it open (nothing is removed then).
    ///
    /// The data file goes first: once it is gone there is no database, and journal files a
    /// failed removal leaves behind are ignored by the next `open` (they belong to no data file).
    pub fn destroy(path: impl AsRef<Path>) -> Result<()> {
        destroy_in(&FsStorage, path.as_ref())
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
        if self.core().is_closed() {
            return Err(Error::Closed);
        }
        // Inside `check_with`'s callback this thread holds the flush lock (a `WriteTxn` does not).
        if crate::txn::write::checking_on_this_thread(self.core()) {
            return Err(Error::Busy(crate::txn::write::CHECKING_ON_THIS_THREAD));
        }
        if self.core().opts().read_only {
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
    /// done), and the last of those transactions releases them when it ends. A write transaction
    /// open on another thread is waited for (its commit or its drop): the files cannot be closed
    /// under it.
    pub fn close(&self) -> Result<()> {
        self.handle.close()
    }

    /// Commit a batch and wait until it is committed with the environment's durability. A
    /// thread holding a `WriteTxn` gets `Error::Busy` (it would wait for itself). When the
    /// durability is not `Sync` and the merger has nothing queued or in flight, the batch is
    /// committed on the calling thread (same rules, no hand-over between threads): at once when
    /// the writer lock is free, else in a group with the other callers that found it taken (one
    /// of them commits the batches queued by the time it gets the writer in one transaction).
    /// `Sync` batches go through the merger, which shares one sync among the batches of
    /// concurrent callers.
    pub fn write_batch(&self, batch: WriteBatch) -> Result<()> {
        let core = self.core();
        if core.opts().durability != crate::Durability::Sync
            && !core.is_closed()
            && !core.opts().read_only
            && crate::txn::write::refuse_if_held(core).is_ok()
            && self.handle.merger.lock().as_ref().is_none_or(|m| m.idle())
        {
            return self.handle.group.commit(core, batch);
        }
        self.write_batch_async(batch).wait()
    }

    internals_pub! {
        /// `write_batch` callers waiting in a group for a leader to take their batch (tests).
        fn queued_batches(&self) -> usize {
            self.handle.group.queued()
        }
    }

    /// Submit a batch; `wait()` on the handle blocks until it is committed.
    pub fn write_batch_async(&self, batch: WriteBatch) -> BatchHandle {
        let refuse = |e: Error| {
            let (tx, rx) = crate::sync::mpsc::sync_channel(1);
            let _ = tx.send(Err(e));
            BatchHandle::ready(rx)
        };
        let core = self.core();
        if core.is_closed() {
            return refuse(Error::Closed);
        }
        if let Err(e) = crate::txn::write::refuse_if_held(core) {
            return refuse(e);
        }
        if core.opts().read_only {
            return refuse(Error::ReadOnly(core.dir().to_path_buf()));
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
        self.core().dir()
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
        self.core().sync_committed().map(TxId::new)
    }

    /// A picture of the environment.
    pub fn stats(&self) -> Stats {
        crate::txn::stats::stats(self.core())
    }

    /// Verify the whole database: header slots, every page in use (checksum, number, kind), the
    /// free-space map, every tree (order, fences, kinds, counts, overflow chains), reachability
    /// (no page reachable twice; reachable and free pages together are all pages) and the journal
    /// chain. `Ok(report)` whenever the check ran, with every problem found in `report.problems`
    /// (empty when sound; [`CheckReport::into_result`] turns problems into `Err(Corrupted)`).
    /// `Err` only when the check could not run: I/O error, closed, poisoned, or `Busy` (this
    /// thread holds the write transaction).
    pub fn check(&self) -> Result<CheckReport> {
        crate::txn::check::check(self.core(), |snap, problems: &mut Vec<Problem>| {
            crate::api::catalog::reachable(&**snap, problems)
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
            crate::txn::check::check(self.core(), |snap, problems: &mut Vec<Problem>| match reachable(&ReadTxn::from_snapshot(snap.clone())) {
                Ok(v) => (v, 0),
                Err(e) => {
                    problems.push(Problem::from_error(ProblemKind::Reachability, None, None, "walking reachable pages: ", &e));
                    (Vec::new(), 0)
                }
            })
        }
    }
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
        page::seal(p, crate::PageNo::new(pgno), crate::TxId::new(0));
    }
    for rev in 0..2u64 {
        let h = Header {
            version: crate::data::header::FORMAT_VERSION,
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
    let committed = Committed { txid: TxId::new(header.flushed_txid), next_page: PageNo::new(header.next_page) };
    // The pool of page buffers keeps at most the flush threshold's worth of pages: what the
    // commits between two flushes of small transactions copy, bounded by what a flush retires.
    let pool_max = usize::try_from(opts.flush_threshold_bytes / u64::from(header.page_size)).unwrap_or(usize::MAX);
    Ok(Core::new(Opened {
        opts,
        dir: dir.to_path_buf(),
        journal_dir,
        data,
        header,
        journal,
        space,
        table: PageTable::new(header.page_size as usize, pool_max),
        committed,
        alloc,
        counters,
        lock,
    }))
}

/// `Env::destroy` on `storage`: both locks taken as an open takes them (so an open `Env`
/// refuses it), the files removed while they are held, the `lock` file last.
fn destroy_in(storage: &dyn Storage, dir: &Path) -> Result<()> {
    let (lock_path, data_path, journal_dir) = (dir.join(LOCK_FILE), dir.join(DATA_FILE), dir.join(journal::DIR));
    if ![&lock_path, &data_path, &journal_dir].iter().any(|p| storage.exists(p)) {
        return Ok(());
    }
    // Locked as they are, without writing the holder's pid (an open writes it): on a full disk
    // the write fails, and the open it failed is what left the files to remove.
    let lock = match storage.exists(&lock_path) {
        true => Some(take_lock(storage, dir, &lock_path, LockTarget::Existing)?),
        false => None,
    };
    if storage.exists(&data_path) {
        let data_lock = take_lock(storage, dir, &data_path, LockTarget::Existing)?;
        storage.remove(&data_path).ctx("remove data file")?;
        drop(data_lock);
    }
    if storage.exists(&journal_dir) {
        for name in storage.list_dir(&journal_dir).ctx("list journal directory")? {
            storage.remove(&journal_dir.join(name)).ctx("remove journal file")?;
        }
        storage.remove_dir(&journal_dir).ctx("remove journal directory")?;
    }
    storage.remove(&lock_path).ctx("remove lock file")?;
    drop(lock);
    storage.sync_dir(dir, SyncSite::DbDir).ctx("sync database directory")
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
    let (header, _) = DataFile::read_header_checked(file.as_ref())?;
    let ps = header.page_size as usize;
    let data = DataFile::open(file, ps)?;
    Ok((lock, journal_dir, data, header))
}

/// `open_core`'s recovery: replay the log after `header` into the data file; if anything was
/// replayed (or the journal generation moves on, or the header is of an older format version),
/// sync the data file and write the next header.
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
    // An older version's header is rewritten now, before any record or page of this build's
    // format is written (`data::header::OLDEST_READ_VERSION`).
    let upgrade = header.version != crate::data::header::FORMAT_VERSION;
    if end.records > 0 || new_gen != header.journal_gen + 1 || upgrade {
        data.sync(SyncSite::DataFlush)?;
        counters.synced(SyncSite::DataFlush);
        *header = Header {
            version: crate::data::header::FORMAT_VERSION,
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
    Ok((max_gen, sorted.keep_retired(storage, kept)?))
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
