//! `Env::stats`: counters, the allocator's and the journal's state, live readers.

use super::core::{Core, TxRecord};
use crate::data::file::FIRST_BITMAP_PAGE;
use crate::ids::{PageNo, TxId};
use crate::stats::{Counters, ReaderInfo, Stats};
use crate::storage::{JournalIo, SyncSite};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;

/// What a snapshot of `txid` keeps from being retired (`ReaderInfo::pinned_bytes`): the distinct
/// pages changed after it, each counted once however often it was rewritten, plus the journal
/// records written after it.
fn pinned_by(log: &VecDeque<TxRecord>, txid: TxId, page_size: u64) -> u64 {
    let later = log.iter().filter(|t| t.txid > txid);
    let pages: HashSet<PageNo> = later.clone().flat_map(|t| t.pages.iter().copied()).collect();
    pages.len() as u64 * page_size + later.map(|t| t.journal_bytes).sum::<u64>()
}

/// A picture of the environment (`Env::stats`).
pub(crate) fn stats(core: &Core) -> Stats {
    let c = &core.counters;
    let committed = core.committed();
    let free_pages = core.alloc.lock().total_free();
    let now = core.opts.clock.now();
    let readers: Vec<(TxId, std::time::Duration)> = core.readers.list();
    let readers = {
        let log = core.txlog.lock();
        readers
            .into_iter()
            .map(|(txid, start)| ReaderInfo {
                txid,
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
    let pages_in_use = committed.next_page.get() - free_pages - FIRST_BITMAP_PAGE;
    Stats {
        page_size: core.page_size,
        pages_in_use,
        used_bytes: pages_in_use * core.page_size as u64,
        free_pages,
        next_page: committed.next_page.get(),
        data_file_bytes: core.data.len(),
        slack_bytes: core.data.len().saturating_sub(committed.next_page.get().saturating_mul(core.page_size as u64)),
        journal_file_bytes,
        journal_files,
        journal_files_created: Counters::get(&c.journal_files_created),
        journal_files_recycled: Counters::get(&c.journal_files_recycled),
        journal_files_prepared: Counters::get(&c.journal_files_prepared),
        stray_journal_files: Counters::get(&c.stray_journal_files),
        journal_io: io.map_or("no journal file opened yet", JournalIo::name),
        last_committed_txid: committed.txid,
        last_flushed_txid: TxId::new(core.flushed_txid.load(Ordering::Relaxed)),
        oldest_reader_txid: readers.iter().map(|r| r.txid).min(),
        readers,
        scratch_bytes: core.table.bytes(),
        retired_kept_bytes: core.table.kept_bytes(),
        pooled_bytes: core.table.pooled_bytes(),
        commits: Counters::get(&c.commits),
        journal_writes: Counters::get(&c.journal_writes),
        journal_direct_writes: Counters::get(&c.journal_direct_writes),
        journal_bytes_full: Counters::get(&c.journal_bytes_full),
        journal_bytes_raw: Counters::get(&c.journal_bytes_raw),
        journal_bytes_written: Counters::get(&c.journal_bytes_stored),
        flushes: Counters::get(&c.flushes),
        flushed_pages: Counters::get(&c.flushed_pages),
        written_once_pages: Counters::get(&c.written_once_pages),
        written_once_reused_pages: Counters::get(&c.written_once_reused_pages),
        spilled_pages: Counters::get(&c.spilled_pages),
        overflow_run_reads: core.data.run_reads.load(Ordering::Relaxed),
        syncs: SyncSite::ALL
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
