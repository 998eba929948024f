//! Real process crashes: the test binary re-executes itself as a child that commits in a loop
//! with `Durability::Sync` and acknowledges each commit on stdout once `commit` has returned. The
//! parent kills it with SIGKILL after a seeded number of acknowledgements (or lets it
//! `abort()` right after a commit), then checks that every acknowledged commit survived.
//!
//! Page contents make the last committed state checkable: an anchor page (page 4, the first page
//! a new database allocates; page 3 belongs to the tree catalog) holds
//! `[counter u64, n u64, pgno u64 * n]`, and each of those `n` raw pages holds `counter` (as
//! `common::fill` writes it). Commit number `c` sets the counter to `c`, rewrites every listed
//! page, and sometimes allocates or frees some, so the page set and the free map change too.
//!
//! After a kill the parent verifies a copy of the crashed directory (so the next child recovers
//! the crash state itself, and may in turn be killed in the middle of recovery): the counter must
//! be at least the last acknowledged one and at most one more (the child may have been killed
//! between commit and printing), every listed page must hold it, and `check_with` must pass.
//!
//! Seeded: prints the seed; `JACKDAW_SEED=<n>` replays the same kill schedule (the exact point in
//! the child's work where SIGKILL lands is up to the OS scheduler).

mod common;

use common::*;
use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{Durability, Env, FlusherMode, Options, ReadTxn, WriteTxn};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

const ENV_DIR: &str = "JACKDAW_CHILD_DIR";
const ENV_SEED: &str = "JACKDAW_CHILD_SEED";
const ENV_MODE: &str = "JACKDAW_CHILD_MODE";
const ENV_FLUSHER: &str = "JACKDAW_CHILD_FLUSHER";
/// Prefix of the child's protocol lines.
const MARK: &str = "@@jackdaw@@ ";
/// The page holding the child's state: the first page allocated in a new database.
const ANCHOR: u64 = 4;
/// The child keeps at most this many pages listed in the meta page.
const MAX_PAGES: usize = 48;

// ---------------------------------------------------------------------------------------------
// State stored in the database.

/// (counter, pages) of the snapshot; (0, []) before the first commit.
fn read_meta(r: &ReadTxn) -> (u64, Vec<u64>) {
    if r.next_page() <= ANCHOR {
        return (0, Vec::new());
    }
    let p = r.page(ANCHOR).unwrap();
    let b = &p[PAGE_HEADER..];
    let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    let (counter, n) = (word(0), word(1) as usize);
    assert!(n <= MAX_PAGES, "meta page lists {n} pages");
    (counter, (0..n).map(|i| word(2 + i)).collect())
}

fn write_meta(tx: &mut WriteTxn, counter: u64, pages: &[u64]) {
    let p = tx.page_mut(ANCHOR).unwrap();
    let b = &mut p[PAGE_HEADER..];
    b[0..8].copy_from_slice(&counter.to_le_bytes());
    b[8..16].copy_from_slice(&(pages.len() as u64).to_le_bytes());
    for (i, pg) in pages.iter().enumerate() {
        b[16 + i * 8..24 + i * 8].copy_from_slice(&pg.to_le_bytes());
    }
    // Clear a stale tail so a shorter list leaves no ghost entries.
    let end = 16 + pages.len() * 8;
    b[end..16 + MAX_PAGES * 8].fill(0);
}

fn child_opts(flusher: &str) -> Options {
    let o = test_opts().durability(Durability::Sync);
    match flusher {
        // A flusher that runs often, so kills land in flushes too.
        "background" => {
            o.flusher(FlusherMode::Background).flush_threshold_bytes(64 << 10).flush_idle(Duration::from_millis(5))
        }
        _ => o.flusher(FlusherMode::Manual),
    }
}

/// Verify a database at rest: returns (txid, counter). Panics with the details otherwise.
/// Recover the database of `db` and verify it; its live pages become the fixture's drop check's.
fn verify_db(db: &TestDb) -> (u64, u64) {
    let dir = db.path();
    let env = Env::open(dir, test_opts()).unwrap_or_else(|e| panic!("recovery of {} failed: {e}", dir.display()));
    let r = env.read().unwrap();
    let txid = r.txid().get();
    let (counter, pages) = read_meta(&r);
    for &p in &pages {
        assert_eq!(read_value(&r, p), counter, "page {p} of the state with counter {counter} (txid {txid})");
    }
    let anchored = r.next_page() > ANCHOR;
    drop(r);
    let live: Vec<u64> = pages.into_iter().chain(anchored.then_some(ANCHOR)).collect();
    db.raw_pages(live.clone());
    check_pages(&env, live);
    env.close().unwrap();
    (txid, counter)
}

// ---------------------------------------------------------------------------------------------
// The child.

