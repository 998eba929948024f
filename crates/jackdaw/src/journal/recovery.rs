//! Reading the journal back: the scan shared by recovery and `check()`, and replay into the data
//! file.
//!
//! The log is the chain of records that starts at the header's journal position with transaction
//! `flushed_txid + 1` and continues while each next record verifies (magic, generation, database
//! id, checksum) and carries the next transaction id. A record that does not fit in a file is at
//! offset 0 of the next generation. The first position that holds no such record is the end of the
//! log (a torn tail). A record that verifies but carries an unexpected id at the expected place, or
//! a verifying record after the end whose `synced_through` says the first missing transaction was
//! already durable when it was written, means durable records went missing: `Corrupted`. (A later
//! record with a lower `synced_through` was written without a sync barrier, as `Buffered`/`None`
//! records are, and may legitimately outlive an earlier one in a power loss: it is ignored.)

use super::record::{self, RecordHeader, BLOCK};
use super::{parse_name, JournalPos};
use crate::data::file::Geometry;
use crate::data::page::PAGE_HEADER;
use crate::data::{DataFile, Header};
use crate::error::IoContext;
use crate::storage::{OpenMode, Storage, StorageFile, SyncSite};
use crate::{Error, PageNo, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Journal files found in the directory, by generation. With `clean`, files whose creation never
/// finished (`*.jnl.tmp`, which never held a record) are removed.
pub(crate) fn list(storage: &dyn Storage, dir: &Path, clean: bool) -> Result<BTreeMap<u64, PathBuf>> {
    let mut out = BTreeMap::new();
    if !storage.exists(dir) {
        return Ok(out);
    }
    for name in storage.list_dir(dir).ctx("list journal directory")? {
        if let Some(g) = parse_name(&name) {
            out.insert(g, dir.join(name));
        } else if clean && name.ends_with(".jnl.tmp") {
            // A file whose creation did not finish: never held a record.
            storage.remove(&dir.join(&name)).ctx("remove unfinished journal file")?;
        }
    }
    Ok(out)
}

/// Outcome of a scan.
#[derive(Debug, Clone)]
pub(crate) struct ScanEnd {
    pub last_txid: u64,
    pub next_page: u64,
    pub records: u64,
    /// Generations of the files in which a record of this database verified: in the chain, or
    /// after its end. Every file at or past the header's generation is read to its end, so a file
    /// there that is missing here holds no record of this database.
    pub verified: BTreeSet<u64>,
}

/// Files open at once while the journal is read: the scan moves forward through the
/// generations, looking one ahead, so two suffice; however many files the journal has, recovery
/// needs no more descriptors than this.
const OPEN_FILES: usize = 2;

struct Files<'a> {
    storage: &'a dyn Storage,
    paths: &'a BTreeMap<u64, PathBuf>,
    /// The files opened last, most recent at the end (at most `OPEN_FILES`).
    open: Vec<(u64, Arc<dyn StorageFile>, u64)>,
    verified: BTreeSet<u64>,
}

