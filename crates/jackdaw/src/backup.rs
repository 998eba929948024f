//! Hot backup: a copy of one read snapshot, as a new database directory ([`Env::backup_to`]) or
//! as one stream ([`Env::backup_to_writer`], read back by [`restore_from`]); compaction
//! ([`BackupOptions::compact`]).
//!
//! A backup is a read transaction: it pins its snapshot (the last committed transaction when it
//! starts) and reads every page in use through it, while the environment keeps committing. The
//! writer is never blocked; the flusher keeps the versions the snapshot needs in memory until
//! the copy ends (see `max_pinned_bytes` in [`crate::Options`]).
//!
//! **Plain copy** (the default): every page the snapshot uses (free pages skipped, read through
//! the snapshot, so each one's checksum is verified on the way) is written at its own number
//! into a new data file, whose two header slots record the snapshot's transaction as flushed
//! and an empty journal. Nothing needs replaying; the file is exactly as long as the snapshot's
//! page high-water mark (free pages are holes).
//!
//! **Compaction**: the snapshot is first copied as above into a scratch directory (so it is held,
//! and pins page versions of the source, only for the time of a sequential copy); that copy's
//! trees are rebuilt, entry by entry in key order, into a scratch database (large transactions of
//! sequential inserts: full leaves, pages allocated in order), whose snapshot is then copied as
//! above. Scratch space: the source's pages in use plus the compacted size. So the copy holds only live pages, packed,
//! with the same trees, keys and values; page numbers and tree identities are new. Why a rebuild
//! rather than renumbering pages: the tree code already writes packed trees for sequential
//! inserts, and a rebuild cannot carry a stale reference over; it costs one more write of the
//! data.
//!
//! **Directory form**: written under a temporary name beside the destination
//! (`.<name>.backup-tmp-<pid>`), the data file synced, then the directory; renamed to the
//! destination, and the parent directory synced. A crash half way leaves only the temporary
//! directory, whose data file has no valid header before the last step, so `Env::open` never
//! takes it for a database.
//!
//! **Stream form** (FORMAT.md §9): a 48-byte header, runs of pages, an end mark and an XXH3-64
//! of everything before it. [`restore_from`] checks every page's own checksum and the stream's,
//! and writes a directory exactly as `backup_to` does.

use crate::api::ReadTxn;
use crate::data::header::{Header, HEADER_LEN, SLOT_WRITE};
use crate::data::page;
use crate::data::DATA_FILE;
use crate::env::Env;
use crate::error::IoContext;
use crate::ids::TxId;
use crate::options::{Durability, Options};
use crate::storage::{OpenMode, Storage, StorageFile, SyncSite};
use crate::txn::alloc::Geometry;
use crate::{Error, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The magic of a backup stream.
pub(crate) const STREAM_MAGIC: &[u8; 8] = b"JKDWBKUP";
/// The backup stream's format version.
pub(crate) const STREAM_VERSION: u32 = 1;
/// Bytes of the stream header.
const STREAM_HEADER: usize = 48;
/// The run header that ends the runs.
const END_MARK: u64 = u64::MAX;
/// Pages per run at most (a run is buffered whole).
const RUN_PAGES: usize = 256;
/// Bytes of keys and values per transaction of a compaction.
const COMPACT_TXN_BYTES: u64 = 64 << 20;

/// Where a backup is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackupStage {
    /// Rebuilding the trees in the scratch database (compaction); `done`/`total` count entries.
    Compact,
    /// Copying pages; `done`/`total` count pages.
    Copy,
}

/// A progress report of a backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupProgress {
    /// The stage.
    pub stage: BackupStage,
    /// Units done in this stage.
    pub done: u64,
    /// Units of this stage in all.
    pub total: u64,
}

type ProgressFn = Arc<dyn Fn(BackupProgress) + Send + Sync>;

