//! File descriptors and pinned bytes (faults issue §2). Each case runs in a child process (this
//! test binary re-executed as `fd_child`, an `#[ignore]`d test) whose descriptor limit is lowered
//! to 256 with `setrlimit`, so that an engine whose descriptors grow with the number of journal
//! files fails there with `EMFILE` (as it did: a reader held while 2 GB were written poisoned the
//! writer at 509 files; 64 KiB journal files exhausted the descriptors within a second; recovery
//! opened every journal file at once).
//!
//! - `long_reader`: a snapshot held while the writer rewrites the same keys: the writer gets
//!   `Error::PinnedLimit` (naming the reader's age) once the unflushed journal passes
//!   `max_pinned_bytes`, never an I/O error or a poisoned environment; the snapshot still reads
//!   its version; once it ends, writes go on and the journal directory shrinks back.
//! - `tiny_files`: 64 KiB journal files under the default 64 MiB flush threshold (about 1,000
//!   files between flushes): no error.
//! - `recovery_write` then `recovery_open`: 1,500 journal files never flushed (manual flusher), the
//!   process aborted; a second child opens the database with the same limit: everything is there.
//!
//! In every case the process's open descriptors stay under a small bound (`/proc/self/fd`).

mod common;
use common::{noise, TestDb};

use jackdaw::{Durability, Env, Error, FlusherMode, Options};
use std::path::Path;
use std::process::Command;

const ENV_CASE: &str = "JACKDAW_FD_CASE";
const ENV_DIR: &str = "JACKDAW_FD_DIR";
/// The children's descriptor limit.
const NOFILE: u64 = 256;
/// What the engine may have open on top of what the test harness had at the start.
const ENGINE_FDS: usize = 24;

fn lower_fd_limit() {
    let lim = libc::rlimit { rlim_cur: NOFILE as libc::rlim_t, rlim_max: NOFILE as libc::rlim_t };
    // SAFETY (test code): setrlimit with a valid pointer to an initialised struct.
    #[allow(unsafe_code)]
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    assert_eq!(r, 0, "setrlimit(RLIMIT_NOFILE, {NOFILE})");
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn journal_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("journal"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".jnl")).count())
        .unwrap_or(0)
}

/// Runs `case` in a child with the lowered limit; returns its output, failing on a failed child.
fn run_child(case: &str, dir: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fd_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ENV_CASE, case)
        .env(ENV_DIR, dir)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("--- child {case}:\n{text}");
    text
}

fn child_ok(case: &str, dir: &Path) {
    let text = run_child(case, dir);
    assert!(text.contains(&format!("CASE {case} OK")), "child {case} failed:\n{text}");
}

/// The child: runs the case named in the environment (does nothing when run on its own).
#[test]
#[ignore = "run by the tests of this file in a child process"]
fn fd_child() {
    let (Ok(case), Ok(dir)) = (std::env::var(ENV_CASE), std::env::var(ENV_DIR)) else { return };
    lower_fd_limit();
    let base = open_fds();
    let dir = Path::new(&dir);
    let bound = base + ENGINE_FDS;
    match case.as_str() {
        "long_reader" => long_reader(dir, bound),
        "tiny_files" => tiny_files(dir, bound),
        "recovery_write" => recovery_write(dir, bound),
        "recovery_open" => recovery_open(dir, bound),
        other => panic!("unknown case {other}"),
    }
    println!("CASE {case} OK (descriptors at start {base}, bound {bound})");
    if case == "recovery_write" {
        // A crash: nothing of close() runs.
        std::process::abort();
    }
}

