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
use crate::data::{DataFile, Header};
use crate::error::IoContext;
use crate::storage::{OpenMode, Storage, StorageFile};
use crate::{Error, Result};
use std::collections::{BTreeMap, HashMap};
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
}

struct Files<'a> {
    storage: &'a dyn Storage,
    paths: &'a BTreeMap<u64, PathBuf>,
    open: HashMap<u64, (Arc<dyn StorageFile>, u64)>,
}

impl Files<'_> {
    fn get(&mut self, generation: u64) -> Result<Option<(Arc<dyn StorageFile>, u64)>> {
        if let Some(f) = self.open.get(&generation) {
            return Ok(Some(f.clone()));
        }
        let Some(p) = self.paths.get(&generation) else {
            return Ok(None);
        };
        let f = self.storage.open(p, OpenMode::ReadWrite).ctx("open journal for recovery")?;
        let len = f.len().ctx("journal length")?;
        self.open.insert(generation, (f.clone(), len));
        Ok(Some((f, len)))
    }

    /// The verified record at `pos`, if there is one.
    fn record_at(&mut self, pos: JournalPos, db_id: u64) -> Result<Option<(RecordHeader, Vec<u8>)>> {
        let Some((f, len)) = self.get(pos.generation)? else {
            return Ok(None);
        };
        if pos.offset % BLOCK as u64 != 0 || pos.offset + BLOCK as u64 > len {
            return Ok(None);
        }
        let mut first = vec![0u8; BLOCK];
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
        let mut bytes = first;
        if rl as usize > BLOCK {
            bytes.resize(rl as usize, 0);
            f.read_exact_at(&mut bytes[BLOCK..], pos.offset + BLOCK as u64).ctx("read journal")?;
        }
        Ok(record::verify_and_decode(&h, &bytes, pos.generation, db_id).map(|p| (h, p)))
    }
}

/// Walk the log from the header's position, calling `visit` for each record in order.
pub(crate) fn scan(
    storage: &dyn Storage,
    paths: &BTreeMap<u64, PathBuf>,
    header: &Header,
    mut visit: impl FnMut(&RecordHeader, &[u8]) -> Result<()>,
) -> Result<ScanEnd> {
    let mut files = Files { storage, paths, open: HashMap::new() };
    let mut pos = JournalPos { generation: header.journal_gen, offset: header.journal_offset };
    let mut expected = header.flushed_txid + 1;
    let mut next_page = header.next_page;
    let mut records = 0u64;
    loop {
        let mut found = files.record_at(pos, header.db_id)?;
        if found.is_none() {
            let next = JournalPos { generation: pos.generation + 1, offset: 0 };
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
                format!("journal record at {pos:?} is transaction {} where {expected} was expected", h.txid),
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
        let Some((_, len)) = files.get(g)? else {
            continue;
        };
        let mut off = if g == pos.generation { pos.offset } else { 0 };
        while off + BLOCK as u64 <= len {
            let p = JournalPos { generation: g, offset: off };
            if let Some((h, _)) = files.record_at(p, header.db_id)? {
                if h.txid >= expected && h.synced_through >= expected {
                    return Err(Error::corrupted(
                        None,
                        format!(
                            "journal record of transaction {} at {p:?} follows the end of the log at transaction {}: records are missing",
                            h.txid,
                            expected - 1
                        ),
                    ));
                }
            }
            off += BLOCK as u64;
        }
    }
    Ok(ScanEnd { last_txid: expected - 1, next_page, records })
}

/// Replay every record after the header into the data file (not synced: the caller syncs and
/// writes the header). Returns where the log ended.
pub(crate) fn replay(
    storage: &dyn Storage,
    dir: &Path,
    header: &Header,
    data: &DataFile,
) -> Result<(ScanEnd, BTreeMap<u64, PathBuf>)> {
    let paths = list(storage, dir, true)?;
    let ps = data.page_size;
    let mut pages: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut written_once: HashMap<u64, u64> = HashMap::new();
    let end = scan(storage, &paths, header, |h, payload| {
        data.ensure_pages(h.next_page)?;
        for e in record::entries(payload, h.page_count, ps)? {
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
                continue;
            }
            written_once.remove(&e.pgno);
            let page = match pages.entry(e.pgno) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let mut buf = vec![0u8; ps];
                    if e.kind == record::EntryKind::Diff {
                        data.read_page(e.pgno, &mut buf)?;
                    }
                    v.insert(buf)
                }
            };
            // Not verified yet: a diff replayed over a newer version the flusher already wrote
            // gives a valid page only once the last record touching it is applied.
            record::apply(&e, page)?;
        }
        Ok(())
    })?;
    // Every rebuilt page must verify once its last record is applied: pages are sealed at
    // commit, so damage in a base page outside the replayed ranges is caught here.
    for (pgno, page) in &pages {
        crate::data::page::verify(page, *pgno).map_err(|err| {
            Error::corrupted(Some(*pgno), format!("page rebuilt from the journal fails its check: {err}"))
        })?;
    }
    for (pgno, sum) in written_once {
        let mut buf = vec![0u8; ps];
        data.read_page(pgno, &mut buf)?;
        if crate::data::page::stored_checksum(&buf) != sum || crate::data::page::verify(&buf, pgno).is_err() {
            return Err(Error::corrupted(
                Some(pgno),
                "a page written once before its journal record does not match the record's checksum",
            ));
        }
    }
    for (pgno, buf) in &pages {
        data.write_page(*pgno, buf)?;
    }
    Ok((end, paths))
}