/// How to take a backup: `BackupOptions::default()` and the setters.
#[derive(Clone, Default)]
pub struct BackupOptions {
    compact: bool,
    progress: Option<ProgressFn>,
    work_dir: Option<PathBuf>,
}

impl std::fmt::Debug for BackupOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupOptions")
            .field("compact", &self.compact)
            .field("progress", &self.progress.is_some())
            .field("work_dir", &self.work_dir)
            .finish()
    }
}

impl BackupOptions {
    /// Write only the live pages, packed (default off: a page-for-page copy of the pages in use).
    pub fn compact(mut self, on: bool) -> Self {
        self.compact = on;
        self
    }
    /// Called now and then with how far the backup is (from the backup's thread).
    pub fn progress(mut self, f: impl Fn(BackupProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }
    /// Where a compacting [`Env::backup_to_writer_with`] builds its scratch database (removed
    /// afterwards); default: the system's temporary directory. A compacting `backup_to_with`
    /// builds it inside the destination's temporary directory and ignores this.
    pub fn work_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.work_dir = Some(dir.as_ref().to_path_buf());
        self
    }
    fn report(&self, stage: BackupStage, done: u64, total: u64) {
        if let Some(f) = &self.progress {
            f(BackupProgress { stage, done, total });
        }
    }
}

/// What a backup (or a restore) wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupStats {
    /// The transaction the copy holds: the last committed one when the backup began. The copy's
    /// `Stats::last_committed_txid` is this id.
    pub txid: TxId,
    /// Bytes of the copy: the data file's length (directory form) or the stream's length.
    pub bytes: u64,
}

/// The shape of a copy: what the header slots of the new data file record.
#[derive(Debug, Clone, Copy)]
struct Shape {
    page_size: usize,
    db_id: u64,
    txid: u64,
    next_page: u64,
    /// Pages in use (those copied), for progress.
    pages: u64,
}

impl Env {
    /// A hot backup into the new directory `dest` (missing, or an empty directory): a copy of the
    /// last committed transaction, taken while this `Env` keeps committing and reading. The copy
    /// opens with [`Env::open`], passes [`Env::check`], needs no journal replay and is synced
    /// (files and directory) when this returns. See [`Env::backup_to_with`] for compaction.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use jackdaw::{Env, Options};
    /// let env = Env::open(dir.path().join("db"), Options::default())?;
    /// let mut tx = env.write()?;
    /// let t = tx.create_tree("t")?;
    /// tx.put(&t, "k", "v")?;
    /// let txid = tx.commit()?.txid;
    /// let stats = env.backup_to(dir.path().join("copy"))?;
    /// assert_eq!(stats.txid, txid);
    /// let copy = Env::open(dir.path().join("copy"), Options::default())?;
    /// let r = copy.read()?;
    /// assert_eq!(r.get(&r.open_tree("t")?.unwrap(), "k")?.unwrap().as_ref(), b"v");
    /// # Ok::<(), jackdaw::Error>(())
    /// ```
    pub fn backup_to(&self, dest: impl AsRef<Path>) -> Result<BackupStats> {
        self.backup_to_with(dest, BackupOptions::default())
    }

    /// [`Env::backup_to`] with options: `BackupOptions::default().compact(true)` writes only the
    /// live pages, packed (the copy's data file is as small as its content).
    pub fn backup_to_with(&self, dest: impl AsRef<Path>, options: BackupOptions) -> Result<BackupStats> {
        let dest = dest.as_ref();
        let storage = self.core().opts().storage.clone();
        let rtx = self.read()?;
        let out = DirOut::create(storage.clone(), dest)?;
        if options.compact {
            let work = out.tmp.join("compact.work");
            let r = (|| {
                let (scratch, source_txid) = self.compacted(rtx, &work, &options)?;
                let srtx = scratch.read()?;
                let shape = shape_of(&srtx, self.core().db_id(), compact_txid(source_txid, &srtx))?;
                let bytes = copy_to_dir(&srtx, shape, &out, &options)?;
                drop(srtx);
                scratch.close()?;
                Ok::<_, Error>((shape, bytes))
            })();
            remove_tree(storage.as_ref(), &work);
            let (shape, bytes) = r?;
            out.finish(shape)?;
            return Ok(BackupStats { txid: TxId::new(shape.txid), bytes });
        }
        let shape = shape_of(&rtx, self.core().db_id(), rtx.txid().get())?;
        let bytes = copy_to_dir(&rtx, shape, &out, &options)?;
        drop(rtx);
        out.finish(shape)?;
        Ok(BackupStats { txid: TxId::new(shape.txid), bytes })
    }

