//! Appending records into their reserved slots (`space.rs` reserves them), and the three
//! durability modes.
//!
//! Invariants:
//! 1. Records are written in transaction order; `durable_txid` only grows, and every record up to
//!    it is on the device (a `Sync` commit first makes earlier `Buffered`/`None` records durable,
//!    so there are no holes).
//! 4. `dirty` holds every file with a buffered write that no finished sync covered, with the
//!    number of its last write; `make_durable` syncs outside the journal lock and then clears an
//!    entry only if its number did not change, and raises `durable_txid` only to the txid written
//!    when it took its snapshot. Journal syncs never run two at once (`SyncGate`).
//! 6. (descriptors) `pending` and `dirty` keep their files open: an append that would leave more
//!    than `MAX_UNSYNCED_FILES` files there writes and syncs them first. So that a stream of
//!    buffered commits seldom pays for that under the journal lock (five `fdatasync`s, 2-15 ms in
//!    one commit), an append that leaves `SYNC_AHEAD_FILES` asks for the sync on the background
//!    flusher's thread (`sync_ahead_due`; `make_durable`, outside the lock).
//! 7. A failed write or sync of a record sets `failed`: from then on nothing is promised (the
//!    caller poisons the environment).
//!
//! (Invariants 2, 3 and 5 are `space.rs`'s.)

use super::record::{self, AlignedBuf, Compressed};
use super::space::Slot;
use super::JournalPos;
use crate::error::IoContext;
use crate::options::Durability;
use crate::stats::Counters;
use crate::storage::{JournalIo, StorageFile, SyncSite};
use crate::sync::{AtomicBool, Mutex};
use crate::{Error, Result};
use std::io::IoSlice;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Appends that leave more files than this with unsynced records sync them first (invariant 6).
const MAX_UNSYNCED_FILES: usize = 4;

/// Files with unsynced records from which the background flusher is asked to sync them
/// (invariant 6): the file being written and two full ones.
const SYNC_AHEAD_FILES: usize = MAX_UNSYNCED_FILES - 1;

/// Records whose payload is at least this long are written from the payload itself
/// (`append_large`), not copied into the aligned buffer.
const LARGE_RECORD: usize = 1 << 20;

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
    db_id: u64,
    counters: Arc<Counters>,
    pending: Vec<Pending>,
    /// The distinct files of `pending`, in order (a file never comes back after a rotation): what
    /// `unsynced_files` counts, without walking `pending`, which a stream of `None` commits
    /// fills with thousands of records.
    pending_files: Vec<Arc<dyn StorageFile>>,
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

impl Journal {
    /// A journal whose next record is transaction `last_txid + 1`.
    pub(crate) fn new(db_id: u64, counters: Arc<Counters>, last_txid: u64) -> Journal {
        Journal {
            db_id,
            counters,
            pending: Vec::new(),
            pending_files: Vec::new(),
            dirty: Vec::new(),
            writes: 0,
            sync_gate: Arc::default(),
            last_txid,
            written_txid: last_txid,
            durable_txid: last_txid,
            buf: AlignedBuf::default(),
            failed: false,
        }
    }

    pub(crate) fn last_txid(&self) -> u64 {
        self.last_txid
    }

    pub(crate) fn durable_txid(&self) -> u64 {
        self.durable_txid
    }

    /// Write transaction `slot.txid`'s record into its reserved slot, after every earlier record
    /// (the caller waits for its turn). On error the journal must not be used again (the caller
    /// poisons the environment).
    pub(crate) fn append(
        &mut self,
        slot: Slot,
        next_page: u64,
        payload: &Compressed,
        durability: Durability,
    ) -> Result<Appended> {
        let r = self.append_inner(slot, next_page, payload, durability);
        self.failed_if_err(r)
    }

