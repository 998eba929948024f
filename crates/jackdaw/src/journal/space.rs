//! Journal files on disk: which file the next record goes to (reservation and rotation),
//! preallocation in the background, recycling and retirement. The appends themselves are in
//! `writer.rs`.
//!
//! Invariants (numbering continues `writer.rs`'s):
//! 2. A journal file is fully written (zeros when new; a recycled file keeps its old bytes, whose
//!    records carry another generation and never verify), synced, named and its directory synced
//!    before any record in it is acknowledged, so an `O_DSYNC` write never commits metadata too.
//! 3. Within one file, records are back to back from offset 0, except that a record that is not
//!    packed starts at the next 4 KiB boundary (the gap after a packed record is skipped: recovery
//!    looks there when no record follows at the end of the last one); a record that does not fit
//!    starts the next generation at offset 0, so a generation is taken only once its file is in
//!    place.
//! 5. Space is reserved before anything is promised: `reserve` (called by `prepare`, under the
//!    writer lock, in transaction order, before the transaction is published) fixes a record's
//!    file and offset and does any rotation; `Journal::append` (in `finish`) only writes bytes
//!    there. So a failure to make room (a full disk while zero-filling a new file, no descriptor
//!    left to open it) fails that commit alone and leaves the journal usable; a failed sync of the
//!    directory or a failed rename or removal of a journal file poisons (`ReserveError::poison`).
//!    Reserving takes this lock, never the journal's: a prepare does not wait for the record
//!    being written (pipelined commits).
//! 6. Descriptors are bounded whatever the number of journal files: only the current file is
//!    open here (two descriptors); full files waiting for the flusher (`live`) and retired ones
//!    (`recyclable`) are names only. A slot keeps its file open until its record is written, and
//!    `writer.rs` keeps at most `MAX_UNSYNCED_FILES` earlier files open for unsynced writes.

use super::path;
use super::record::{self, Compressed};
use crate::error::IoContext;
use crate::stats::Counters;
use crate::storage::{JournalIo, OpenMode, Storage, StorageFile, SyncSite};
use crate::sync::{thread, AtomicBool};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The file records are placed in now: open for writing.
struct JFile {
    generation: u64,
    direct: Arc<dyn StorageFile>,
    buffered: Arc<dyn StorageFile>,
    len: u64,
    /// End of the last record reserved in this file.
    end: u64,
    /// Last transaction with a record reserved in this file.
    last_txid: u64,
}

/// A full file whose records are not all flushed: no descriptor is kept for it (invariant 6).
struct LiveFile {
    generation: u64,
    len: u64,
    last_txid: u64,
}

/// Where a prepared transaction's record goes (`Space::reserve`): its file, kept open by the
/// slot until the record is written, and its offset.
pub(crate) struct Slot {
    pub(crate) txid: u64,
    pub(crate) generation: u64,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    /// A packed record (`record::PACK`-aligned, written through the page cache); else the slot
    /// starts on a `record::BLOCK` boundary.
    pub(crate) packed: bool,
    pub(crate) io: JournalIo,
    pub(crate) direct: Arc<dyn StorageFile>,
    pub(crate) buffered: Arc<dyn StorageFile>,
}

/// A failed attempt to make room for a record, and whether the environment must be poisoned:
/// when a sync, rename or removal failed (the directory's state is unknown).
pub(crate) struct ReserveError {
    pub error: Error,
    pub poison: bool,
}