/// The child process's body. `#[ignore]`d so that a normal test run does not start it on its
/// own: the parent tests run it with `--ignored --exact child_writer` and pass the database
/// directory in `JACKDAW_CHILD_DIR`. Run without that variable (`cargo test -- --ignored`), it
/// returns at once.
#[test]
#[ignore = "child process of the crash tests, started by them"]
fn child_writer() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let seed: u64 = std::env::var(ENV_SEED).unwrap().parse().unwrap();
    let mode = std::env::var(ENV_MODE).unwrap();
    let flusher = std::env::var(ENV_FLUSHER).unwrap();
    let abort_at: Option<u64> = mode.strip_prefix("abort:").map(|n| n.parse().unwrap());
    let mut rng = Rng::new(seed);
    let out = std::io::stdout();
    let say = |line: String| {
        let mut o = out.lock();
        // A marker: libtest's own "test child_writer ... " may share the first line. If the
        // parent is gone, stop.
        if writeln!(o, "{MARK}{line}").and_then(|_| o.flush()).is_err() {
            std::process::exit(3);
        }
    };
    say("START".into());
    let env = Env::open(&dir, child_opts(&flusher)).unwrap();
    let r = env.read().unwrap();
    let (mut counter, mut pages) = read_meta(&r);
    say(format!("OPENED {} {counter}", r.txid().get()));
    drop(r);
    for _ in 0..20_000 {
        counter += 1;
        let mut tx = env.write().unwrap();
        if tx.next_page() <= ANCHOR {
            assert_eq!(tx.alloc_page(PageKind::Raw).unwrap(), ANCHOR, "the first page of a new database");
        }
        match rng.below(10) {
            0..=2 if pages.len() < MAX_PAGES => {
                for _ in 0..rng.range(1, 4) {
                    if pages.len() < MAX_PAGES {
                        pages.push(tx.alloc_page(PageKind::Raw).unwrap());
                    }
                }
            }
            3 | 4 if pages.len() > 1 => {
                for _ in 0..rng.range(1, 2).min(pages.len() as u64 - 1) {
                    let i = rng.below(pages.len() as u64) as usize;
                    tx.free_page(pages.swap_remove(i)).unwrap();
                }
            }
            _ => {}
        }
        for &p in &pages {
            fill(&mut tx, p, counter);
        }
        write_meta(&mut tx, counter, &pages);
        let st = tx.commit().unwrap();
        say(format!("ACK {} {counter}", st.txid));
        if abort_at == Some(counter) {
            // Die without closing: nothing after the commit runs (no flush, no close).
            std::process::abort();
        }
        if flusher == "manual" && rng.chance(1, 12) {
            env.flush().unwrap();
        }
    }
    panic!("child ran 20000 commits without being killed");
}

// ---------------------------------------------------------------------------------------------
// The parent.

struct ChildProc {
    child: Child,
    out: BufReader<ChildStdout>,
    err: Option<std::thread::JoinHandle<String>>,
}

impl ChildProc {
    fn spawn(dir: &Path, seed: u64, mode: &str, flusher: &str) -> ChildProc {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--exact", "child_writer", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, dir)
            .env(ENV_SEED, seed.to_string())
            .env(ENV_MODE, mode)
            .env(ENV_FLUSHER, flusher)
            .env_remove("JACKDAW_SEED")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut e = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        });
        ChildProc { child, out, err: Some(err) }
    }

    /// Next protocol line (lines of the test harness are skipped); None at end of output.
    fn line(&mut self) -> Option<String> {
        loop {
            let mut l = String::new();
            if self.out.read_line(&mut l).unwrap() == 0 {
                return None;
            }
            if let Some(i) = l.find(MARK) {
                return Some(l[i + MARK.len()..].trim_end().to_string());
            }
        }
    }

    /// Wait for the child to end and return (status, stderr).
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let st = self.child.wait().unwrap();
        let err = self.err.take().unwrap().join().unwrap();
        (st, err)
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        // Never leave a writer running behind a failed test.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn parse_ack(l: &str) -> (u64, u64) {
    let mut it = l.split_whitespace().skip(1).map(|x| x.parse::<u64>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// Durable state the parent knows of: (txid, counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Known {
    txid: u64,
    counter: u64,
}

/// Follow a child's output until it ends; returns the last acknowledged state (or `start`).
fn drain(c: &mut ChildProc, mut last: Known, expect_open: Known) -> Known {
    while let Some(l) = c.line() {
        if let Some(rest) = l.strip_prefix("OPENED ") {
            let (t, n) = parse_ack(&format!("X {rest}"));
            assert_eq!(Known { txid: t, counter: n }, expect_open, "the child recovered another state");
        } else if l.starts_with("ACK ") {
            let (t, n) = parse_ack(&l);
            assert_eq!((t, n), (last.txid + 1, last.counter + 1), "acknowledgements out of order");
            last = Known { txid: t, counter: n };
        }
    }
    last
}