    /// A hot backup streamed to `w` as one file (the container of FORMAT.md §9, with a
    /// checksum): what [`restore_from`] (and `jackdaw restore`) turns back into a database
    /// directory. For piping a copy to another machine, or a replication snapshot. `w` is
    /// flushed, not synced. Returns the transaction copied and the bytes written.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use jackdaw::{Env, Options};
    /// let env = Env::open(dir.path().join("db"), Options::default())?;
    /// let mut tx = env.write()?;
    /// let t = tx.create_tree("t")?;
    /// tx.put(&t, "k", "v")?;
    /// tx.commit()?;
    /// let mut stream = Vec::new();
    /// let sent = env.backup_to_writer(&mut stream)?;
    /// assert_eq!(sent.bytes, stream.len() as u64);
    /// let got = jackdaw::restore_from(&stream[..], dir.path().join("restored"))?;
    /// assert_eq!(got.txid, sent.txid);
    /// # Ok::<(), jackdaw::Error>(())
    /// ```
    pub fn backup_to_writer(&self, w: impl Write) -> Result<BackupStats> {
        self.backup_to_writer_with(w, BackupOptions::default())
    }

    /// [`Env::backup_to_writer`] with options (compaction builds its scratch database in
    /// [`BackupOptions::work_dir`]).
    pub fn backup_to_writer_with(&self, w: impl Write, options: BackupOptions) -> Result<BackupStats> {
        let rtx = self.read()?;
        if options.compact {
            let storage = self.core().opts().storage.clone();
            let base = options.work_dir.clone().unwrap_or_else(std::env::temp_dir);
            let work = base.join(format!(".jackdaw-compact-{}-{}", std::process::id(), unique()));
            let r = (|| {
                let (scratch, source_txid) = self.compacted(rtx, &work, &options)?;
                let srtx = scratch.read()?;
                let shape = shape_of(&srtx, self.core().db_id(), compact_txid(source_txid, &srtx))?;
                let bytes = write_stream(&srtx, shape, w, &options)?;
                drop(srtx);
                scratch.close()?;
                Ok::<_, Error>(BackupStats { txid: TxId::new(shape.txid), bytes })
            })();
            remove_tree(storage.as_ref(), &work);
            return r;
        }
        let shape = shape_of(&rtx, self.core().db_id(), rtx.txid().get())?;
        let bytes = write_stream(&rtx, shape, w, &options)?;
        Ok(BackupStats { txid: TxId::new(shape.txid), bytes })
    }
}

impl Env {
    /// Compaction's first two steps, in `work`: a plain copy of `rtx`'s snapshot (so the snapshot
    /// is held, and pins page versions of this `Env`, only while its pages are copied, at
    /// sequential-read speed), then the rebuild of that copy's trees into a scratch database.
    /// Returns the scratch `Env` (open) and the snapshot's transaction id.
    fn compacted(&self, rtx: ReadTxn, work: &Path, options: &BackupOptions) -> Result<(Env, u64)> {
        let core = self.core();
        let source_txid = rtx.txid().get();
        let snapshot = work.join("snapshot");
        let out = DirOut::create(core.opts().storage.clone(), &snapshot)?;
        let shape = shape_of(&rtx, core.db_id(), source_txid)?;
        copy_to_dir(&rtx, shape, &out, options)?;
        drop(rtx);
        out.finish(shape)?;
        let src = Env::open(
            &snapshot,
            Options { storage: core.opts().storage.clone(), clock: core.opts().clock.clone(), ..Options::default() }
                .read_only(true),
        )?;
        let srtx = src.read()?;
        let scratch = compact_into(&srtx, &work.join("packed"), core.opts(), options)?;
        drop(srtx);
        src.close()?;
        Ok((scratch, source_txid))
    }
}

