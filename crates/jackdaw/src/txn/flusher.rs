//! The flusher: moves committed page versions from the page table into the data file.
//!
//! One flush, under `Core::flush_state` (it never takes the writer's lock; a writer may hold it
//! around a flush, `PageTxn::claim_free`, since no flush waits for the writer):
//! 1. `T` = the last committed transaction, or the oldest live snapshot if older (taken with every
//!    readers' lane held, whose locks snapshots take when they begin: `readers.rs`).
//! 2. Write-ahead rule: make the journal durable through `T` (`Journal::make_durable`: writes
//!    out the pending `None` records and syncs every journal file written since the last sync).
//! 3. For every page changed by a transaction in `(flushed, T]`, `pwrite` its newest version
//!    `<= T`. No snapshot reads those bytes from the data file: each one either finds a version in
//!    the page table or wants exactly the version being written.
//! 4. `fdatasync` the data file (writers and readers carry on meanwhile).
//! 5. Write the next header slot (flushed = `T`, the journal position after `T`) and sync it.
//! 6. Retire page-table versions `<= T` of those pages, the transaction log entries, and the
//!    journal files that hold only records `<= T`.

use super::core::Core;
use super::readers::Seat;
use crate::data::file::grow_step;
use crate::data::Header;
use crate::journal::Journal;
use crate::stats::{Counters, PagesByKind};
use crate::storage::SyncSite;
use crate::{Error, PageNo, Result, TxId};
use std::io::IoSlice;
use std::sync::Arc;
use std::time::Instant;

/// Run one flush now, on the caller's thread.
pub(crate) fn flush_once(core: &Arc<Core>) -> Result<()> {
    let r = flush_inner(core);
    if let Err(e) = &r {
        if !matches!(e, Error::Corrupted { .. }) {
            core.poison(e);
        }
    }
    r
}

/// Choose the flush target (the last committed transaction, or the oldest live snapshot if
/// older) and register it as a reader, with every readers' lane held, so that the page versions
/// the flush writes are not dropped by commits meanwhile (page_table invariant 4). Returns the
/// target and its reader seat.
fn pin_flush_target(core: &Core) -> Result<(TxId, Seat)> {
    let mut all = core.readers.all();
    // After `close` has finished (its own final flush runs before), the locks may be gone.
    if core.close_done.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::Closed);
    }
    // Lanes idle since the last flush let go of the versions it retired (page_table invariant 5).
    all.clear_epochs_before(core.table.era_gen());
    let last = core.readers.committed().txid;
    let t = all.oldest().map_or(last, |o| o.min(last));
    Ok((t, all.add(t, core.opts.clock.now())))
}

/// Unregisters the flush target's reader seat when the flush ends, however it ends.
struct Unregister<'a>(&'a Core, Seat);
impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.0.readers.end(self.1);
        self.0.release_lock_if_idle();
    }
}

/// Pages changed in (flushed, target], sorted and deduplicated, and where the log stands
/// after target (the high-water mark and the journal position).
fn pages_to_flush(core: &Core, target: TxId) -> Result<(Vec<PageNo>, PageNo, crate::journal::JournalPos)> {
    // Only copied under the log's lock (commits push to it): sorted outside (building an
    // ordered set there held commits up to ~10 ms per flush of 60,000 pages).
    let (mut pages, last) = {
        let log = core.txlog.lock();
        let mut pages: Vec<PageNo> = Vec::new();
        let mut last = None;
        for t in log.iter().take_while(|t| t.txid <= target) {
            pages.extend_from_slice(&t.pages);
            last = Some((t.next_page, t.journal_end));
        }
        let last = match last {
            Some((np, Some(end))) => Some((np, end)),
            Some((_, None)) => {
                return Err(Error::corrupted(None, "flusher: a visible transaction has no journal position"))
            }
            None => None,
        };
        (pages, last)
    };
    let Some((next_page, journal_end)) = last else {
        return Err(Error::corrupted(None, format!("flusher: no log entries up to transaction {target}")));
    };
    pages.sort_unstable();
    pages.dedup();
    Ok((pages, next_page, journal_end))
}

