//! Appending records: file rotation, preallocation, recycling, and the three durability modes.
//!
//! Invariants:
//! 1. Records are written in transaction order; `durable_txid` only grows, and every record up to
//!    it is on the device (a `Sync` commit first makes earlier `Buffered`/`None` records durable,
//!    so there are no holes).
//! 2. A journal file is fully written (zeros when new; a recycled file keeps its old bytes, whose
//!    records carry another generation and never verify), synced, named and its directory synced
//!    before any record in it is acknowledged, so an `O_DSYNC` write never commits metadata too.
//! 3. Within one file, records are back to back from offset 0; a record that does not fit starts
//!    the next generation at offset 0.
//! 4. `dirty` holds every file with a buffered write that no finished sync covered, with the
//!    number of its last write; `make_durable` syncs outside the journal lock and then clears an
//!    entry only if its number did not change, and raises `durable_txid` only to the txid written
//!    when it took its snapshot. Journal syncs never run two at once (`SyncGate`).

use super::record::{self, AlignedBuf, Compressed};
use super::{path, JournalPos};
use crate::error::IoContext;
use crate::options::Durability;
use crate::stats::Counters;
use crate::storage::{JournalIo, OpenMode, Storage, StorageFile, SyncSite};
use crate::sync::{thread, AtomicBool, Mutex};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

struct JFile {
    generation: u64,
    direct: Arc<dyn StorageFile>,
    buffered: Arc<dyn StorageFile>,
    len: u64,
    /// End of the last record placed in this file.
    end: u64,
    /// Last transaction with a record in this file.
    last_txid: u64,
}

/// A record placed but not yet handed to the OS (`Durability::None`).
struct Pending {
    file: Arc<dyn StorageFile>,
    offset: u64,
    bytes: Vec<u8>,
    txid: u64,
}

/// Where a record went and what it cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Appended {
    pub end: JournalPos,
    pub written_len: u64,
}

pub(crate) struct Journal {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    db_id: u64,
    file_bytes: u64,
    /// Size of the next new file: starts small (a short-lived or small database never pays for
    /// zero-filling a large file) and doubles with each new file up to `file_bytes`.
    next_file_bytes: u64,
    files_kept: usize,
    counters: Arc<Counters>,
    pub(crate) io: Option<JournalIo>,
    cur: Option<JFile>,
    /// Full files whose records are not all flushed, oldest first.
    live: VecDeque<JFile>,
    /// Retired files available for reuse (paths).
    recyclable: Vec<(u64, PathBuf)>,
    next_generation: u64,
    pending: Vec<Pending>,
    /// Files with buffered writes not yet covered by a finished sync, each with the number of its
    /// last write (`writes`), so that a sync done outside the lock clears only what it covered.
    dirty: Vec<(Arc<dyn StorageFile>, u64)>,
    /// Buffered writes so far (numbers the entries of `dirty`).
    writes: u64,
    sync_gate: Arc<SyncGate>,
    last_txid: u64,
    written_txid: u64,
    durable_txid: u64,
    buf: AlignedBuf,
    /// Set after a failed write or sync: the journal's state on disk is unknown.
    failed: bool,
    /// Whether new files are prepared on a thread of their own (`FlusherMode::Background`; a
    /// `Manual` environment starts no thread, so that its tests stay deterministic).
    prepare_ahead: bool,
    spare: Option<Spare>,
}

/// Journal syncs, one at a time: `make_durable` syncs outside the journal lock while a `Sync`
/// commit may sync under it. Serialising them keeps the one-shot nature of a sync error: after a
/// failed `fdatasync` the kernel may have dropped the dirty pages and a second `fdatasync` of the
/// same file could succeed, so a sync that failed fails every later one (the environment is
/// poisoned by then; never retry a sync).
#[derive(Default)]
struct SyncGate {
    lock: Mutex<()>,
    failed: AtomicBool,
}

impl SyncGate {
    fn sync(&self, files: &[(Arc<dyn StorageFile>, u64)], counters: &Counters) -> Result<()> {
        let _one_at_a_time = self.lock.lock();
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::Poisoned("an earlier journal sync failed".into()));
        }
        for (f, _) in files {
            if let Err(e) = f.sync_data(SyncSite::JournalData) {
                self.failed.store(true, Ordering::Release);
                return Err(e).ctx("journal fdatasync");
            }
            counters.synced(SyncSite::JournalData);
        }
        Ok(())
    }
}