/// The transaction id a compacted copy records: the source snapshot's, unless the rebuild
/// committed more transactions than that (the pages it stamped must not pass the header's id).
fn compact_txid(source: u64, scratch: &ReadTxn) -> u64 {
    source.max(scratch.txid().get())
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Rebuild the snapshot's trees in a new database at `work` (large transactions of inserts in
/// key order). Returns the scratch `Env`, open.
fn compact_into(rtx: &ReadTxn, work: &Path, src: &Options, options: &BackupOptions) -> Result<Env> {
    let opts = Options {
        page_size: src.page_size,
        durability: Durability::None,
        storage: src.storage.clone(),
        clock: src.clock.clone(),
        ..Options::default()
    }
    .page_size(rtx.snap.core().page_size() as u32);
    let env = Env::open(work, opts)?;
    let names = rtx.list_trees()?;
    let mut total = 0u64;
    let mut trees = Vec::with_capacity(names.len());
    for name in names {
        let t = rtx.open_tree(&name)?.ok_or_else(|| Error::NoSuchTree(name.clone()))?;
        total += rtx.tree_stats(&t)?.entries;
        trees.push(t);
    }
    let mut done = 0u64;
    options.report(BackupStage::Compact, 0, total);
    let mut tx = env.write()?;
    let mut in_tx = 0u64;
    for t in &trees {
        let mut dt = if t.is_multi() { tx.create_multi_tree(t.name())? } else { tx.create_tree(t.name())? };
        // After each entry: commit once the transaction holds enough, and go on in a new one.
        macro_rules! step {
            ($n:expr) => {
                in_tx += $n as u64 + 16;
                done += 1;
                if in_tx >= COMPACT_TXN_BYTES {
                    tx.commit()?;
                    tx = env.write()?;
                    dt = tx.open_tree(t.name())?.ok_or_else(|| Error::NoSuchTree(t.name().to_string()))?;
                    in_tx = 0;
                    options.report(BackupStage::Compact, done, total);
                }
            };
        }
        if t.is_multi() {
            for k in rtx.keys(t, ..)? {
                let k = k?;
                for v in rtx.multi_get(t, &k)? {
                    let v = v?;
                    tx.multi_put(&dt, &k, &v)?;
                    step!(k.len() + v.len());
                }
            }
        } else {
            for e in rtx.range(t, ..)? {
                let (k, v) = e?;
                tx.put(&dt, &k, &v)?;
                step!(k.len() + v.len());
            }
        }
    }
    tx.commit()?;
    options.report(BackupStage::Compact, done, total);
    Ok(env)
}

/// The shape of a copy of `rtx`'s snapshot, recording transaction `txid`.
fn shape_of(rtx: &ReadTxn, db_id: u64, txid: u64) -> Result<Shape> {
    let mut pages = 0u64;
    for_each_free_map(rtx, |_, free| {
        pages += free.iter().filter(|f| !**f).count() as u64;
        Ok(())
    })?;
    Ok(Shape { page_size: rtx.snap.core().page_size(), db_id, txid, next_page: rtx.snap.next_page().get(), pages })
}

/// For each section of the snapshot: its first page and, for each of its pages below the
/// high-water mark, whether it is free (pages 0 and 1, the header slots, count as free: they are
/// not copied).
fn for_each_free_map(rtx: &ReadTxn, mut f: impl FnMut(u64, &[bool]) -> Result<()>) -> Result<()> {
    let snap = &rtx.snap;
    let g = Geometry::new(snap.core().page_size());
    let next_page = snap.next_page().get();
    let mut free = Vec::new();
    for k in 0..g.sections(next_page) {
        let bp = g.bitmap_page(k);
        let p = snap.page(crate::PageNo::new(bp))?;
        if page::page_kind(p) != Some(page::PageKind::FreeMap) {
            return Err(Error::corrupted(Some(bp), "expected a free-space bitmap page"));
        }
        let first = k * g.section;
        let limit = (next_page - first).min(g.section);
        free.clear();
        for i in 0..limit {
            let pgno = first + i;
            let (byte, mask) = g.bit(pgno);
            free.push(pgno < crate::data::file::FIRST_BITMAP_PAGE || p[byte] & mask != 0);
        }
        f(first, &free)?;
    }
    Ok(())
}

/// Every page in use of the snapshot, in runs of consecutive pages: `emit(first, bytes)`.
fn copy_pages(
    rtx: &ReadTxn,
    shape: Shape,
    options: &BackupOptions,
    mut emit: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let ps = shape.page_size;
    let mut buf: Vec<u8> = Vec::with_capacity(RUN_PAGES * ps);
    let mut run_first = 0u64;
    let mut done = 0u64;
    options.report(BackupStage::Copy, 0, shape.pages);
    let snap = &rtx.snap;
    for_each_free_map(rtx, |first, free| {
        for (i, is_free) in free.iter().enumerate() {
            let pgno = first + i as u64;
            let run_len = (buf.len() / ps) as u64;
            // The run ends at a free page, at its size limit, or at a gap.
            if run_len > 0 && (*is_free || run_len == RUN_PAGES as u64 || run_first + run_len != pgno) {
                emit(run_first, &buf)?;
                done += run_len;
                if done % (16 * RUN_PAGES as u64) < run_len {
                    options.report(BackupStage::Copy, done, shape.pages);
                }
                buf.clear();
            }
            if *is_free {
                continue;
            }
            if buf.is_empty() {
                run_first = pgno;
            }
            buf.extend_from_slice(snap.page(crate::PageNo::new(pgno))?);
        }
        Ok(())
    })?;
    if !buf.is_empty() {
        emit(run_first, &buf)?;
        done += (buf.len() / ps) as u64;
    }
    options.report(BackupStage::Copy, done, shape.pages);
    Ok(())
}

fn copy_to_dir(rtx: &ReadTxn, shape: Shape, out: &DirOut, options: &BackupOptions) -> Result<u64> {
    out.start(shape)?;
    copy_pages(rtx, shape, options, |first, bytes| out.write_run(first, bytes))?;
    Ok(shape.next_page * shape.page_size as u64)
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hash: xxhash_rust::xxh3::Xxh3,
    bytes: u64,
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.hash.update(b);
        self.bytes += b.len() as u64;
        self.inner.write_all(b).ctx("write backup stream")
    }
}

