//! Closing an environment (DURABILITY §8.3): refuse new transactions, let pipelined commits
//! write their records, stop the flusher, flush, make the journal durable, delete the journal
//! files and give the data file's slack back, then release the locks (now, or when the last
//! live transaction ends).

use super::core::Core;
use super::flusher;
use crate::journal::Journal;
use crate::sync::thread::JoinHandle;
use crate::sync::Mutex;
use crate::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What `close` says when transactions still hold the environment's locks.
const STILL_LOCKED: &str = "closed, but read or write transactions of this Env (or keys and values, `Bytes`, read \
                            from one) are still open; the database stays locked until the last of them ends";

pub(crate) fn close(core: &Arc<Core>, flusher: &Mutex<Option<JoinHandle<()>>>) -> Result<()> {
    // Let an active write transaction of another thread finish first (unless this thread holds
    // it: it would wait for itself; that transaction's commit then fails with `Closed`).
    let writer = if super::write::held_by_this_thread(core) { None } else { Some(core.writer.lock()) };
    if core.closed.swap(true, Ordering::AcqRel) {
        // Closed already: `Ok` only if nothing failed (a failed write must never read as `Ok`).
        return match core.poisoned.lock().as_ref() {
            Some(m) => Err(Error::Poisoned(m.clone())),
            None if core.lock.lock().is_some() && core.close_done.load(Ordering::Acquire) => {
                Err(Error::Busy(STILL_LOCKED))
            }
            None => Ok(()),
        };
    }
    drop(writer);
    // From here no lane keeps an epoch (a begin that sees `closed` does not keep the one it
    // makes): let go of those kept, with their maps of the data file and their hold on the
    // environment (the cycle `read::Epoch` describes), before the file may be cut.
    core.readers.all().clear_epochs();
    let r = if core.opts.read_only { Ok(()) } else { close_files(core, flusher) };
    // Nothing of this Env writes from here on: the locks go now, or with the last transaction.
    let all = core.readers.all();
    core.close_done.store(true, Ordering::Release);
    let released = core.release_lock_if_idle_in(&all);
    drop(all);
    match r {
        Ok(()) if !released => Err(Error::Busy(STILL_LOCKED)),
        r => r,
    }
}

/// The work of `close` after refusing new transactions: the last commits' records, the
/// flusher's stop, the final flush and journal sync.
fn close_files(core: &Arc<Core>, flusher: &Mutex<Option<JoinHandle<()>>>) -> Result<()> {
    // Commits prepared before the close get their records written (pipelined commits).
    {
        let mut j = core.journal.lock();
        let prepared = core.prepared.lock().txid;
        core.journal_cv
            .wait_while(&mut j, |j| core.committed().txid < prepared && !j.failed() && core.poisoned.lock().is_none());
    }
    if let Some(h) = flusher.lock().take() {
        core.flusher_ctl.lock().stop = true;
        core.flusher_cv.notify_all();
        let _ = h.join();
    }
    core.space.lock().discard_spare();
    if core.poisoned.lock().is_some() {
        return Err(Error::Poisoned("closed after a write failure".into()));
    }
    flusher::flush_once(core)?;
    let last = core.committed().txid;
    // A failed journal write or sync poisons, here too (so that a second `close` is not `Ok`).
    Journal::make_durable(&core.journal, last.get()).inspect_err(|e| core.poison(e))?;
    // Everything is in the data file (unless a live snapshot held the flush back): the journal's
    // files are of no further use, so a closed database is its data file alone. No directory
    // sync: a file that comes back after a power loss holds only flushed records, and opening
    // retires it (DURABILITY §3).
    if core.flushed_txid.load(Ordering::Acquire) >= last.get() {
        let doomed = core.space.lock().release_all(last.get());
        doomed.remove().inspect_err(|e| core.poison(e))?;
        // The growth slack goes back to the file system when nothing maps the old length: no
        // snapshot alive (checked with every readers' lane held; none can begin, the
        // environment is closed) and no write transaction on this thread.
        let all = core.readers.all();
        if all.live() == 0 && !super::write::held_by_this_thread(core) {
            core.data.trim_to(core.readers.committed().next_page.get()).inspect_err(|e| core.poison(e))?;
        }
    }
    Ok(())
}