    /// A failed append leaves the journal unusable: mark it so, pass the result on.
    fn failed_if_err<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn append_inner(
        &mut self,
        slot: Slot,
        next_page: u64,
        payload: &Compressed,
        durability: Durability,
    ) -> Result<Appended> {
        let txid = slot.txid;
        if txid != self.last_txid + 1 {
            return Err(Error::Invalid(format!(
                "internal: journal record {txid} written out of order (last written {})",
                self.last_txid
            )));
        }
        if payload.stored.len() >= LARGE_RECORD {
            return self.append_large(slot, next_page, payload, durability);
        }
        let h = record::frame(
            &mut self.buf,
            txid,
            slot.generation,
            self.db_id,
            next_page,
            self.durable_txid,
            payload,
            slot.packed,
        );
        let len = h.record_len();
        if len != slot.len {
            return Err(Error::Invalid("internal: a journal record's length changed after its reservation".into()));
        }
        let offset = slot.offset;
        self.last_txid = txid;
        let end = JournalPos { generation: slot.generation, offset: offset + len };
        let (direct, buffered) = (slot.direct.clone(), slot.buffered.clone());
        self.count(&h, len, payload);
        match durability {
            Durability::None => {
                if !self.pending_files.last().is_some_and(|f| Arc::ptr_eq(f, &buffered)) {
                    self.pending_files.push(buffered.clone());
                }
                self.pending.push(Pending { file: buffered, offset, bytes: self.buf.as_slice().to_vec(), txid });
            }
            Durability::Buffered => {
                self.write_pending()?;
                self.write_buffered(&buffered, offset, txid)?;
            }
            Durability::Sync => {
                // A packed slot need not start on a block: only the page cache can write it.
                if self.pending.is_empty() && self.dirty.is_empty() && slot.io == JournalIo::DirectSync && !slot.packed
                {
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
        self.bound_unsynced_files()?;
        Ok(Appended { end, written_len: len })
    }

    /// Invariant 6: after an append, at most `MAX_UNSYNCED_FILES` files hold records still to be
    /// written or synced (every path that appends ends here).
    fn bound_unsynced_files(&mut self) -> Result<()> {
        if self.unsynced_files() > MAX_UNSYNCED_FILES {
            self.write_pending()?;
            self.sync_dirty()?;
        }
        Ok(())
    }

    fn count(&self, h: &record::RecordHeader, len: u64, payload: &Compressed) {
        Counters::add(&self.counters.journal_bytes_raw, h.raw_len as u64);
        Counters::add(&self.counters.journal_bytes_stored, len);
        Counters::add(&self.counters.journal_bytes_full, payload.full_bytes);
    }

    /// A record of `LARGE_RECORD` bytes or more: written through the page cache straight from the
    /// payload (header, payload and padding as three slices), never copied into an aligned
    /// buffer first (a 262 MiB record cost 262 MiB more memory that way), then synced for a
    /// `Sync` commit. Earlier deferred records go first; a `None` record is written at once
    /// (sooner than asked, which promises nothing more).
    fn append_large(
        &mut self,
        slot: Slot,
        next_page: u64,
        payload: &Compressed,
        durability: Durability,
    ) -> Result<Appended> {
        let (h, head) =
            record::header(slot.txid, slot.generation, self.db_id, next_page, self.durable_txid, payload, slot.packed);
        let len = h.record_len();
        if len != slot.len {
            return Err(Error::Invalid("internal: a journal record's length changed after its reservation".into()));
        }
        self.last_txid = slot.txid;
        self.count(&h, len, payload);
        self.write_pending()?;
        // Padding, then zeros to the next block (`record::to_block`).
        let pad = vec![0u8; len as usize - head.len() - payload.stored.len() + record::to_block(slot.offset + len)];
        let slices = [IoSlice::new(&head), IoSlice::new(&payload.stored), IoSlice::new(&pad)];
        slot.buffered.write_vectored_at(&slices, slot.offset).ctx("journal write (large record)")?;
        Counters::add(&self.counters.journal_writes, 1);
        self.written_txid = slot.txid;
        self.mark_dirty(&slot.buffered);
        if durability == Durability::Sync {
            self.sync_dirty()?;
        }
        self.bound_unsynced_files()?;
        Ok(Appended { end: JournalPos { generation: slot.generation, offset: slot.offset + len }, written_len: len })
    }

    /// Append a streamed record (`record::StreamedRecord`): its bytes past the first block are
    /// already in the file (written by `prepare` into the reserved slot, through the buffered
    /// handle); `first`, its first block with the header, is still to be written. Earlier
    /// deferred records go first, then `first`, which makes the record valid, then a sync for
    /// `Sync` (as `append_large`). Until then the slot holds no header: a crash leaves bytes that
    /// never verify as a record, so recovery ends the log before it.
    pub(crate) fn append_streamed(
        &mut self,
        slot: Slot,
        first: &[u8],
        stats: (u64, u64),
        durability: Durability,
    ) -> Result<Appended> {
        let r = self.append_streamed_inner(slot, first, stats, durability);
        self.failed_if_err(r)
    }

    fn append_streamed_inner(
        &mut self,
        slot: Slot,
        first: &[u8],
        (raw_len, full_bytes): (u64, u64),
        durability: Durability,
    ) -> Result<Appended> {
        if slot.txid != self.last_txid + 1 {
            return Err(Error::Invalid(format!(
                "internal: journal record {} written out of order (last written {})",
                slot.txid, self.last_txid
            )));
        }
        let len = slot.len;
        self.last_txid = slot.txid;
        Counters::add(&self.counters.journal_bytes_raw, raw_len);
        Counters::add(&self.counters.journal_bytes_stored, len);
        Counters::add(&self.counters.journal_bytes_full, full_bytes);
        self.write_pending()?;
        slot.buffered.write_all_at(first, slot.offset).ctx("journal write (streamed record's first block)")?;
        Counters::add(&self.counters.journal_writes, 1);
        self.written_txid = slot.txid;
        self.mark_dirty(&slot.buffered);
        if durability == Durability::Sync {
            self.sync_dirty()?;
        }
        self.bound_unsynced_files()?;
        Ok(Appended { end: JournalPos { generation: slot.generation, offset: slot.offset + len }, written_len: len })
    }

    /// Whether so many files hold unsynced records that the background flusher should sync them
    /// now (`make_durable` through `last_txid`), before an append reaches `MAX_UNSYNCED_FILES`
    /// and syncs them under the journal lock (invariant 6).
    pub(crate) fn sync_ahead_due(&self) -> bool {
        self.unsynced_files() >= SYNC_AHEAD_FILES
    }

    /// Files that hold records still to be written or synced (and so stay open).
    /// This runs after every append: it looks at the distinct files only (`pending_files`,
    /// `dirty`: a few each), never at every pending record.
    fn unsynced_files(&self) -> usize {
        let mut files: smallvec::SmallVec<[&Arc<dyn StorageFile>; 8]> = smallvec::SmallVec::new();
        for f in self.pending_files.iter().chain(self.dirty.iter().map(|(f, _)| f)) {
            if !files.iter().any(|g| Arc::ptr_eq(g, f)) {
                files.push(f);
            }
        }
        files.len()
    }

    fn write_buffered(&mut self, f: &Arc<dyn StorageFile>, offset: u64, txid: u64) -> Result<()> {
        f.write_vectored_at(&[IoSlice::new(self.buf.through_block(offset))], offset).ctx("journal write")?;
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
        self.pending_files.clear();
        // Adjacent records in one file go in one vectored write.
        let mut i = 0;
        while i < pending.len() {
            let mut j = i + 1;
            let mut end = pending[i].offset + pending[i].bytes.len() as u64;
            while j < pending.len() && Arc::ptr_eq(&pending[j].file, &pending[i].file) && pending[j].offset == end {
                end += pending[j].bytes.len() as u64;
                j += 1;
            }
            let mut slices: Vec<IoSlice<'_>> = pending[i..j].iter().map(|p| IoSlice::new(&p.bytes)).collect();
            slices.push(IoSlice::new(&record::ZERO_BLOCK[..record::to_block(end)]));
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

    pub(crate) fn failed(&self) -> bool {
        self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Mapping, MemStorage, OpenMode, Storage};
    use std::io;
    use std::path::Path;
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

    /// Invariant 6 holds for streamed records too (and for large ones, which end the same way):
    /// `Buffered` records each in a file of its own leave at most `MAX_UNSYNCED_FILES` files
    /// unsynced (they used to pile up until the flusher's next sync, every one kept open).
    #[test]
    fn streamed_records_in_many_files_keep_the_unsynced_bound() {
        let syncs = Arc::new(AtomicU64::new(0));
        let mut j = Journal::new(1, Arc::default(), 0);
        for txid in 1..=3 * MAX_UNSYNCED_FILES as u64 {
            let s = syncs.clone();
            let f: Arc<dyn StorageFile> = Hooked::new("/j", move || {
                s.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            let slot = Slot {
                txid,
                generation: txid,
                offset: 0,
                len: 4096,
                packed: false,
                io: JournalIo::BufferedFsync,
                direct: f.clone(),
                buffered: f,
            };
            j.append_streamed(slot, &[7u8; 4096], (4096, 4096), Durability::Buffered).unwrap();
            assert!(
                j.unsynced_files() <= MAX_UNSYNCED_FILES,
                "{} files unsynced after record {txid}",
                j.unsynced_files()
            );
        }
        assert!(syncs.load(Ordering::SeqCst) > 0, "no file was synced");
        assert_eq!(j.written_txid, 3 * MAX_UNSYNCED_FILES as u64);
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
        let f: Arc<dyn StorageFile> = Hooked::new("/a", || Ok(()));
        let j = Journal::new(1, Arc::default(), 0);
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
        let j = Journal::new(1, Arc::default(), 0);
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