fn write_stream(rtx: &ReadTxn, shape: Shape, w: impl Write, options: &BackupOptions) -> Result<u64> {
    let mut out = Hashing { inner: w, hash: xxhash_rust::xxh3::Xxh3::new(), bytes: 0 };
    let mut h = [0u8; STREAM_HEADER];
    h[0..8].copy_from_slice(STREAM_MAGIC);
    h[8..12].copy_from_slice(&STREAM_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(shape.page_size as u32).to_le_bytes());
    h[16..24].copy_from_slice(&shape.db_id.to_le_bytes());
    h[24..32].copy_from_slice(&shape.txid.to_le_bytes());
    h[32..40].copy_from_slice(&shape.next_page.to_le_bytes());
    h[40..48].copy_from_slice(&shape.pages.to_le_bytes());
    out.put(&h)?;
    let ps = shape.page_size;
    copy_pages(rtx, shape, options, |first, bytes| {
        let mut rh = [0u8; 16];
        rh[0..8].copy_from_slice(&first.to_le_bytes());
        rh[8..16].copy_from_slice(&((bytes.len() / ps) as u64).to_le_bytes());
        out.put(&rh)?;
        out.put(bytes)
    })?;
    let mut end = [0u8; 16];
    end[0..8].copy_from_slice(&END_MARK.to_le_bytes());
    out.put(&end)?;
    let sum = out.hash.digest();
    out.inner.write_all(&sum.to_le_bytes()).ctx("write backup stream")?;
    out.inner.flush().ctx("flush backup stream")?;
    Ok(out.bytes + 8)
}