impl Files<'_> {
    fn get(&mut self, generation: u64) -> Result<Option<(Arc<dyn StorageFile>, u64)>> {
        if let Some((_, f, len)) = self.open.iter().find(|(g, _, _)| *g == generation) {
            return Ok(Some((f.clone(), *len)));
        }
        let Some(p) = self.paths.get(&generation) else {
            return Ok(None);
        };
        if self.open.len() >= OPEN_FILES {
            self.open.remove(0);
        }
        let f = self.storage.open(p, OpenMode::ReadWrite).ctx("open journal for recovery")?;
        let len = f.len().ctx("journal length")?;
        self.open.push((generation, f.clone(), len));
        Ok(Some((f, len)))
    }

    /// The verified record at `pos`, if there is one.
    fn record_at(&mut self, pos: JournalPos, db_id: u64) -> Result<Option<(RecordHeader, Payload)>> {
        let Some((f, len)) = self.get(pos.generation)? else {
            return Ok(None);
        };
        // The position may come from a damaged header: checked, never wrapped.
        if !pos.offset.is_multiple_of(record::PACK as u64)
            || pos.offset.checked_add(record::HEADER_LEN as u64).is_none_or(|end| end > len)
        {
            return Ok(None);
        }
        let mut first = vec![0u8; (len - pos.offset).min(BLOCK as u64) as usize];
        f.read_exact_at(&mut first, pos.offset).ctx("read journal")?;
        let Some(h) = RecordHeader::decode(&first) else {
            return Ok(None);
        };
        if h.generation != pos.generation || h.db_id != db_id {
            return Ok(None);
        }
        let rl = h.record_len();
        if pos.offset + rl > len {
            return Ok(None);
        }
        if h.flags == 0 && h.raw_len == h.stored_len && h.stored_len as usize >= STREAM_READ_MIN {
            // A big uncompressed record is verified in chunks and left in its file (faults issue
            // §5): replay reads it again, chunk by chunk (`Payload::for_each_entry`).
            let at = pos.offset + record::HEADER_LEN as u64;
            let ok = stream_checksum(&*f, at, h.stored_len as u64, h.hasher())? == h.checksum;
            if ok {
                self.verified.insert(pos.generation);
                return Ok(Some((h, Payload::File { file: f, offset: at, header: h })));
            }
            return Ok(None);
        }
        let mut bytes = first;
        let have = bytes.len();
        if rl as usize > have {
            bytes.resize(rl as usize, 0);
            f.read_exact_at(&mut bytes[have..], pos.offset + have as u64).ctx("read journal")?;
        }
        let found = record::verify_and_decode_owned(&h, bytes, pos.generation, db_id).map(|p| (h, Payload::Mem(p)));
        if found.is_some() {
            self.verified.insert(pos.generation);
        }
        Ok(found)
    }
}

/// Uncompressed records whose payload is at least this long are not read into memory whole:
/// verified in chunks, then read again in chunks as they are applied (faults issue §5).
const STREAM_READ_MIN: usize = 4 << 20;
/// The chunk of a record read at once when it is streamed.
const STREAM_READ_CHUNK: usize = 4 << 20;

/// xxh3 of `len` bytes of `f` from `at`, fed to `h` (which holds the record header's bytes), in
/// chunks of `STREAM_READ_CHUNK`. A file shorter than that is an error of the read.
fn stream_checksum(f: &dyn StorageFile, at: u64, len: u64, mut h: xxhash_rust::xxh3::Xxh3) -> Result<u64> {
    let mut buf = vec![0u8; STREAM_READ_CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        f.read_exact_at(&mut buf[..n], at + done).ctx("read journal")?;
        h.update(&buf[..n]);
        done += n as u64;
    }
    Ok(h.digest())
}

/// A verified record's payload: in memory (small records, compressed ones), or left in its file
/// (big uncompressed ones, `STREAM_READ_MIN`) and read in chunks when it is applied.
pub(crate) enum Payload {
    Mem(Vec<u8>),
    File { file: Arc<dyn StorageFile>, offset: u64, header: RecordHeader },
}