/// The journal's files.
pub(crate) struct Space {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    file_bytes: u64,
    /// Size of the next new file: starts small (a short-lived or small database never pays for
    /// zero-filling a large file) and doubles with each new file up to `file_bytes`.
    next_file_bytes: u64,
    files_kept: usize,
    counters: Arc<Counters>,
    pub(crate) io: Option<JournalIo>,
    cur: Option<JFile>,
    /// Full files whose records are not all flushed, oldest first.
    live: VecDeque<LiveFile>,
    /// The last transaction with a reserved slot.
    reserved_txid: u64,
    /// Retired files available for reuse (paths).
    recyclable: Vec<(u64, PathBuf)>,
    next_generation: u64,
    /// Whether new files are prepared on a thread of their own (`FlusherMode::Background`; a
    /// `Manual` environment starts no thread, so that its tests stay deterministic).
    prepare_ahead: bool,
    spare: Option<Spare>,
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
            .spawn(move || {
                let r = write_zeroed(&*s, &c, &p, len, Some(&st));
                if r.is_err() {
                    // Its blocks go back now, not at the next rotation: on a full disk they are
                    // what the next commit needs (best effort; `wait` and the next open retry).
                    let _ = s.remove(&p);
                }
                r
            })
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

impl Drop for Space {
    fn drop(&mut self) {
        self.discard_spare();
    }
}

/// The size of the writes that zero a new journal file: the page cache keeps a file's pages in
/// folios as large as the writes that made them, and a later small write into a large folio walks
/// every block of it (ext4, Linux 6.18 here: a 4 KiB write into a file zeroed in 1 MiB writes
/// took 2.7-3.3 us, in 4 MiB writes 4.9-5.2 us, in 16-64 KiB writes 1.5-2.0 us). Records are
/// mostly a few KiB, written one by one on the commit path.
const ZERO_CHUNK: usize = 64 << 10;

/// Write `len` zero bytes to a new file at `tmp` (in writes of `ZERO_CHUNK` bytes) and sync it:
/// the body of a new journal file, not yet named. `stop` ends the job early (with an error) when
/// the journal is dropped.
fn write_zeroed(
    storage: &dyn Storage,
    counters: &Counters,
    tmp: &Path,
    len: u64,
    stop: Option<&AtomicBool>,
) -> Result<()> {
    let f = storage.open(tmp, OpenMode::CreateReadWrite).ctx("create journal file")?;
    f.set_len(0).ctx("truncate new journal file")?;
    let zeros = vec![0u8; ZERO_CHUNK];
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

impl Space {
    /// The files of a journal whose next record is transaction `last_txid + 1`. `recyclable` are
    /// retired files found at open; new generations start above `min_generation`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        file_bytes: u64,
        files_kept: usize,
        counters: Arc<Counters>,
        last_txid: u64,
        min_generation: u64,
        recyclable: Vec<(u64, PathBuf)>,
        prepare_ahead: bool,
    ) -> Space {
        Space {
            storage,
            dir,
            file_bytes: file_bytes.max(64 << 10).div_ceil(record::BLOCK as u64) * record::BLOCK as u64,
            next_file_bytes: file_bytes.clamp(64 << 10, 1 << 20).div_ceil(record::BLOCK as u64) * record::BLOCK as u64,
            files_kept,
            counters,
            io: None,
            cur: None,
            live: VecDeque::new(),
            reserved_txid: last_txid,
            recyclable,
            next_generation: min_generation + 1,
            prepare_ahead,
            spare: None,
        }
    }

    /// The generation the next new journal file gets: above every file this journal wrote.
    pub(crate) fn next_generation(&self) -> u64 {
        self.next_generation
    }

    pub(crate) fn files(&self) -> (usize, u64) {
        let n = self.live.len() + usize::from(self.cur.is_some());
        let b = self.live.iter().map(|f| f.len).sum::<u64>() + self.cur.as_ref().map_or(0, |f| f.len);
        (n + self.recyclable.len(), b)
    }

    /// Make room for transaction `txid`'s record (`payload`, framed): its file and offset, after
    /// a rotation if it does not fit in the current file. Called in transaction order, before
    /// the transaction is published (invariant 5): on error nothing is promised, and the
    /// environment stays usable unless `poison` says otherwise.
    /// `packed`: the record is framed packed (`record::packs`).
    pub(crate) fn reserve(
        &mut self,
        txid: u64,
        payload: &Compressed,
        packed: bool,
    ) -> std::result::Result<Slot, ReserveError> {
        self.reserve_len(txid, record::record_len(payload, packed), packed)
    }

    /// `reserve` for a record of `len` bytes (a streamed record, `record::StreamedRecord`, is
    /// never packed).
    pub(crate) fn reserve_len(&mut self, txid: u64, len: u64, packed: bool) -> std::result::Result<Slot, ReserveError> {
        let align = if packed { record::PACK } else { record::BLOCK } as u64;
        let start = |f: &JFile| f.end.next_multiple_of(align);
        let fits = self.cur.as_ref().is_some_and(|f| start(f) + len <= f.len);
        if !fits {
            self.rotate(len)?;
        }
        let (Some(cur), Some(io)) = (self.cur.as_mut(), self.io) else {
            let error = Error::Invalid("internal: no journal file after a rotation".into());
            return Err(ReserveError { error, poison: false });
        };
        let offset = start(cur);
        cur.end = offset + len;
        cur.last_txid = txid;
        self.reserved_txid = txid;
        Ok(Slot {
            txid,
            generation: cur.generation,
            offset,
            len,
            packed,
            io,
            direct: cur.direct.clone(),
            buffered: cur.buffered.clone(),
        })
    }

    /// Stop the spare's thread (between two of its writes) and remove its file: at close, so
    /// that nothing writes into the directory afterwards.
    pub(crate) fn discard_spare(&mut self) {
        if let Some(s) = self.spare.take() {
            s.stop.store(true, Ordering::Relaxed);
            s.wait(&*self.storage);
        }
    }

    /// Move to a new file that can hold a record of `need` bytes: a retired file, else the spare
    /// prepared in the background when it is big enough, else a file created here. The
    /// generation is taken only when the new file is in place (recovery looks for the record
    /// that did not fit at offset 0 of the very next generation).
    fn rotate(&mut self, need: u64) -> std::result::Result<(), ReserveError> {
        let soft = |error: Error| ReserveError { error, poison: false };
        let hard = |error: Error| ReserveError { error, poison: true };
        let generation = self.next_generation;
        let after = generation.checked_add(1).ok_or_else(|| {
            soft(Error::Invalid("the journal has used every generation a file name can carry".into()))
        })?;
        let target = path(&self.dir, generation);
        let reused = self.recycle_into(&target, need)?;
        if !reused {
            let size = self.next_file_bytes.max(need);
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
                    if let Err(e) = write_zeroed(&*self.storage, &self.counters, &tmp, size, None) {
                        // Never named: nothing refers to it (the next open removes it too). A
                        // full disk fails this commit only.
                        let _ = self.storage.remove(&tmp);
                        return Err(ReserveError { poison: matches!(e, Error::Poisoned(_)), error: e });
                    }
                    tmp
                }
            };
            self.storage.rename(&body, &target).ctx("name journal file").map_err(hard)?;
            Counters::add(&self.counters.journal_files_created, 1);
            self.next_file_bytes = (self.next_file_bytes * 2).min(self.file_bytes);
        }
        self.storage.sync_dir(&self.dir, SyncSite::JournalDir).ctx("sync journal directory").map_err(hard)?;
        self.counters.synced(SyncSite::JournalDir);
        // Named and synced: a failure to open it (no descriptor left) fails this commit only; the
        // next rotation takes the same generation and replaces the file.
        let h = self.storage.open_journal(&target).ctx("open journal file").map_err(soft)?;
        let len = h.buffered.len().ctx("journal length").map_err(soft)?;
        self.io = Some(h.io);
        self.next_generation = after;
        let next =
            JFile { generation, direct: h.direct, buffered: h.buffered, len, end: 0, last_txid: self.reserved_txid };
        if let Some(old) = self.cur.replace(next) {
            // Its descriptors close once the slots and writes that still use them are done.
            self.live.push_back(LiveFile { generation: old.generation, len: old.len, last_txid: old.last_txid });
        }
        if self.prepare_ahead && self.recyclable.is_empty() && self.spare.is_none() {
            self.spare = Spare::start(&self.storage, &self.counters, self.dir.join(SPARE_NAME), self.next_file_bytes);
        }
        Ok(())
    }

    /// Rename a retired file of at least `need` bytes to `target`; retired files too small are
    /// removed on the way. Whether one was found.
    fn recycle_into(&mut self, target: &Path, need: u64) -> std::result::Result<bool, ReserveError> {
        let hard = |error: Error| ReserveError { error, poison: true };
        while let Some((g, p)) = self.recyclable.pop() {
            let len = match self.storage.open(&p, OpenMode::ReadWrite).and_then(|f| f.len()) {
                Ok(len) => len,
                Err(e) => {
                    // Kept for the next rotation; this commit fails (out of descriptors, say).
                    self.recyclable.push((g, p));
                    return Err(ReserveError { error: Error::io("open retired journal", e), poison: false });
                }
            };
            if len >= need && len % record::BLOCK as u64 == 0 {
                self.storage.rename(&p, target).ctx("recycle journal file").map_err(hard)?;
                Counters::add(&self.counters.journal_files_recycled, 1);
                return Ok(true);
            }
            self.storage.remove(&p).ctx("remove small journal file").map_err(hard)?;
        }
        Ok(false)
    }

    /// At close, once every record up to `flushed_txid` (the last) is in the data file: every
    /// journal file, the current one included, for the caller to delete; the journal is left
    /// with no file (a later use would start a new one). Nothing if a file still holds a record
    /// past `flushed_txid`.
    pub(crate) fn release_all(&mut self, flushed_txid: u64) -> Doomed {
        let mut doomed = self.doomed("remove journal file at close");
        let cur_done = self.cur.as_ref().is_none_or(|c| c.last_txid <= flushed_txid);
        if !cur_done || self.live.iter().any(|f| f.last_txid > flushed_txid) {
            return doomed;
        }
        doomed.paths.extend(self.recyclable.drain(..).map(|(_, p)| p));
        doomed.paths.extend(self.live.drain(..).map(|f| path(&self.dir, f.generation)));
        if let Some(c) = self.cur.take() {
            doomed.paths.push(path(&self.dir, c.generation));
        }
        doomed
    }

    fn doomed(&self, what: &'static str) -> Doomed {
        Doomed { storage: self.storage.clone(), paths: Vec::new(), what }
    }

    /// Retire the full files whose records are all `<= flushed_txid` (the header says so durably).
    /// Up to `files_kept` are kept for recycling; the others are returned, for the caller to
    /// delete once it has released the `Space` lock ([`Doomed`]: unlinking a 16 MiB file took up
    /// to 8 ms, and every commit's reservation waits for this lock). A crash before they are deleted leaves retired
    /// files, which the next open recognises (their records are all flushed) and recycles or
    /// deletes; so the deletion needs no sync.
    pub(crate) fn retire(&mut self, flushed_txid: u64) -> Doomed {
        let mut doomed = self.doomed("remove retired journal");
        while self.live.front().is_some_and(|f| f.last_txid <= flushed_txid) {
            let Some(f) = self.live.pop_front() else { break };
            let p = path(&self.dir, f.generation);
            // A file made bigger than `file_bytes` for one huge record is not kept: it would
            // hold its disk space for good, reused by records of any size.
            if self.recyclable.len() < self.files_kept && f.len <= self.file_bytes {
                self.recyclable.push((0, p));
            } else {
                doomed.paths.push(p);
            }
        }
        doomed
    }
}

/// Journal files given up by [`Space::retire`] or [`Space::release_all`], deleted by
/// [`Doomed::remove`] once the caller has let go of the `Space` lock: unlinking a 16 MiB file
/// took up to 8 ms, and every commit waits for that lock. So take it in a statement of its own:
/// `let doomed = space.lock().retire(t); doomed.remove()?;`.
#[must_use = "the files must be deleted with `remove`, after the lock is released"]
pub(crate) struct Doomed {
    storage: Arc<dyn Storage>,
    paths: Vec<PathBuf>,
    what: &'static str,
}

impl Doomed {
    /// Delete the files; the first failure stops and is returned.
    pub(crate) fn remove(self) -> Result<()> {
        for p in &self.paths {
            self.storage.remove(p).ctx(self.what)?;
        }
        Ok(())
    }
}