/// Restore a stream written by [`Env::backup_to_writer`] into the new directory `dest` (missing,
/// or an empty directory), as [`Env::backup_to`] would have written it: every page's checksum
/// and the stream's checksum are verified, the files and directory synced, and `dest` appears
/// (renamed from a temporary name) only when all of it checked. Returns the transaction the copy
/// holds and the stream's length.
///
/// Errors: `NotADatabase` when the stream is not a Jackdaw backup, `IncompatibleFormat` for
/// another container version, `Corrupted` for a damaged or truncated stream, `Invalid` when
/// `dest` exists and is not empty, `Io` from reading or writing.
pub fn restore_from(r: impl Read, dest: impl AsRef<Path>) -> Result<BackupStats> {
    restore_with_storage(Arc::new(crate::storage::FsStorage), r, dest.as_ref())
}

fn truncated(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::corrupted(None, "the backup stream ends early (truncated)")
    } else {
        Error::io("read backup stream", e)
    }
}

pub(crate) fn restore_with_storage(storage: Arc<dyn Storage>, mut r: impl Read, dest: &Path) -> Result<BackupStats> {
    let mut hash = xxhash_rust::xxh3::Xxh3::new();
    let mut bytes = 0u64;
    let mut read = |r: &mut dyn Read, buf: &mut [u8], hash: &mut xxhash_rust::xxh3::Xxh3| -> Result<()> {
        r.read_exact(buf).map_err(truncated)?;
        hash.update(buf);
        bytes += buf.len() as u64;
        Ok(())
    };
    let mut h = [0u8; STREAM_HEADER];
    read(&mut r, &mut h, &mut hash)?;
    let shape = parse_stream_header(&h)?;
    let ps = shape.page_size;
    let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let out = DirOut::create(storage, dest)?;
    out.start(shape)?;
    let mut next_free = crate::data::file::FIRST_BITMAP_PAGE;
    let mut buf = Vec::new();
    let mut seen = 0u64;
    loop {
        let mut rh = [0u8; 16];
        read(&mut r, &mut rh, &mut hash)?;
        let (first, n) = (le64(&rh[0..8]), le64(&rh[8..16]));
        if first == END_MARK {
            break;
        }
        if first < next_free || n == 0 || n > RUN_PAGES as u64 || first.saturating_add(n) > shape.next_page {
            return Err(Error::corrupted(
                None,
                format!("backup stream: a run of {n} pages at page {first} is out of order or out of range"),
            ));
        }
        buf.resize(n as usize * ps, 0);
        read(&mut r, &mut buf, &mut hash)?;
        for (i, p) in buf.chunks(ps).enumerate() {
            page::verify(p, crate::PageNo::new(first + i as u64)).map_err(|e| match e {
                Error::Corrupted { reason, .. } => {
                    Error::corrupted(None, format!("backup stream: its copy of page {}: {reason}", first + i as u64))
                }
                e => e,
            })?;
        }
        out.write_run(first, &buf)?;
        next_free = first + n;
        seen += n;
    }
    let mut sum = [0u8; 8];
    r.read_exact(&mut sum).map_err(truncated)?;
    if u64::from_le_bytes(sum) != hash.digest() {
        return Err(Error::corrupted(None, "the backup stream's checksum does not match its content"));
    }
    // A stream ends at its checksum: bytes after it mean another file, or two streams in one.
    let mut more = [0u8; 1];
    loop {
        match r.read(&mut more) {
            Ok(0) => break,
            Ok(_) => return Err(Error::corrupted(None, "bytes follow the end of the backup stream")),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("read backup stream", e)),
        }
    }
    if seen != shape.pages {
        return Err(Error::corrupted(
            None,
            format!("backup stream holds {seen} pages, its header says {}", shape.pages),
        ));
    }
    out.finish(shape)?;
    Ok(BackupStats { txid: TxId::new(shape.txid), bytes: bytes + 8 })
}