/// Name of the spare file while it is written: a `*.jnl.tmp` name, which never holds a record and
/// which opening the database removes (recovery's `list`).
const SPARE_NAME: &str = "spare.jnl.tmp";

/// The next new journal file, written (zeros) and synced on a thread of its own while the current
/// file fills, so that the commit that needs a new file renames it instead of zero-filling up to
/// `journal_file_bytes` itself. Measured (`examples/rndtx 10000 buff`): creating a 16 MiB file in
/// the commit took ~60 ms, ~0.35 s of a 4.2 s run in all. Invariant 2 holds unchanged: the file is
/// complete and synced before the rotation names it and syncs the directory. A job that failed
/// is forgotten: the rotation creates the file itself and reports the error if it recurs.
struct Spare {
    path: PathBuf,
    len: u64,
    stop: Arc<AtomicBool>,
    job: thread::JoinHandle<Result<()>>,
}

impl Spare {
    /// Start preparing a file of `len` bytes at `path`; `None` if no thread can be started.
    fn start(storage: &Arc<dyn Storage>, counters: &Arc<Counters>, path: PathBuf, len: u64) -> Option<Spare> {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, c, p, st) = (storage.clone(), counters.clone(), path.clone(), stop.clone());
        let job = thread::Builder::new()
            .name("jackdaw-journal-spare".into())
            .spawn(move || write_zeroed(&*s, &c, &p, len, Some(&st)))
            .ok()?;
        Some(Spare { path, len, stop, job })
    }

    /// Wait for the job: the file's path and length when it is complete and synced; otherwise the
    /// file is removed (best effort: opening the database removes it too) and `None`.
    fn wait(self, storage: &dyn Storage) -> Option<(PathBuf, u64)> {
        if matches!(self.job.join(), Ok(Ok(()))) && !self.stop.load(Ordering::Relaxed) {
            return Some((self.path, self.len));
        }
        let _ = storage.remove(&self.path);
        None
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.discard_spare();
    }
}

/// Write `len` zero bytes to a new file at `tmp` and sync it: the body of a new journal file, not
/// yet named. `stop` ends the job early (with an error) when the journal is dropped.
fn write_zeroed(
    storage: &dyn Storage,
    counters: &Counters,
    tmp: &Path,
    len: u64,
    stop: Option<&AtomicBool>,
) -> Result<()> {
    let f = storage.open(tmp, OpenMode::CreateReadWrite).ctx("create journal file")?;
    f.set_len(0).ctx("truncate new journal file")?;
    let zeros = vec![0u8; 1 << 20];
    let mut off = 0u64;
    while off < len {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(Error::Closed);
        }
        let n = (len - off).min(zeros.len() as u64) as usize;
        f.write_all_at(&zeros[..n], off).ctx("preallocate journal file")?;
        off += n as u64;
    }
    f.sync_all(SyncSite::JournalPrealloc).ctx("sync new journal file")?;
    counters.synced(SyncSite::JournalPrealloc);
    Ok(())
}

