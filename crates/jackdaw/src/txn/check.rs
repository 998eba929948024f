//! `Env::check`'s checks of the transaction layer's state: header slots, the free-space map
//! against the allocator, every page in use, reachability of what the layer above reports, and
//! the journal chain against the writer. The trees' own check is the tree layer's
//! (`tree/check.rs`), reached through the `reachable` callback.

use super::alloc::{any_set_from, count_set_bits, AllocSummary, Geometry};
use super::core::Core;
use super::Snapshot;
use crate::data::file::{FIRST_BITMAP_PAGE, FIRST_FREE_PAGE, META_PAGE};
use crate::data::page::{self, PageKind};
use crate::data::{DataFile, Header};
use crate::journal::{self, recovery};
use crate::stats::{CheckReport, Problem, ProblemKind};
use crate::{Error, PageNo, Result};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `Env::check`: verify the header slots, the free-space map, every page in use, reachability
/// (the pages `reachable` reports, with the live bytes it counted, from the same snapshot) and the journal chain, with the
/// writer and the flusher held still so that all of them describe one state.
pub(crate) fn check<F>(core: &Arc<Core>, reachable: F) -> Result<CheckReport>
where
    F: FnOnce(&Arc<Snapshot>, &mut Vec<Problem>) -> (Vec<u64>, u64),
{
    // A thread holding the write transaction (or inside `check_with`) would wait for itself.
    if core.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    super::write::refuse_if_held(core)?;
    // Hold the writer and the flusher still so the allocator summary, snapshot and journal agree.
    let _w = core.writer.lock();
    if core.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    let _mark = super::write::CheckMark::new(core);
    wait_for_pipelined_commits(core);
    // After a write failure the files may lack what memory holds: not "corrupted", poisoned.
    if let Some(m) = core.poisoned.lock().as_ref() {
        return Err(Error::Poisoned(m.clone()));
    }
    // And the flusher: the header and the journal files must not move while they are read.
    let flush_state = core.flush_state.lock();
    let header = *flush_state;
    let rtx = Snapshot::begin(core)?;
    let committed_txid = core.committed().txid.get();
    let g = Geometry::new(core.page_size);
    use ProblemKind as K;
    let mut problems: Vec<Problem> = Vec::new();
    let mut report = CheckReport::default();
    let next_page = rtx.next_page().get();

    // 1. Header slots.
    if let Err(e) = DataFile::read_headers(core.data.file.as_ref()) {
        problems.push(Problem::from_error(K::Header, None, None, "header slots: ", &e));
    }
    // 2. Free-space map.
    let free_set = check_free_space_map(core, &rtx, &g, next_page, &mut report, &mut problems);
    // 3. Every page in use: checksum, number, kind.
    check_pages_in_use(&rtx, &free_set, next_page, &mut report, &mut problems);
    // 4. Reachability: what the trees (or the caller) use.
    let (pages, live_bytes) = reachable(&rtx, &mut problems);
    report.live_bytes = live_bytes;
    check_reachability(pages, &free_set, &g, next_page, &mut report, &mut problems);
    // 5. The journal chain after the header, and the journal files against the header and the
    //    writer.
    check_journal_chain(core, &header, committed_txid, &mut report, &mut problems);
    // 6. The page table's slots against its versions (page_table invariant 6).
    for (pgno, detail) in core.table.check_slots() {
        problems.push(Problem::new(K::PageTable, Some(pgno.get()), None, detail));
    }
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
    rtx: &Snapshot,
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
    rtx: &Snapshot,
    g: &Geometry,
    summary: &AllocSummary,
    k: u64,
    next_page: u64,
    free_set: &mut HashSet<u64>,
    problems: &mut Vec<Problem>,
) {
    use ProblemKind as K;
    let bp = g.bitmap_page(k);
    let p = match rtx.page(PageNo::new(bp)) {
        Ok(p) => p,
        Err(e) => {
            problems.push(Problem::from_error(K::FreeSpaceMap, Some(bp), None, &format!("bitmap page {bp}: "), &e));
            return;
        }
    };
    if page::page_kind(p) != Some(PageKind::FreeMap) {
        problems.push(Problem::new(
            K::FreeSpaceMap,
            Some(bp),
            None,
            format!("page {bp}: expected a free-space bitmap page"),
        ));
        return;
    }
    let limit = (next_page - k * g.section).min(g.section);
    let n = count_set_bits(p, limit);
    if summary.free.get(k as usize) != Some(&n) {
        let counted = summary.free.get(k as usize).map_or_else(|| "no such section".to_string(), u64::to_string);
        problems.push(Problem::new(
            K::FreeSpaceMap,
            Some(bp),
            None,
            format!("section {k}: bitmap has {n} free pages, the allocator counts {counted}"),
        ));
    }
    if any_set_from(p, limit) {
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
    rtx: &Snapshot,
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
        match rtx.page(PageNo::new(pgno)) {
            Ok(p) => {
                if let Err(e) = page::verify(p, PageNo::new(pgno)) {
                    problems.push(Problem::from_error(K::PageChecksum, Some(pgno), None, "", &e));
                } else if pgno == META_PAGE && page::page_kind(p) != Some(PageKind::Meta) {
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