fn long_reader(dir: &Path, bound: usize) {
    const CAP: u64 = 48 << 20;
    let opts = Options::default().journal_file_bytes(64 << 10).max_pinned_bytes(CAP).durability(Durability::Buffered);
    let env = Env::open(dir, opts).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in 0..64u64 {
        tx.put(&t, k.to_be_bytes(), noise(k, 1000)).unwrap();
    }
    tx.commit().unwrap();
    let old = env.read().unwrap();
    let mut max_fds = 0;
    let mut refused = None;
    // Each commit rewrites every key: ~64 KiB of journal, one 64 KiB file each.
    for round in 1..=3 * (CAP >> 16) {
        let r = env.write().and_then(|mut tx| {
            for k in 0..64u64 {
                tx.put(&t, k.to_be_bytes(), noise(round * 1000 + k, 1000))?;
            }
            tx.commit()
        });
        max_fds = max_fds.max(open_fds());
        match r {
            Ok(_) => {}
            Err(e @ Error::PinnedLimit { .. }) => {
                refused = Some((round, e));
                break;
            }
            Err(e) => panic!("round {round}: {e} (journal files {}, fds {})", journal_files(dir), open_fds()),
        }
    }
    let (round, e) = refused.expect("the writer was never refused while the reader pinned the journal");
    let files_when_refused = journal_files(dir);
    println!("refused at round {round} with {files_when_refused} journal files, max fds {max_fds}: {e}");
    match &e {
        Error::PinnedLimit { pinned_bytes, cap_bytes, oldest_reader_age } => {
            assert!(*pinned_bytes > *cap_bytes && *cap_bytes == CAP, "{e}");
            assert!(oldest_reader_age.is_some(), "the error names the oldest reader's age: {e}");
        }
        _ => unreachable!(),
    }
    assert!(files_when_refused > 200, "the test must pass the old descriptor limit: {files_when_refused} files");
    assert!(max_fds <= bound, "{max_fds} descriptors open, over {bound}");
    // The reader still reads its snapshot; the environment is not poisoned.
    assert_eq!(old.get(&t, 5u64.to_be_bytes()).unwrap().unwrap().as_ref(), noise(5, 1000).as_slice());
    let s = env.stats();
    let pinned = s.readers.iter().map(|r| r.pinned_bytes).max().unwrap();
    // Distinct bytes: 64 keys in a few leaves, not one leaf per commit, plus the journal.
    let journal: u64 = round * (64 << 10);
    assert!(pinned < journal + (8 << 20), "pinned_bytes {pinned} counts rewrites of the same pages again");
    assert!(pinned > CAP / 2, "pinned_bytes {pinned} misses the journal the reader holds");
    drop(old);
    // Writes go on, and the flush they trigger lets the journal shrink back.
    for round in 0..4u64 {
        let mut tx = env.write().unwrap();
        tx.put(&t, 0u64.to_be_bytes(), noise(round, 1000)).unwrap();
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    let after = journal_files(dir);
    println!("journal files: {files_when_refused} while pinned, {after} after the reader ended and a flush");
    assert!(after <= 6 + 2, "the journal did not shrink back: {after} files");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
}

fn tiny_files(dir: &Path, bound: usize) {
    let opts = Options::default().journal_file_bytes(64 << 10).durability(Durability::Buffered);
    let env = Env::open(dir, opts).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let mut max_fds = 0;
    let mut max_files = 0;
    // ~150 MiB of journal in 64 KiB files: several flush thresholds' worth.
    for round in 0..2400u64 {
        let mut tx = env.write().unwrap();
        for k in 0..64u64 {
            tx.put(&t, (round % 8 * 64 + k).to_be_bytes(), noise(round * 64 + k, 1000)).unwrap();
        }
        tx.commit().unwrap_or_else(|e| panic!("round {round}: {e}"));
        max_fds = max_fds.max(open_fds());
        if round % 100 == 0 {
            max_files = max_files.max(journal_files(dir));
        }
    }
    println!("max fds {max_fds}, max journal files seen {max_files}");
    assert!(max_fds <= bound, "{max_fds} descriptors open, over {bound}");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
}

/// Rounds of `recovery_write`, one 64 KiB journal file each.
const RECOVERY_ROUNDS: u64 = 1500;

fn recovery_write(dir: &Path, bound: usize) {
    let opts =
        Options::default().journal_file_bytes(64 << 10).flusher(FlusherMode::Manual).durability(Durability::Buffered);
    let env = Env::open(dir, opts).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let mut max_fds = 0;
    for round in 0..RECOVERY_ROUNDS {
        let mut tx = env.write().unwrap();
        for k in 0..40u64 {
            tx.put(&t, (round * 40 + k).to_be_bytes(), noise(round * 40 + k, 1000)).unwrap();
        }
        if round + 1 == RECOVERY_ROUNDS {
            tx.set_durability(Durability::Sync);
        }
        tx.commit().unwrap_or_else(|e| panic!("round {round}: {e}"));
        max_fds = max_fds.max(open_fds());
    }
    let files = journal_files(dir);
    println!("{files} journal files unflushed, max fds {max_fds}");
    assert!(files > 1000, "the case needs more than 1,000 journal files, has {files}");
    assert!(max_fds <= bound, "{max_fds} descriptors open, over {bound}");
}

fn recovery_open(dir: &Path, bound: usize) {
    let env = Env::open(dir, Options::default()).unwrap();
    assert!(open_fds() <= bound, "{} descriptors open after recovery, over {bound}", open_fds());
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().expect("tree t");
    let n = r.range(&t, ..).unwrap().count() as u64;
    assert_eq!(n, RECOVERY_ROUNDS * 40, "entries after recovery");
    for i in [0, 777, RECOVERY_ROUNDS * 40 - 1] {
        assert_eq!(r.get(&t, i.to_be_bytes()).unwrap().unwrap().as_ref(), noise(i, 1000).as_slice(), "key {i}");
    }
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
}

#[test]
fn a_long_reader_meets_the_pinned_limit_not_the_descriptor_limit() {
    let dir = TestDb::dir("fd-long-reader");
    child_ok("long_reader", dir.path());
}

#[test]
fn tiny_journal_files_do_not_exhaust_descriptors() {
    let dir = TestDb::dir("fd-tiny");
    child_ok("tiny_files", dir.path());
}

#[test]
fn recovery_reads_thousands_of_journal_files_one_at_a_time() {
    let dir = TestDb::dir("fd-recovery");
    let text = run_child("recovery_write", dir.path());
    assert!(text.contains("CASE recovery_write OK"), "the writing child failed:\n{text}");
    child_ok("recovery_open", dir.path());
}