/// Write each page's version as of `target` to the data file, counting their kinds in
/// `kinds`; returns the bytes written. Runs of consecutive pages are coalesced into one
/// vectored write (pages were sealed at commit).
fn write_page_runs(core: &Core, pages: &[PageNo], target: TxId, kinds: &mut PagesByKind) -> Result<u64> {
    let mut bytes = 0u64;
    let mut i = 0;
    let mut hint = crate::data::WriteBack::default();
    while i < pages.len() {
        let mut bufs = Vec::new();
        let mut j = i;
        while j < pages.len() && (j == i || pages[j] == pages[j - 1].next()) && bufs.len() < 256 {
            let b = core
                .table
                .get(pages[j], target)
                .ok_or_else(|| Error::corrupted_at(pages[j], "flusher: page version missing from the page table"))?;
            kinds.count(crate::data::page::page_kind(&b));
            bufs.push(b);
            j += 1;
        }
        let slices: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
        core.data.write_pages(pages[i].get(), &slices)?;
        // Start writing the pages back as the flush goes (after the previous span has gone),
        // so that the final sync is short and journal writes never queue behind the whole
        // flush: one hint per 1,024 pages written, not one per run.
        hint.add(&core.data, pages[i].get(), (j - i) as u64);
        bytes += bufs.iter().map(|b| b.len() as u64).sum::<u64>();
        i = j;
    }
    hint.finish(&core.data);
    Ok(bytes)
}

fn flush_inner(core: &Arc<Core>) -> Result<()> {
    let mut header = core.flush_state.lock();
    if let Some(m) = core.poisoned.lock().as_ref() {
        return Err(Error::Poisoned(m.clone()));
    }
    let t0 = Instant::now();
    let (target, slot) = pin_flush_target(core)?;
    let _pin = Unregister(core, slot);
    if target <= header.flushed_txid {
        return Ok(());
    }
    core.journal_bytes_at_flush
        .store(Counters::get(&core.counters.journal_bytes_stored), std::sync::atomic::Ordering::Relaxed);
    Journal::make_durable(&core.journal, target.get())?;
    let (pages, next_page, journal_end) = pages_to_flush(core, target)?;
    let mut kinds = PagesByKind::default();
    core.flush_torn.store(true, std::sync::atomic::Ordering::Relaxed);
    let bytes = write_page_runs(core, &pages, target, &mut kinds)?;
    if !pages.is_empty() {
        // (Pages written once were synced by their own commit.)
        core.data.sync(SyncSite::DataFlush)?;
        core.counters.synced(SyncSite::DataFlush);
    }
    let next = Header {
        revision: header.revision + 1,
        flushed_txid: target.get(),
        next_page: next_page.get(),
        journal_gen: journal_end.generation,
        journal_offset: journal_end.offset,
        ..*header
    };
    core.data.write_header(&next)?;
    core.counters.synced(SyncSite::Header);
    *header = next;
    core.flush_torn.store(false, std::sync::atomic::Ordering::Relaxed);
    core.flushed_txid.store(target.get(), std::sync::atomic::Ordering::Relaxed);
    core.table.retire(&pages, target);
    {
        let mut log = core.txlog.lock();
        let flushed: u64 = log.iter().take_while(|t| t.txid <= target).map(|t| t.journal_bytes).sum();
        log.retain(|t| t.txid > target);
        core.counters.journal_unflushed_bytes.fetch_sub(flushed, std::sync::atomic::Ordering::Relaxed);
    }
    let doomed = core.space.lock().retire(target.get());
    doomed.remove()?;
    Counters::add(&core.counters.flushes, 1);
    Counters::add(&core.counters.flushed_pages, pages.len() as u64);
    if core.opts.flush_log {
        eprintln!(
            "jackdaw flush: txid {target}, {} pages, {bytes} bytes, {:.1} ms; by kind: {kinds}",
            pages.len(),
            t0.elapsed().as_secs_f64() * 1e3,
        );
    }
    Ok(())
}

/// The free space a growth ahead needs, in steps (`grow_ahead`).
const GROW_AHEAD_ROOM: u64 = 2;