impl Payload {
    /// Call `f` with each entry of the payload, in order, with the bounds checks of
    /// `record::entries`. From a file, the payload is read again in chunks (memory: one chunk and
    /// one entry) and hashed on the way: if its bytes no longer match the checksum verified by
    /// the scan (the file changed under recovery), the result is `Corrupted`, after `f` may have
    /// seen entries of it (callers apply to memory and fail as a whole).
    pub(crate) fn for_each_entry(
        &self,
        count: u32,
        page_size: usize,
        f: &mut dyn FnMut(record::Entry<'_>) -> Result<()>,
    ) -> Result<()> {
        let (file, offset, header) = match self {
            Payload::Mem(p) => {
                for e in record::entries(p, count, page_size)? {
                    f(e)?;
                }
                return Ok(());
            }
            Payload::File { file, offset, header } => (file, *offset, header),
        };
        let bad = |why: &str| Error::corrupted(None, format!("journal record {} payload: {why}", header.txid));
        let len = header.stored_len as u64;
        let mut hasher = header.hasher();
        // `buf[lo..]` holds the bytes read and not yet parsed; `read` bytes of the payload read.
        let mut buf: Vec<u8> = Vec::with_capacity(STREAM_READ_CHUNK + 2 * page_size + 2 * record::ENTRY_HEADER);
        let (mut lo, mut read) = (0usize, 0u64);
        // Make `n` unparsed bytes available (reading on in chunks), or say why not.
        let mut fill = |buf: &mut Vec<u8>, lo: &mut usize, n: usize| -> Result<()> {
            if buf.len() - *lo >= n {
                return Ok(());
            }
            buf.drain(..*lo);
            *lo = 0;
            let want = (n - buf.len()).max(STREAM_READ_CHUNK) as u64;
            let take = want.min(len - read) as usize;
            if buf.len() + take < n {
                return Err(bad("entry past the end"));
            }
            let at = buf.len();
            buf.resize(at + take, 0);
            file.read_exact_at(&mut buf[at..], offset + read).ctx("read journal")?;
            hasher.update(&buf[at..]);
            read += take as u64;
            Ok(())
        };
        for _ in 0..count {
            fill(&mut buf, &mut lo, record::ENTRY_HEADER)?;
            let (pgno, kind, dlen) = record::entry_header(&buf[lo..lo + record::ENTRY_HEADER], page_size)?;
            // No entry the engine writes is longer than two pages (a diff stops past 7/8 of one,
            // after at most one more run): a longer one would make this buffer grow unbounded.
            if dlen > 2 * page_size + record::ENTRY_HEADER {
                return Err(bad("entry longer than two pages"));
            }
            fill(&mut buf, &mut lo, record::ENTRY_HEADER + dlen)?;
            let data = &buf[lo + record::ENTRY_HEADER..lo + record::ENTRY_HEADER + dlen];
            f(record::Entry { pgno, kind, data })?;
            lo += record::ENTRY_HEADER + dlen;
        }
        if lo != buf.len() || read != len {
            return Err(bad("trailing bytes"));
        }
        if hasher.digest() != header.checksum {
            return Err(bad("changed while it was replayed (its checksum no longer matches)"));
        }
        Ok(())
    }
}

/// Walk the log from the header's position, calling `visit` for each record in order.
pub(crate) fn scan(
    storage: &dyn Storage,
    paths: &BTreeMap<u64, PathBuf>,
    header: &Header,
    mut visit: impl FnMut(&RecordHeader, &Payload) -> Result<()>,
) -> Result<ScanEnd> {
    let mut files = Files { storage, paths, open: Vec::new(), verified: BTreeSet::new() };
    let mut pos = JournalPos { generation: header.journal_gen, offset: header.journal_offset };
    let mut expected = header.flushed_txid + 1;
    let mut next_page = header.next_page;
    let mut records = 0u64;
    loop {
        let mut found = files.record_at(pos, header.db_id)?;
        // A record that is not packed starts on the next block after a packed one (`space.rs`
        // invariant 3).
        let block = pos.offset.checked_next_multiple_of(BLOCK as u64).filter(|b| *b != pos.offset && found.is_none());
        if let Some(block) = block {
            let at = JournalPos { generation: pos.generation, offset: block };
            if let Some((h, p)) = files.record_at(at, header.db_id)? {
                if h.txid == expected {
                    pos = at;
                    found = Some((h, p));
                }
            }
        }
        if found.is_none() {
            let Some(generation) = pos.generation.checked_add(1) else { break };
            let next = JournalPos { generation, offset: 0 };
            if let Some((h, p)) = files.record_at(next, header.db_id)? {
                if h.txid == expected {
                    pos = next;
                    found = Some((h, p));
                }
            }
        }
        let Some((h, payload)) = found else { break };
        if h.txid != expected {
            return Err(Error::corrupted(
                None,
                format!("journal record at {pos} is transaction {} where {expected} was expected", h.txid),
            ));
        }
        visit(&h, &payload)?;
        next_page = h.next_page;
        records += 1;
        expected += 1;
        pos.offset += h.record_len();
    }
    // Nothing that verifies may follow the end of the log.
    for (&g, _) in paths.range(pos.generation..) {
        let Some((f, len)) = files.get(g)? else {
            continue;
        };
        let from = if g == pos.generation { pos.offset } else { 0 };
        for off in header_offsets(&*f, g, header.db_id, from, len)? {
            let p = JournalPos { generation: g, offset: off };
            if let Some((h, _)) = files.record_at(p, header.db_id)? {
                if h.txid >= expected && h.synced_through >= expected {
                    return Err(Error::corrupted(
                        None,
                        format!(
                            "journal record of transaction {} at {p} follows the end of the log at transaction {}: records are missing",
                            h.txid,
                            expected - 1
                        ),
                    ));
                }
            }
        }
    }
    Ok(ScanEnd { last_txid: expected - 1, next_page, records, verified: files.verified })
}

/// Bytes of a journal file read at once by `header_offsets`.
const HEADER_SCAN_CHUNK: usize = 1 << 20;

/// The `PACK`-aligned offsets in `[from, len)` of journal file `generation` that hold a record
/// header of that generation and of database `db_id` (the caller verifies the records). The
/// file is read in chunks and searched in memory: a record may start at any 64-byte boundary, and
/// reading a block at each of them cost 64 reads per 4 KiB of file.
fn header_offsets(f: &dyn StorageFile, generation: u64, db_id: u64, from: u64, len: u64) -> Result<Vec<u64>> {
    let unit = record::PACK as u64;
    let mut out = Vec::new();
    let Some(mut at) = from.checked_next_multiple_of(unit) else { return Ok(out) };
    let mut buf = Vec::new();
    while at.checked_add(record::HEADER_LEN as u64).is_some_and(|end| end <= len) {
        // Each chunk overlaps the next by a header, so a header across the boundary is seen.
        let n = (len - at).min((HEADER_SCAN_CHUNK + record::HEADER_LEN) as u64) as usize;
        buf.resize(n, 0);
        f.read_exact_at(&mut buf, at).ctx("read journal")?;
        let mut i = 0;
        while i + record::HEADER_LEN <= n && i < HEADER_SCAN_CHUNK {
            if let Some(h) = RecordHeader::decode(&buf[i..]) {
                if h.generation == generation && h.db_id == db_id {
                    out.push(at + i as u64);
                }
            }
            i += record::PACK;
        }
        at += HEADER_SCAN_CHUNK as u64;
    }
    Ok(out)
}

/// What opening does with the journal files of the directory once the log is replayed.
pub(crate) struct Sorted {
    /// Files of this database, every record of which is now in the data file: recycled or
    /// removed by the caller. Their generations are at most `max_generation`.
    pub retired: Vec<(u64, PathBuf)>,
    /// The largest generation of a record of this database: the header's, or one that verified.
    /// The next file gets a larger one; a file name never decides it.
    pub max_generation: u64,
    /// Files set aside as `<name>.ignored` (counted in `Stats::stray_journal_files`).
    pub set_aside: u64,
}

impl Sorted {
    /// Once the header records the replay (every file retired): keep up to `kept` of the retired
    /// files for recycling (returned, oldest first), delete the others.
    pub(crate) fn keep_retired(self, storage: &dyn Storage, kept: usize) -> Result<Vec<(u64, PathBuf)>> {
        let mut recyclable = Vec::new();
        for (g, p) in self.retired {
            if recyclable.len() < kept {
                recyclable.push((g, p));
            } else {
                storage.remove(&p).ctx("remove retired journal")?;
            }
        }
        Ok(recyclable)
    }
}

/// Sort the journal files after replay (`end` is the replay's scan). A file earns trust only by
/// what it holds, never by its name:
/// - At or past the header's generation (read to the end by the scan): a file in which a record
///   of this database verified is retired; one that holds none is removed when it is one of
///   ours (a new file never written: zeros, or a recycled file whose old records carry another
///   generation) and set aside otherwise (`*.jnl.ignored`, never read again).
/// - Below it (every record flushed, nothing to replay), or the header's own file when nothing
///   after the header's offset verified: retired when its first block is zeros or a record
///   header of this database, set aside otherwise.
///
/// So the next generation is above every record of this database and above every file name
/// left in the directory: a stray file cannot move it, nor be clobbered by a new one.
pub(crate) fn sort_files(
    storage: &dyn Storage,
    header: &Header,
    paths: BTreeMap<u64, PathBuf>,
    end: &ScanEnd,
) -> Result<Sorted> {
    let mut out = Sorted { retired: Vec::new(), max_generation: header.journal_gen, set_aside: 0 };
    for (g, p) in paths {
        if end.verified.contains(&g) {
            out.max_generation = out.max_generation.max(g);
            out.retired.push((g, p));
            continue;
        }
        let ours = first_block_is_ours(storage, &p, header.db_id)?;
        if g <= header.journal_gen && ours {
            out.retired.push((g, p));
        } else if ours {
            storage.remove(&p).ctx("remove unused journal file")?;
        } else {
            let aside = set_aside(storage, &p)?;
            eprintln!(
                "jackdaw: {} holds no journal record of this database; renamed to {} and ignored",
                p.display(),
                aside.display()
            );
            out.set_aside += 1;
        }
    }
    Ok(out)
}

/// Whether a journal file's first block is zeros (a new file never written) or starts with a
/// record header of database `db_id` (of any generation).
fn first_block_is_ours(storage: &dyn Storage, path: &Path, db_id: u64) -> Result<bool> {
    let f = storage.open(path, OpenMode::ReadWrite).ctx("open journal file")?;
    if f.len().ctx("journal length")? < BLOCK as u64 {
        return Ok(false);
    }
    let mut first = vec![0u8; BLOCK];
    f.read_exact_at(&mut first, 0).ctx("read journal")?;
    Ok(first.iter().all(|b| *b == 0) || RecordHeader::decode(&first).is_some_and(|h| h.db_id == db_id))
}

/// Rename `path` to `<name>.ignored` (or `<name>.ignored.N` if that exists) and sync the directory.
fn set_aside(storage: &dyn Storage, path: &Path) -> Result<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("journal");
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut aside = dir.join(format!("{name}.ignored"));
    let mut n = 1;
    while storage.exists(&aside) {
        aside = dir.join(format!("{name}.ignored.{n}"));
        n += 1;
    }
    storage.rename(path, &aside).ctx("set aside a stray journal file")?;
    storage.sync_dir(dir, SyncSite::JournalDir).ctx("sync journal directory")?;
    Ok(aside)
}