/// The backup stream's header: magic, container version, page size and the database's shape,
/// each checked (a bad magic is `NotADatabase`, another version `IncompatibleFormat`).
fn parse_stream_header(h: &[u8; STREAM_HEADER]) -> Result<Shape> {
    if &h[0..8] != STREAM_MAGIC {
        return Err(Error::NotADatabase("the input is not a Jackdaw backup stream (bad magic)".into()));
    }
    let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let le32 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
    let version = le32(&h[8..12]);
    if version != STREAM_VERSION {
        return Err(Error::IncompatibleFormat(format!(
            "backup stream version {version}; this build reads version {STREAM_VERSION}"
        )));
    }
    let ps = le32(&h[12..16]);
    if !(4096..=65536).contains(&ps) || !ps.is_power_of_two() {
        return Err(Error::corrupted(None, format!("backup stream header names page size {ps}")));
    }
    let ps = ps as usize;
    let shape = Shape {
        page_size: ps,
        db_id: le64(&h[16..24]),
        txid: le64(&h[24..32]),
        next_page: le64(&h[32..40]),
        pages: le64(&h[40..48]),
    };
    if shape.next_page < crate::data::file::FIRST_FREE_PAGE || shape.next_page > u64::MAX / ps as u64 {
        return Err(Error::corrupted(None, format!("backup stream header names {} pages", shape.next_page)));
    }
    Ok(shape)
}

/// A database directory being written under a temporary name.
struct DirOut {
    storage: Arc<dyn Storage>,
    dest: PathBuf,
    tmp: PathBuf,
    /// The data file and the page size, from `start`.
    file: std::sync::Mutex<Option<(Arc<dyn StorageFile>, u64)>>,
    done: std::sync::atomic::AtomicBool,
}