#[test]
fn sigkill_loses_no_acknowledged_commit() {
    let seed = seed_or("sigkill_loses_no_acknowledged_commit", 0x5eed_c0de);
    let _g = OnPanic(format!("sigkill_loses_no_acknowledged_commit: replay with JACKDAW_SEED={seed}"));
    let mut rng = Rng::new(seed);
    let dir = TestDb::dir("crash-proc");
    // The state the database recovers to (verified on a copy after each round).
    let mut known = Known { txid: 0, counter: 0 };
    let mut stats = (0u64, 0u64, 0u64); // kills, acks, rounds where the unacked commit survived
    for round in 0..20 {
        let flusher = if rng.chance(1, 2) { "background" } else { "manual" };
        // 0: kill on "START" (possibly during recovery); else after that many ACKs.
        let kill_after = if rng.chance(1, 6) { 0 } else { rng.range(1, 150) };
        let child_seed = rng.next_u64();
        let _r = OnPanic(format!("round {round}: {flusher} flusher, kill after {kill_after} ACKs, known {known:?}"));
        let mut c = ChildProc::spawn(dir.path(), child_seed, "kill", flusher);
        let mut last = known;
        let mut acks = 0u64;
        let mut opened = false;
        loop {
            let Some(l) = c.line() else {
                let (st, err) = c.finish();
                panic!("child ended before the kill ({st}); stderr:\n{err}");
            };
            if kill_after == 0 && l == "START" {
                break;
            }
            if let Some(rest) = l.strip_prefix("OPENED ") {
                let (t, n) = parse_ack(&format!("X {rest}"));
                assert_eq!(Known { txid: t, counter: n }, known, "the child recovered another state");
                opened = true;
            } else if l.starts_with("ACK ") {
                assert!(opened);
                let (t, n) = parse_ack(&l);
                assert_eq!((t, n), (last.txid + 1, last.counter + 1), "acknowledgements out of order");
                last = Known { txid: t, counter: n };
                acks += 1;
                if acks == kill_after {
                    break;
                }
            }
        }
        c.child.kill().unwrap();
        // Acknowledgements printed before the kill landed count too.
        let last = drain(&mut c, last, known);
        let (st, _err) = c.finish();
        assert!(!st.success(), "the child was killed: {st}");
        stats.0 += 1;
        stats.1 += last.counter - known.counter;

        // Verify a copy: the crashed original is what the next child recovers.
        let copy = TestDb::dir("crash-proc-verify");
        copy_dir(dir.path(), copy.path());
        let (txid, counter) = verify_db(&copy);
        drop(copy);
        assert!(
            counter == last.counter || counter == last.counter + 1,
            "recovered counter {counter} (txid {txid}); last acknowledged {last:?}"
        );
        assert_eq!(txid - known.txid, counter - known.counter, "one transaction per counter step");
        if counter > last.counter {
            stats.2 += 1;
        }
        known = Known { txid, counter };
    }
    // The last crash, recovered in place.
    let (txid, counter) = verify_db(&dir);
    assert_eq!(Known { txid, counter }, known);
    println!(
        "{} kills, {} acknowledged commits, {} rounds where the unacknowledged last commit survived; final state {known:?}",
        stats.0, stats.1, stats.2
    );
}

#[test]
fn abort_right_after_commit_loses_nothing() {
    let seed = seed_or("abort_right_after_commit_loses_nothing", 0xab0_57ed);
    let _g = OnPanic(format!("abort_right_after_commit_loses_nothing: replay with JACKDAW_SEED={seed}"));
    let mut rng = Rng::new(seed);
    let dir = TestDb::dir("crash-abort");
    let mut known = Known { txid: 0, counter: 0 };
    for round in 0..3 {
        let flusher = if round % 2 == 0 { "manual" } else { "background" };
        let n = rng.range(1, 80);
        let target = known.counter + n;
        let _r = OnPanic(format!("round {round}: {flusher} flusher, abort at counter {target}"));
        let mut c = ChildProc::spawn(dir.path(), rng.next_u64(), &format!("abort:{target}"), flusher);
        let last = drain(&mut c, known, known);
        let (st, err) = c.finish();
        assert!(!st.success(), "the child aborted: {st}; stderr:\n{err}");
        assert_eq!(last.counter, target, "the child acknowledged every commit up to the abort; stderr:\n{err}");
        // Nothing ran after the last commit, so the state is exactly the last acknowledged one.
        let (txid, counter) = verify_db(&dir);
        assert_eq!(Known { txid, counter }, last);
        known = last;
    }
}