/// Replay every record after the header into the data file (not synced: the caller syncs and
/// writes the header). Returns where the log ended.
///
/// A record's `next_page` is trusted only once it is justified: records may not lower the
/// high-water mark, and after the whole chain is applied every page in `[header.next_page,
/// end.next_page)` that no replayed record names must be marked free in the recovered bitmap
/// (`check_unnamed_pages_free`). Only then is the data file grown to `end.next_page`; nothing
/// grows it before, so a forged `next_page` costs no disk space and no memory.
pub(crate) fn replay(
    storage: &dyn Storage,
    dir: &Path,
    header: &Header,
    data: &DataFile,
) -> Result<(ScanEnd, BTreeMap<u64, PathBuf>)> {
    let paths = list(storage, dir, true)?;
    let ps = data.page_size;
    // Pages the data file holds before recovery (it is not grown until every check passed).
    let file_pages = data.len() / ps as u64;
    let mut pages: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut written_once: HashMap<u64, u64> = HashMap::new();
    let mut high = header.next_page;
    let end = scan(storage, &paths, header, |h, payload| {
        if h.next_page < high {
            return Err(Error::corrupted(
                None,
                format!("journal record {} lowers the page high-water mark from {high} to {}", h.txid, h.next_page),
            ));
        }
        high = h.next_page;
        payload.for_each_entry(h.page_count, ps, &mut |e| {
            if e.pgno < crate::data::file::FIRST_BITMAP_PAGE || e.pgno >= h.next_page {
                return Err(Error::corrupted(
                    Some(e.pgno),
                    format!("journal record {} names a page outside [2, {})", h.txid, h.next_page),
                ));
            }
            if e.kind == record::EntryKind::WrittenOnce {
                let mut c = [0u8; 8];
                c.copy_from_slice(e.data);
                written_once.insert(e.pgno, u64::from_le_bytes(c));
                pages.remove(&e.pgno);
                return Ok(());
            }
            written_once.remove(&e.pgno);
            let page = match pages.entry(e.pgno) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let mut buf = vec![0u8; ps];
                    // A base past the end of the file reads as zeros (what growing it would give).
                    if e.kind == record::EntryKind::Diff && e.pgno < file_pages {
                        data.read_page(e.pgno, &mut buf)?;
                    }
                    v.insert(buf)
                }
            };
            // Not verified yet: a diff replayed over a newer version the flusher already wrote
            // gives a valid page only once the last record touching it is applied. Nor is the
            // base verified when read: a flush cut by a power loss can leave it torn (sectors of
            // two versions), which fails its own checksum and yet rebuilds correctly, since each
            // byte is one of two versions that the later records' diffs agree on outside the
            // ranges they set. Damage of any other kind is caught below, once the page is whole.
            record::apply(&e, page)
        })
    })?;
    verify_rebuilt_pages(&pages)?;
    verify_written_once(data, file_pages, &written_once)?;
    check_unnamed_pages_free(data, file_pages, header.next_page, end.next_page, &pages, &written_once)?;
    // Justified now: grow the file to the recovered high-water mark (usually a no-op: commits
    // grow it durably before writing their records).
    data.ensure_pages(end.next_page)?;
    for (pgno, buf) in &pages {
        data.write_page(*pgno, buf)?;
    }
    Ok((end, paths))
}