/// Grow the data file ahead of the writer (by `grow_step`: an eighth of a big file) when its
/// high-water mark is past 7/8 of the file. A commit that grows the file syncs it, and that sync
/// also writes whatever the flusher has written to the file and not synced yet: 3-6 ms per growth
/// in `examples/rndtx 10000 buff`, in the commit. Here, on the background thread (woken by the
/// commit that passes the mark, unless that commit wrote pages once: the next such commit grows
/// the file itself, made durable by the sync of its own pages), no commit waits. Only the
/// background thread does this: a `Manual` environment's calls stay exactly those its caller
/// asked for (the fault tests count on it). A full disk is not an error
/// here (nothing refers to the new pages; the commit that needs them reports it); a failed sync
/// is (`grow_to` says `Poisoned`).
///
/// The growth is speculative, so it is not tried when the file system has less than twice the
/// step free (`GROW_AHEAD_ROOM`): a growth that does not fit takes every free block before it
/// fails and gives them back (tmpfs allocates page by page, then undoes), and a commit that needs
/// a journal file meanwhile fails on a full disk (CI met it: `disk_full.rs`'s small tmpfs, a
/// commit right after space was freed); one that just fits leaves nothing for the journal. The
/// commits grow the file by what they need themselves.
fn grow_ahead(core: &Core) -> Result<()> {
    let high = core.prepared.lock().next_page;
    if !core.grow_due(high.get()) {
        return Ok(());
    }
    let pages = core.data.len() / core.page_size as u64;
    let step = grow_step(pages);
    let bytes = step.saturating_mul(core.page_size as u64);
    if !core.data.has_room(bytes.saturating_mul(GROW_AHEAD_ROOM)) {
        return Ok(());
    }
    match core.data.grow_to(pages + step) {
        Err(e @ Error::Poisoned(_)) => Err(e),
        _ => Ok(()),
    }
}

/// The background thread: flushes when unflushed versions pass the threshold, when asked, and
/// after the idle interval if anything is unflushed; grows the data file ahead of the writer
/// (`grow_ahead`); makes the journal durable without a flush when a commit asks
/// (`Journal::sync_ahead_due`); once the writer is idle, the page-buffer pool is trimmed back to
/// its floor (`PageTable::trim_pool`). Exits on `stop`.
pub(crate) fn run(core: Arc<Core>) {
    // Idle = no commit since the last look, for `flush_idle`.
    let mut last_commits = Counters::get(&core.counters.commits);
    let mut quiet_since = core.opts.clock.now();
    loop {
        let (requested, sync_journal) = {
            let mut c = core.flusher_ctl.lock();
            if !c.requested && !c.sync_journal && !c.stop {
                // At most `flush_idle` while pages wait for an idle flush, a quarter second when
                // there are none; never no wait at all (`flush_idle(0)` made the thread spin).
                let most = std::time::Duration::from_millis(250);
                let wait = match core.table.pages() {
                    0 => most,
                    _ => core.opts.flush_idle.clamp(std::time::Duration::from_millis(1), most),
                };
                core.flusher_cv.wait_for(&mut c, wait);
            }
            if c.stop {
                return;
            }
            (std::mem::take(&mut c.requested), std::mem::take(&mut c.sync_journal))
        };
        // Commits nudge the thread when several journal files hold unsynced records (journal
        // writer invariant 6); a flush below makes them durable anyway.
        if sync_journal && !requested && !core.flush_due() {
            let through = core.journal.lock().last_txid();
            if let Err(e) = Journal::make_durable(&core.journal, through) {
                core.poison(&e);
            }
        }
        if sync_journal {
            core.sync_nudged.store(false, std::sync::atomic::Ordering::Release);
        }
        // Commits nudge the thread when the data file is 7/8 full.
        if let Err(e) = grow_ahead(&core) {
            core.poison(&e);
        }
        let now = core.opts.clock.now();
        let commits = Counters::get(&core.counters.commits);
        if commits != last_commits {
            last_commits = commits;
            quiet_since = now;
        }
        let quiet = now.saturating_sub(quiet_since) >= core.opts.flush_idle;
        let idle = core.table.pages() > 0 && quiet;
        let due = requested || core.flush_due() || idle;
        let r = due.then(|| flush_once(&core));
        if quiet {
            // The buffers kept for a burst of commits go back to the allocator (after the
            // flush: its retire sets the pool's cap).
            core.table.trim_pool();
        }
        let Some(r) = r else { continue };
        let mut c = core.flusher_ctl.lock();
        c.runs += 1;
        if let Err(e) = r {
            c.last_error = Some(e);
        }
        core.flusher_cv.notify_all();
    }
}