impl DirOut {
    fn create(storage: Arc<dyn Storage>, dest: &Path) -> Result<DirOut> {
        if storage.exists(dest) {
            match storage.list_dir(dest) {
                Ok(v) if v.is_empty() => {}
                Ok(_) => {
                    return Err(Error::Invalid(format!(
                        "backup destination {} exists and is not empty",
                        dest.display()
                    )))
                }
                Err(_) => {
                    return Err(Error::Invalid(format!(
                        "backup destination {} exists (not a directory)",
                        dest.display()
                    )))
                }
            }
        }
        let name = dest
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("backup destination {} has no directory name", dest.display())))?;
        let prefix = format!(".{}.backup-tmp-", name.to_string_lossy());
        let tmp = dest.with_file_name(format!("{prefix}{}", std::process::id()));
        remove_tree(storage.as_ref(), &tmp);
        remove_orphans(storage.as_ref(), dest, &prefix);
        storage.create_dir_all(&tmp).ctx("create backup directory")?;
        storage.create_dir_all(&tmp.join(crate::journal::DIR)).ctx("create backup journal directory")?;
        Ok(DirOut {
            storage,
            dest: dest.to_path_buf(),
            tmp,
            file: std::sync::Mutex::new(None),
            done: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Create the data file, its length the shape's pages (the header slots stay zero, so the
    /// directory is no database, until `finish`).
    fn start(&self, shape: Shape) -> Result<()> {
        let f =
            self.storage.open(&self.tmp.join(DATA_FILE), OpenMode::CreateReadWrite).ctx("create backup data file")?;
        f.set_len(0).ctx("truncate backup data file")?;
        f.set_len(shape.next_page * shape.page_size as u64).ctx("size backup data file")?;
        *self.file.lock().unwrap_or_else(|e| e.into_inner()) = Some((f, shape.page_size as u64));
        Ok(())
    }

    fn data(&self) -> Result<(Arc<dyn StorageFile>, u64)> {
        self.file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| Error::Invalid("backup data file not created".into()))
    }

    fn write_run(&self, first: u64, bytes: &[u8]) -> Result<()> {
        let (f, page_size) = self.data()?;
        f.write_all_at(bytes, first * page_size).ctx("write backup data file")
    }

    /// Write the header slots, sync the file and the directory, rename to the destination and
    /// sync its parent.
    fn finish(&self, shape: Shape) -> Result<()> {
        let (f, _) = self.data()?;
        for rev in 0..2u64 {
            let h = Header {
                version: crate::data::header::FORMAT_VERSION,
                page_size: shape.page_size as u32,
                revision: rev,
                db_id: shape.db_id,
                flushed_txid: shape.txid,
                next_page: shape.next_page,
                journal_gen: 0,
                journal_offset: 0,
            };
            let mut block = vec![0u8; SLOT_WRITE];
            block[..HEADER_LEN].copy_from_slice(&h.encode());
            f.write_all_at(&block, rev * shape.page_size as u64).ctx("write backup header slot")?;
        }
        f.sync_all(SyncSite::DataFlush).ctx("sync backup data file")?;
        drop(f);
        *self.file.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.storage.sync_dir(&self.tmp.join(crate::journal::DIR), SyncSite::DbDir).ctx("sync backup directory")?;
        self.storage.sync_dir(&self.tmp, SyncSite::DbDir).ctx("sync backup directory")?;
        if self.storage.exists(&self.dest) {
            // An empty directory (checked at `create`): replaced by the rename.
            let _ = self.storage.remove_dir(&self.dest);
        }
        self.storage.rename(&self.tmp, &self.dest).ctx("rename backup directory into place")?;
        let parent = match self.dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        self.storage.sync_dir(&parent, SyncSite::DbDir).ctx("sync backup's parent directory")?;
        self.done.store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }
}

impl Drop for DirOut {
    fn drop(&mut self) {
        if !self.done.load(std::sync::atomic::Ordering::Acquire) {
            *self.file.lock().unwrap_or_else(|e| e.into_inner()) = None;
            remove_tree(self.storage.as_ref(), &self.tmp);
        }
    }
}

/// Remove `dir` and everything in it, as far as possible (cleanup of temporary directories).
fn remove_tree(storage: &dyn Storage, dir: &Path) {
    if let Ok(names) = storage.list_dir(dir) {
        for n in names {
            let p = dir.join(n);
            if storage.remove(&p).is_err() {
                remove_tree(storage, &p);
            }
        }
    }
    let _ = storage.remove_dir(dir);
}

/// Remove what backups or restores into the same destination left when their process died
/// (`<prefix><pid>` beside `dest`, a pid no process has: killed mid-copy, nothing of theirs
/// renames it any more). Only where `/proc` tells which processes live; a directory whose
/// process lives (a backup running now) is left alone.
fn remove_orphans(storage: &dyn Storage, dest: &Path, prefix: &str) {
    let proc = Path::new("/proc");
    let Some(parent) = dest.parent() else { return };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    if !proc.join("self").exists() {
        return;
    }
    for name in storage.list_dir(parent).unwrap_or_default() {
        let Some(pid) = name.strip_prefix(prefix).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !proc.join(pid.to_string()).exists() {
            remove_tree(storage, &parent.join(&name));
        }
    }
}