/// Every rebuilt page must verify once its last record is applied: pages are sealed at
/// commit, so damage in a base page outside the replayed ranges is caught here.
fn verify_rebuilt_pages(pages: &BTreeMap<u64, Vec<u8>>) -> Result<()> {
    for (pgno, page) in pages {
        crate::data::page::verify(page, PageNo::new(*pgno)).map_err(|err| {
            Error::corrupted(Some(*pgno), format!("page rebuilt from the journal fails its check: {err}"))
        })?;
    }
    Ok(())
}

/// Every page written once before its journal record (page number to the record's checksum)
/// lies within the data file (`file_pages` long), and matches the checksum and verifies there.
fn verify_written_once(data: &DataFile, file_pages: u64, written_once: &HashMap<u64, u64>) -> Result<()> {
    let ps = data.page_size;
    for (&pgno, &sum) in written_once {
        let mut buf = vec![0u8; ps];
        if pgno >= file_pages {
            return Err(Error::corrupted(
                Some(pgno),
                "a page written once before its journal record lies past the end of the data file",
            ));
        }
        data.read_page(pgno, &mut buf)?;
        if crate::data::page::stored_checksum(&buf) != sum
            || crate::data::page::verify(&buf, PageNo::new(pgno)).is_err()
        {
            return Err(Error::corrupted(
                Some(pgno),
                "a page written once before its journal record does not match the record's checksum",
            ));
        }
    }
    Ok(())
}