impl Journal {
    /// A journal whose next record is transaction `last_txid + 1`. `recyclable` are retired files
    /// found at open; new generations start above `min_generation`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        db_id: u64,
        file_bytes: u64,
        files_kept: usize,
        counters: Arc<Counters>,
        last_txid: u64,
        min_generation: u64,
        recyclable: Vec<(u64, PathBuf)>,
        prepare_ahead: bool,
    ) -> Journal {
        Journal {
            storage,
            dir,
            db_id,
            file_bytes: file_bytes.max(64 << 10).div_ceil(record::BLOCK as u64) * record::BLOCK as u64,
            next_file_bytes: file_bytes.clamp(64 << 10, 1 << 20).div_ceil(record::BLOCK as u64) * record::BLOCK as u64,
            files_kept,
            counters,
            io: None,
            cur: None,
            live: VecDeque::new(),
            recyclable,
            next_generation: min_generation + 1,
            pending: Vec::new(),
            dirty: Vec::new(),
            writes: 0,
            sync_gate: Arc::default(),
            last_txid,
            written_txid: last_txid,
            durable_txid: last_txid,
            buf: AlignedBuf::default(),
            failed: false,
            prepare_ahead,
            spare: None,
        }
    }

    pub(crate) fn last_txid(&self) -> u64 {
        self.last_txid
    }

    pub(crate) fn durable_txid(&self) -> u64 {
        self.durable_txid
    }

    /// The generation the next new journal file gets: above every file this journal wrote.
    pub(crate) fn next_generation(&self) -> u64 {
        self.next_generation
    }

    pub(crate) fn files(&self) -> (usize, u64) {
        let all = self.live.iter().chain(self.cur.iter());
        let (n, b) = all.fold((0, 0), |(n, b), f| (n + 1, b + f.len));
        (n + self.recyclable.len(), b)
    }

    /// Append transaction `txid`'s record. On error the journal must not be used again (the
    /// caller poisons the environment).
    pub(crate) fn append(
        &mut self,
        txid: u64,
        next_page: u64,
        payload: &Compressed,
        durability: Durability,
    ) -> Result<Appended> {
        let r = self.append_inner(txid, next_page, payload, durability);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn append_inner(
        &mut self,
        txid: u64,
        next_page: u64,
        payload: &Compressed,
        durability: Durability,
    ) -> Result<Appended> {
        // Encode once with the current generation; re-encode if rotation changes it.
        let mut generation = self.cur.as_ref().map(|f| f.generation).unwrap_or(0);
        let mut h = record::frame(&mut self.buf, txid, generation, self.db_id, next_page, self.durable_txid, payload);
        let len = h.record_len();
        let fits = self.cur.as_ref().is_some_and(|f| f.end + len <= f.len);
        if !fits {
            self.rotate(len)?;
            generation = self.cur.as_ref().map(|f| f.generation).unwrap_or(0);
            h = record::frame(&mut self.buf, txid, generation, self.db_id, next_page, self.durable_txid, payload);
        }
        let cur = self.cur.as_mut().expect("rotate sets cur");
        let offset = cur.end;
        cur.end += len;
        cur.last_txid = txid;
        self.last_txid = txid;
        let end = JournalPos { generation: cur.generation, offset: cur.end };
        let (direct, buffered) = (cur.direct.clone(), cur.buffered.clone());
        Counters::add(&self.counters.journal_bytes_raw, h.raw_len as u64);
        Counters::add(&self.counters.journal_bytes_stored, len);
        Counters::add(&self.counters.journal_bytes_full, payload.full_bytes);
        match durability {
            Durability::None => {
                self.pending.push(Pending { file: buffered, offset, bytes: self.buf.as_slice().to_vec(), txid });
            }
            Durability::Buffered => {
                self.write_pending()?;
                self.write_buffered(&buffered, offset, txid)?;
            }
            Durability::Sync => {
                if self.pending.is_empty() && self.dirty.is_empty() && self.io == Some(JournalIo::DirectSync) {
                    direct
                        .write_vectored_at(&[IoSlice::new(self.buf.as_slice())], offset)
                        .ctx("journal write (O_DIRECT|O_DSYNC)")?;
                    Counters::add(&self.counters.journal_writes, 1);
                    Counters::add(&self.counters.journal_direct_writes, 1);
                    self.written_txid = txid;
                    self.durable_txid = txid;
                } else {
                    self.write_pending()?;
                    self.write_buffered(&buffered, offset, txid)?;
                    self.sync_dirty()?;
                }
            }
        }
        Ok(Appended { end, written_len: len })
    }

    fn write_buffered(&mut self, f: &Arc<dyn StorageFile>, offset: u64, txid: u64) -> Result<()> {
        f.write_vectored_at(&[IoSlice::new(self.buf.as_slice())], offset).ctx("journal write")?;
        Counters::add(&self.counters.journal_writes, 1);
        self.written_txid = txid;
        self.mark_dirty(f);
        Ok(())
    }

    /// Remember that `f` has buffered writes the next sync must cover.
    fn mark_dirty(&mut self, f: &Arc<dyn StorageFile>) {
        self.writes += 1;
        match self.dirty.iter_mut().find(|(d, _)| Arc::ptr_eq(d, f)) {
            Some(d) => d.1 = self.writes,
            None => self.dirty.push((f.clone(), self.writes)),
        }
    }

    fn write_pending(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        // Adjacent records in one file go in one vectored write.
        let mut i = 0;
        while i < pending.len() {
            let mut j = i + 1;
            let mut end = pending[i].offset + pending[i].bytes.len() as u64;
            while j < pending.len() && Arc::ptr_eq(&pending[j].file, &pending[i].file) && pending[j].offset == end {
                end += pending[j].bytes.len() as u64;
                j += 1;
            }
            let slices: Vec<IoSlice<'_>> = pending[i..j].iter().map(|p| IoSlice::new(&p.bytes)).collect();
            pending[i].file.write_vectored_at(&slices, pending[i].offset).ctx("journal write (deferred records)")?;
            Counters::add(&self.counters.journal_writes, 1);
            self.written_txid = pending[j - 1].txid;
            self.mark_dirty(&pending[i].file);
            i = j;
        }
        Ok(())
    }

    /// Sync every dirty file, under the journal lock (a `Sync` commit after buffered records).
    fn sync_dirty(&mut self) -> Result<()> {
        let files = std::mem::take(&mut self.dirty);
        self.sync_gate.sync(&files, &self.counters)?;
        self.durable_txid = self.written_txid;
        Ok(())
    }

    /// Make every record up to `txid` durable (the flusher's write-ahead rule; `close`; an empty
    /// `Sync` commit). The records are handed to the OS under the journal lock, but the files are
    /// synced outside it, so commits go on while the flusher waits for the device (a buffered
    /// stream of commits leaves up to a flush threshold of journal bytes to write: the lock used
    /// to be held 22-27 ms per flush in `examples/rndtx 10000 buff`, stalling every commit).
    pub(crate) fn make_durable(journal: &Mutex<Journal>, txid: u64) -> Result<()> {
        let (files, written, gate, counters) = {
            let mut j = journal.lock();
            // After a failed write or sync, what reached the disk is unknown (records written
            // after the failure are missing, a deferred record may have been dropped from
            // `pending`): nothing is promised any more, whatever `durable_txid` says.
            if j.failed {
                return Err(Error::Poisoned("an earlier journal write or sync failed".into()));
            }
            if j.durable_txid >= txid {
                return Ok(());
            }
            if let Err(e) = j.write_pending() {
                j.failed = true;
                return Err(e);
            }
            (j.dirty.clone(), j.written_txid, j.sync_gate.clone(), j.counters.clone())
        };
        let r = gate.sync(&files, &counters);
        let mut j = journal.lock();
        if r.is_err() {
            j.failed = true;
            return r;
        }
        // Files written again since the snapshot stay dirty; so do files added since.
        j.dirty.retain(|(f, n)| !files.iter().any(|(g, m)| Arc::ptr_eq(f, g) && n == m));
        j.durable_txid = j.durable_txid.max(written);
        Ok(())
    }

    /// Stop the spare's thread (between two of its writes) and remove its file: at close, so
    /// that nothing writes into the directory afterwards.
    pub(crate) fn discard_spare(&mut self) {
        if let Some(s) = self.spare.take() {
            s.stop.store(true, Ordering::Relaxed);
            s.wait(&*self.storage);
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Move to a new file that can hold a record of `need` bytes: a retired file, else the spare
    /// prepared in the background when it is big enough, else a file created here.
    fn rotate(&mut self, need: u64) -> Result<()> {
        let size = self.next_file_bytes.max(need);
        let generation = self.next_generation;
        self.next_generation = generation
            .checked_add(1)
            .ok_or_else(|| Error::Invalid("the journal has used every generation a file name can carry".into()))?;
        let target = path(&self.dir, generation);
        // Prefer a retired file of sufficient size.
        let mut reused = false;
        while let Some((_, p)) = self.recyclable.pop() {
            let f = self.storage.open(&p, OpenMode::ReadWrite).ctx("open retired journal")?;
            let len = f.len().ctx("journal length")?;
            if len >= need && len % record::BLOCK as u64 == 0 {
                self.storage.rename(&p, &target).ctx("recycle journal file")?;
                Counters::add(&self.counters.journal_files_recycled, 1);
                reused = true;
                break;
            }
            self.storage.remove(&p).ctx("remove small journal file")?;
        }
        if !reused {
            let spare = self.spare.take().and_then(|s| s.wait(&*self.storage));
            let body = match spare {
                Some((p, len)) if len >= need => {
                    Counters::add(&self.counters.journal_files_prepared, 1);
                    p
                }
                other => {
                    if let Some((p, _)) = other {
                        // Too small for this record; best effort (the next open removes it too).
                        let _ = self.storage.remove(&p);
                    }
                    let tmp = self.dir.join(format!("{}.tmp", super::file_name(generation)));
                    write_zeroed(&*self.storage, &self.counters, &tmp, size, None)?;
                    tmp
                }
            };
            self.storage.rename(&body, &target).ctx("name journal file")?;
            Counters::add(&self.counters.journal_files_created, 1);
            self.next_file_bytes = (self.next_file_bytes * 2).min(self.file_bytes);
        }
        self.storage.sync_dir(&self.dir, SyncSite::JournalDir).ctx("sync journal directory")?;
        self.counters.synced(SyncSite::JournalDir);
        let h = self.storage.open_journal(&target).ctx("open journal file")?;
        self.io = Some(h.io);
        let len = h.buffered.len().ctx("journal length")?;
        let next = JFile { generation, direct: h.direct, buffered: h.buffered, len, end: 0, last_txid: self.last_txid };
        if let Some(old) = self.cur.replace(next) {
            self.live.push_back(old);
        }
        if self.prepare_ahead && self.recyclable.is_empty() && self.spare.is_none() {
            self.spare = Spare::start(&self.storage, &self.counters, self.dir.join(SPARE_NAME), self.next_file_bytes);
        }
        Ok(())
    }

    /// Retire the full files whose records are all `<= flushed_txid` (the header says so durably).
    /// Up to `files_kept` are kept for recycling; the paths of the others are returned, for the
    /// caller to delete once it has released the journal lock (unlinking a 16 MiB file took up to
    /// 8 ms, and every commit waits for this lock). A crash before they are deleted leaves retired
    /// files, which the next open recognises (their records are all flushed) and recycles or
    /// deletes; so the deletion needs no sync.
    #[must_use = "the returned files must be deleted"]
    pub(crate) fn retire(&mut self, flushed_txid: u64) -> Vec<PathBuf> {
        let mut doomed = Vec::new();
        while self.live.front().is_some_and(|f| f.last_txid <= flushed_txid) {
            let Some(f) = self.live.pop_front() else { break };
            let p = path(&self.dir, f.generation);
            drop(f);
            if self.recyclable.len() < self.files_kept {
                self.recyclable.push((0, p));
            } else {
                doomed.push(p);
            }
        }
        doomed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Mapping, MemStorage};
    use std::io;
    use std::sync::atomic::AtomicU64;

    /// A `MemStorage` file whose `sync_data` first runs `hook` (which may fail it).
    struct Hooked {
        inner: Arc<dyn StorageFile>,
        hook: Box<dyn Fn() -> io::Result<()> + Send + Sync>,
    }

    impl Hooked {
        fn new(path: &str, hook: impl Fn() -> io::Result<()> + Send + Sync + 'static) -> Arc<Hooked> {
            let inner = MemStorage::new().open(Path::new(path), OpenMode::CreateReadWrite).unwrap();
            Arc::new(Hooked { inner, hook: Box::new(hook) })
        }
    }

    impl StorageFile for Hooked {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.inner.read_exact_at(buf, offset)
        }
        fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.inner.write_all_at(buf, offset)
        }
        fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
            self.inner.write_vectored_at(bufs, offset)
        }
        fn len(&self) -> io::Result<u64> {
            self.inner.len()
        }
        fn set_len(&self, len: u64) -> io::Result<()> {
            self.inner.set_len(len)
        }
        fn allocate(&self, len: u64) -> io::Result<()> {
            self.inner.allocate(len)
        }
        fn sync_data(&self, site: SyncSite) -> io::Result<()> {
            (self.hook)()?;
            self.inner.sync_data(site)
        }
        fn sync_all(&self, site: SyncSite) -> io::Result<()> {
            self.inner.sync_all(site)
        }
        fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
            self.inner.map(len)
        }
    }

    /// After a failed journal sync, a later one fails without calling `fdatasync`: the kernel may
    /// have dropped the pages the first one failed on, and a second call could report success.
    #[test]
    fn a_failed_sync_fails_every_later_one_without_syncing_again() {
        let syncs = Arc::new(AtomicU64::new(0));
        let s = syncs.clone();
        let f = Hooked::new("/j", move || match s.fetch_add(1, Ordering::SeqCst) {
            0 => Err(io::Error::from_raw_os_error(5)), // EIO
            _ => Ok(()),
        });
        let files: Vec<(Arc<dyn StorageFile>, u64)> = vec![(f, 1)];
        let (gate, counters) = (SyncGate::default(), Counters::default());
        assert!(matches!(gate.sync(&files, &counters), Err(Error::Io { .. })));
        assert!(matches!(gate.sync(&files, &counters), Err(Error::Poisoned(_))));
        assert_eq!(syncs.load(Ordering::SeqCst), 1, "the second sync must not reach the file");
        assert_eq!(counters.syncs[SyncSite::JournalData.index()].load(Ordering::SeqCst), 0);
    }

    /// Once an append or a sync failed, `make_durable` fails too, even for a target that was
    /// durable before the failure (it used to answer `Ok` whenever `durable_txid >= txid`, and,
    /// for a later target, to write nothing, sync nothing and answer `Ok` after a failed
    /// `write_pending` had already taken the pending records).
    #[test]
    fn make_durable_fails_after_a_failed_append() {
        let mem: Arc<dyn Storage> = Arc::new(MemStorage::new());
        let f: Arc<dyn StorageFile> = Hooked::new("/a", || Ok(()));
        let j = Journal::new(mem, PathBuf::from("/"), 1, 64 << 10, 0, Arc::default(), 0, 0, Vec::new(), false);
        let j = Arc::new(Mutex::new(j));
        {
            let mut g = j.lock();
            g.mark_dirty(&f);
            g.written_txid = 2;
        }
        Journal::make_durable(&j, 2).unwrap();
        // Record 3 was a `None` record whose deferred write failed (`append` sets `failed`).
        {
            let mut g = j.lock();
            g.last_txid = 3;
            g.failed = true;
        }
        assert!(matches!(Journal::make_durable(&j, 2), Err(Error::Poisoned(_))), "target durable before the failure");
        assert!(matches!(Journal::make_durable(&j, 3), Err(Error::Poisoned(_))), "target after it");
    }

    /// `make_durable` syncs outside the journal lock, and afterwards clears only what its sync
    /// covered: a file written again while the sync ran stays dirty, so does a file first written
    /// then, and `durable_txid` rises only to the txid written when the sync began.
    #[test]
    fn make_durable_syncs_outside_the_lock_and_keeps_later_writes_dirty() {
        let mem: Arc<dyn Storage> = Arc::new(MemStorage::new());
        let (entered_tx, entered) = std::sync::mpsc::sync_channel(4);
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let release_rx = std::sync::Mutex::new(release_rx);
        // Its sync says it has begun, then waits to be released.
        let a: Arc<dyn StorageFile> = Hooked::new("/a", move || {
            let _ = entered_tx.send(());
            let _ = release_rx.lock().map(|r| r.recv());
            Ok(())
        });
        let b = mem.open(Path::new("/b"), OpenMode::CreateReadWrite).unwrap();
        let j = Journal::new(mem, PathBuf::from("/"), 1, 64 << 10, 0, Arc::default(), 0, 0, Vec::new(), false);
        let j = Arc::new(Mutex::new(j));
        {
            let mut g = j.lock();
            g.mark_dirty(&a);
            g.written_txid = 1;
        }
        let j2 = j.clone();
        let syncing = std::thread::spawn(move || Journal::make_durable(&j2, 1));
        entered.recv().unwrap();
        {
            // The lock is free while the sync runs: records 2 and 3 land in `a` and `b`.
            let mut g = j.try_lock_for(std::time::Duration::from_secs(10)).expect("journal lock held during the sync");
            g.mark_dirty(&a);
            g.mark_dirty(&b);
            g.written_txid = 3;
        }
        release.send(()).unwrap();
        syncing.join().unwrap().unwrap();
        let g = j.lock();
        assert_eq!(g.durable_txid(), 1, "only what was written before the sync is durable");
        assert_eq!(g.dirty.len(), 2, "a (written again) and b (new) stay dirty");
        drop(g);
        // The next call covers them.
        release.send(()).unwrap();
        Journal::make_durable(&j, 3).unwrap();
        let g = j.lock();
        assert!(g.dirty.is_empty());
        assert_eq!(g.durable_txid(), 3);
    }
}