/// The high-water mark rule of recovery: every page in `[from, to)` (pages allocated after the
/// header's state, up to the end of the log) that no replayed record names (`rebuilt` or
/// `written_once`) must be marked free in the recovered bitmap. A transaction that raises
/// `next_page` journals every page it leaves in use, and the pages it allocates and frees again
/// without journaling them are free (bit 1) as of its commit; a later transaction that reuses
/// one journals it. So the rule holds for every legitimate log, and a forged `next_page` breaks
/// it: pages past the old mark have bit 0 (invariant 1 of `txn/alloc.rs`).
///
/// Bounded: one page buffer; the bitmap page of each section the range touches must be named by
/// a replayed record unless it lies below `from` (the header's state), so the sections visited
/// number at most one more than the named pages, and each costs one bitmap page's bits. A
/// section whose bitmap page no record wrote fails at once, however large the range.
fn check_unnamed_pages_free(
    data: &DataFile,
    file_pages: u64,
    from: u64,
    to: u64,
    rebuilt: &BTreeMap<u64, Vec<u8>>,
    written_once: &HashMap<u64, u64>,
) -> Result<()> {
    if from >= to {
        return Ok(());
    }
    let g = Geometry::new(data.page_size);
    let named = |p: u64| rebuilt.contains_key(&p) || written_once.contains_key(&p);
    let mut buf = vec![0u8; data.page_size];
    let mut k = g.section_of(from);
    while let Some(first) = k.checked_mul(g.section).filter(|f| *f < to) {
        let bp = g.bitmap_page(k);
        let bitmap: &[u8] = if let Some(p) = rebuilt.get(&bp) {
            p
        } else if bp < from || written_once.contains_key(&bp) {
            // Part of the header's state, or written once (and already checked): in the file.
            if bp >= file_pages {
                return Err(Error::corrupted(Some(bp), "free-space bitmap page lies past the end of the data file"));
            }
            data.read_page(bp, &mut buf)?;
            crate::data::page::verify(&buf, PageNo::new(bp))
                .map_err(|err| Error::corrupted(Some(bp), format!("free-space bitmap page fails its check: {err}")))?;
            &buf
        } else {
            return Err(Error::corrupted(
                Some(bp),
                format!(
                    "the journal raises the page high-water mark from {from} to {to}, but no replayed record writes \
                     page {bp}, the free-space bitmap of section {k}"
                ),
            ));
        };
        if crate::data::page::page_kind(bitmap) != Some(crate::data::page::PageKind::FreeMap) {
            return Err(Error::corrupted(Some(bp), "free-space bitmap page has another kind"));
        }
        let (lo, hi) = (from.max(first) - first, to.min(first.saturating_add(g.section)) - first);
        let bits = &bitmap[PAGE_HEADER..];
        let mut i = lo;
        while i < hi {
            if i.is_multiple_of(8) && i + 8 <= hi && bits[(i / 8) as usize] == 0xff {
                i += 8;
                continue;
            }
            if bits[(i / 8) as usize] & (1 << (i % 8)) == 0 && !named(first + i) {
                return Err(Error::corrupted(
                    Some(first + i),
                    format!(
                        "the journal raises the page high-water mark from {from} to {to}, but page {} is neither \
                         written by a replayed record nor marked free",
                        first + i
                    ),
                ));
            }
            i += 1;
        }
        k += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::page::{self, PageKind};
    use crate::storage::MemStorage;

    const PS: usize = 4096;

    /// A data file of 8 pages whose section-0 bitmap (page 2) marks pages `[free_from, S)` free.
    fn data_file(free_from: u64) -> DataFile {
        let s = MemStorage::new();
        let f = s.open(Path::new("/d"), OpenMode::CreateReadWrite).unwrap();
        f.set_len(8 * PS as u64).unwrap();
        let g = Geometry::new(PS);
        let mut bm = vec![0u8; PS];
        page::init(&mut bm, 2, PageKind::FreeMap);
        for p in free_from..g.section {
            let (b, m) = g.bit(p);
            bm[b] |= m;
        }
        page::seal(&mut bm, PageNo::new(2), crate::TxId::new(1));
        f.write_all_at(&bm, 2 * PS as u64).unwrap();
        DataFile::open(f, PS).unwrap()
    }

    fn bitmap(pgno: u64, free: std::ops::Range<u64>) -> Vec<u8> {
        let g = Geometry::new(PS);
        let mut bm = vec![0u8; PS];
        page::init(&mut bm, pgno, PageKind::FreeMap);
        for p in free {
            let (b, m) = g.bit(p);
            bm[b] |= m;
        }
        page::seal(&mut bm, PageNo::new(pgno), crate::TxId::new(2));
        bm
    }

    fn check(d: &DataFile, from: u64, to: u64, rebuilt: &BTreeMap<u64, Vec<u8>>) -> std::result::Result<(), String> {
        check_unnamed_pages_free(d, 8, from, to, rebuilt, &HashMap::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn unnamed_pages_past_the_header_mark_must_be_free() {
        let s = Geometry::new(PS).section;
        let none = BTreeMap::new();
        // Pages 10.. are free in the file's bitmap: any mark inside section 0 is justified.
        let d = data_file(10);
        assert_eq!(check(&d, 10, 10, &none), Ok(()));
        assert_eq!(check(&d, 10, 500, &none), Ok(()));
        assert_eq!(check(&d, 10, s, &none), Ok(()));
        // Page 9 is in use and no record names it.
        let e = check(&d, 9, 500, &none).unwrap_err();
        assert!(e.contains("page 9 is neither written by a replayed record nor marked free"), "{e}");
        // Unless a record names it.
        let named: BTreeMap<u64, Vec<u8>> = [(9, vec![0u8; PS])].into();
        assert_eq!(check(&d, 9, 500, &named), Ok(()));
        // Section 1's bitmap page (page S) was written by no record: rejected at once, however far
        // the mark goes.
        for to in [s + 1, s + 5, 1 << 40, u64::MAX] {
            let t0 = std::time::Instant::now();
            let e = check(&d, 10, to, &none).unwrap_err();
            assert!(e.contains(&format!("page {s}, the free-space bitmap of section 1")), "{e}");
            assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        }
        // A rebuilt bitmap for section 1 (its own page in use, the rest free) justifies it.
        let rebuilt: BTreeMap<u64, Vec<u8>> = [(s, bitmap(s, s + 1..2 * s))].into();
        assert_eq!(check(&d, 10, s + 5, &rebuilt), Ok(()));
        assert_eq!(check(&d, 10, 2 * s, &rebuilt), Ok(()));
        assert!(check(&d, 10, 2 * s + 1, &rebuilt).unwrap_err().contains("section 2"));
        // A rebuilt section-1 page that is not a bitmap, or one with an unnamed page in use.
        let mut leaf = bitmap(s, s + 1..2 * s);
        page::init(&mut leaf, s, PageKind::Leaf);
        page::seal(&mut leaf, PageNo::new(s), crate::TxId::new(2));
        assert!(check(&d, 10, s + 5, &[(s, leaf)].into()).unwrap_err().contains("another kind"));
        let holes: BTreeMap<u64, Vec<u8>> = [(s, bitmap(s, s + 3..2 * s))].into();
        assert!(check(&d, 10, s + 5, &holes).unwrap_err().contains(&format!("page {} is neither", s + 1)));
        // A section-0 bitmap that fails its check.
        let mut bad = vec![0u8; PS];
        d.read_page(2, &mut bad).unwrap();
        bad[100] ^= 1;
        d.write_page(2, &bad).unwrap();
        assert!(check(&d, 10, 500, &none).unwrap_err().contains("fails its check"));
    }
}
