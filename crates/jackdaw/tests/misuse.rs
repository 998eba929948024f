//! Misuse of the API must fail at once with a typed error, never hang or let a second process in.
//!
//! - A thread that holds the write transaction (or is inside `check_with`'s callback, which runs
//!   under the writer lock and the flush lock) and calls something that would wait for that same
//!   lock gets `Error::Busy`. Every such call runs on a thread of its own, watched with a 10 s
//!   deadline, so that a regression fails instead of hanging the suite.
//! - `check()` on a poisoned environment says `Poisoned`, not "corrupted".
//! - The inter-process lock: the test binary re-executes itself as a child (`lock_child`, an
//!   `#[ignore]`d test) that tries to open the parent's database; it must get `Error::Locked`
//!   naming the directory and the parent's PID, also after the parent deleted the `lock` file.
//!   And the other side of it: a database this process closed opens again at once while other
//!   threads spawn children (which hold copies of the closed descriptors, and so of its lock,
//!   until they exec).

mod common;
mod fault;

use common::*;
use fault::inject::{Call, Fault, FaultStorage, Plan};
use jackdaw::internals::MemStorage;
use jackdaw::{Durability, Env, Error, FlusherMode, Options, WriteBatch};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

fn mem_opts() -> Options {
    Options::default().storage(Arc::new(MemStorage::new())).flusher(FlusherMode::Manual)
}

/// Run `f` on a thread of its own; its result, or a failure naming `what` after the deadline.
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {DEADLINE:?} (it waits for a lock its own thread holds)"),
    }
}

fn busy_naming_the_thread(what: &str, r: Result<(), Error>) {
    match r {
        Err(Error::Busy(m)) => {
            assert!(m.contains("this thread"), "{what}: Busy({m:?}) should say this thread holds it")
        }
        other => panic!("{what}: expected Busy, got {other:?}"),
    }
}

/// `write()`, `try_write()`, `check()`, `check_with()` and `write_batch()` on the thread that
/// holds the write transaction: `Busy` at once (before the fix `write()`, `check()` and
/// `check_with()` waited for the same thread forever). `flush()` does not need the writer lock
/// and succeeds; the transaction then still commits.
#[test]
fn calls_that_need_the_writer_lock_on_the_writer_thread_are_busy() {
    let env = TestDb::with_opts("misuse", mem_opts());
    let results = within_deadline("calls on the writer thread", move || {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.put(&t, "k", "v").unwrap();
        let out = vec![
            ("write", env.write().map(|_| ())),
            ("try_write", env.try_write().map(|_| ())),
            ("check", env.check().and_then(jackdaw::CheckReport::into_result).map(|_| ())),
            ("check_with", env.check_with(|_| Ok(Vec::new())).and_then(jackdaw::CheckReport::into_result).map(|_| ())),
            ("write_batch", {
                let mut b = WriteBatch::new();
                b.put(&t, "k2", "v2");
                env.write_batch(b)
            }),
        ];
        let flush = env.flush();
        let commit = tx.commit().map(|_| ());
        let check = env.check().and_then(jackdaw::CheckReport::into_result).map(|_| ());
        (out, flush, commit, check)
    });
    let (out, flush, commit, check) = results;
    for (what, r) in out {
        busy_naming_the_thread(what, r);
    }
    flush.unwrap();
    commit.unwrap();
    check.unwrap();
}

/// Inside `check_with`'s callback the thread holds the writer lock and the flush lock: every call
/// that would take one of them again fails with `Busy` instead of deadlocking.
#[test]
fn calls_inside_check_with_are_busy() {
    let env = TestDb::with_opts("misuse", mem_opts());
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "k", "v").unwrap();
    tx.commit().unwrap();
    let e2 = env.clone();
    let (out, check) = within_deadline("calls inside check_with", move || {
        let mut out = Vec::new();
        let check = e2
            .check_with(|_| {
                out.push(("write", e2.write().map(|_| ())));
                out.push(("try_write", e2.try_write().map(|_| ())));
                out.push(("check", e2.check().and_then(jackdaw::CheckReport::into_result).map(|_| ())));
                out.push(("check_with", e2.check_with(|_| Ok(Vec::new())).map(|_| ())));
                out.push(("flush", e2.flush()));
                out.push(("close", e2.close()));
                let mut b = WriteBatch::new();
                b.put(&t, "k2", "v2");
                out.push(("write_batch", e2.write_batch(b)));
                Ok(Vec::new())
            })
            .and_then(jackdaw::CheckReport::into_result);
        (out, check.map(|_| ()))
    });
    for (what, r) in out {
        busy_naming_the_thread(what, r);
    }
    // The callback listed no page: check() reports leaks (not a hang, not a panic).
    assert!(matches!(check, Err(Error::Corrupted { .. })), "{check:?}");
    // Nothing was closed or changed by the refused calls.
    let mut tx = env.write().unwrap();
    let t = tx.open_tree("t").unwrap().unwrap();
    tx.put(&t, "k3", "v3").unwrap();
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
}

/// `close()` on the writer thread does not wait for itself (it already did not; kept here so
/// that the list of calls examined has a test each): the open transaction's commit then fails
/// with `Closed`.
#[test]
fn close_on_the_writer_thread_does_not_hang() {
    let env = TestDb::with_opts("misuse", mem_opts());
    let (close, commit) = within_deadline("close on the writer thread", move || {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.put(&t, "k", "v").unwrap();
        let close = env.close();
        (close, tx.commit().map(|_| ()))
    });
    // Closed, but this thread's write transaction kept the lock until it ended: `close` says so.
    assert!(matches!(close, Err(Error::Busy(_))), "{close:?}");
    assert!(matches!(commit, Err(Error::Closed)), "{commit:?}");
}

/// The index of the first call of kind `kind` that `op` makes, counted from the start of `setup`.
fn first_call_in(
    kind: Call,
    setup: impl Fn(&Env),
    op: impl Fn(&Env) -> Result<(), Error>,
) -> (u64, impl Fn() -> (FaultStorage, Env)) {
    let mem = MemStorage::new();
    let fs = FaultStorage::new(mem.clone(), None);
    let env = Env::open("/misuse/db", mem_opts().storage(Arc::new(fs.clone()))).unwrap();
    setup(&env);
    let from = fs.calls().len();
    op(&env).unwrap();
    let at = fs.calls()[from..].iter().position(|c| *c == kind).expect("the operation makes such a call") + from;
    drop(env);
    let make = move || {
        let fs =
            FaultStorage::new(MemStorage::new(), Some(Plan { at: at as u64, fault: Fault::Eio, persistent: false }));
        let env = Env::open("/misuse/db", mem_opts().storage(Arc::new(fs.clone()))).unwrap();
        (fs, env)
    };
    (at as u64, make)
}

/// `check()` on an environment poisoned by a failed journal write says `Poisoned` (it used to
/// report "database corrupted": the journal chain ends before what the journal thought written).
#[test]
fn check_on_a_poisoned_env_is_poisoned() {
    let setup = |env: &Env| {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.put(&t, "a", "1").unwrap();
        tx.commit().unwrap();
    };
    let op = |env: &Env| {
        let mut tx = env.write()?;
        let t = tx.open_tree("t")?.unwrap();
        tx.put(&t, "b", "2")?;
        tx.set_durability(Durability::Sync);
        tx.commit().map(|_| ())
    };
    let (_, make) = first_call_in(Call::Write, setup, op);
    let (fs, env) = make();
    setup(&env);
    assert!(matches!(op(&env), Err(Error::Io { .. })));
    assert!(fs.fired().is_some());
    let r = env.check().and_then(jackdaw::CheckReport::into_result);
    assert!(matches!(r, Err(Error::Poisoned(_))), "check() on a poisoned env: {r:?}");
    let r = env.check_with(|_| Ok(Vec::new())).and_then(jackdaw::CheckReport::into_result);
    assert!(matches!(r, Err(Error::Poisoned(_))), "check_with() on a poisoned env: {r:?}");
}

// ---------------------------------------------------------------------------------------------
// The inter-process lock.

const ENV_DIR: &str = "JACKDAW_LOCK_CHILD_DIR";
const MARK: &str = "@@jackdaw-lock@@ ";

/// The child: open the database in `JACKDAW_LOCK_CHILD_DIR` and print what happened. Started by
/// the lock tests; without the variable it does nothing.
#[test]
#[ignore = "child process of the lock tests, started by them"]
fn lock_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else { return };
    match Env::open(&dir, test_opts()) {
        Ok(env) => {
            // It got in: write, to show what a second writer would do.
            let mut tx = env.write().unwrap();
            let t = tx.create_tree("child").unwrap();
            tx.put(&t, "k", "v").unwrap();
            tx.commit().unwrap();
            println!("{MARK}OPENED");
        }
        Err(e @ Error::Locked { .. }) => println!("{MARK}LOCKED {e}"),
        Err(e) => println!("{MARK}ERROR {e:?}"),
    }
}

fn run_child(dir: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ENV_DIR, dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .find_map(|l| l.find(MARK).map(|i| &l[i + MARK.len()..]))
        .unwrap_or_else(|| panic!("no result line: {stdout}"))
        .to_string()
}

fn assert_locked_by_me(dir: &Path, line: &str) {
    let me = std::process::id();
    let msg = line.strip_prefix("LOCKED ").unwrap_or_else(|| panic!("the child was not refused: {line}"));
    println!("the child was refused: {msg}");
    assert!(msg.contains(&dir.display().to_string()), "the message does not name the path: {msg}");
    assert!(msg.contains(&format!("process {me}")), "the message does not name the holder {me}: {msg}");
    assert!(!msg.contains("Some(") && !msg.contains("None"), "the message shows an Option: {msg}");
}

/// A second process while the database is open: `Locked`, naming the directory and our PID.
#[test]
fn second_process_is_locked_out() {
    let dir = TestDb::dir("lock-proc");
    let env = Env::open(&dir, test_opts()).unwrap();
    let line = run_child(dir.as_ref());
    assert_locked_by_me(dir.as_ref(), &line);
    drop(env);
    // Released: the child gets in now. (Another test of this binary spawns children as fast as
    // it can: one forked at the wrong moment holds a copy of the lock's descriptor until its
    // exec, and a foreign process cannot tell that copy from a live `Env`, so a refusal is
    // retried for up to two seconds.)
    let give_up = std::time::Instant::now() + Duration::from_secs(2);
    let mut line = run_child(dir.as_ref());
    while line.starts_with("LOCKED") && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
        line = run_child(dir.as_ref());
    }
    assert_eq!(line, "OPENED");
    let env = Env::open(&dir, test_opts()).unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    // Without a known holder the message still reads as a sentence.
    let msg = Error::Locked { path: dir.path().to_path_buf(), pid: None }.to_string();
    assert!(
        msg.contains(&dir.path().display().to_string()) && !msg.contains("None") && msg.ends_with("close it first"),
        "{msg}"
    );
}

/// Deleting the `lock` file while the database is open does not let a second process in: the
/// data file itself is locked too (before the fix the child opened the database and wrote).
#[test]
fn deleting_the_lock_file_does_not_let_a_second_process_in() {
    let dir = TestDb::dir("lock-deleted");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "k", "v").unwrap();
    tx.commit().unwrap();
    std::fs::remove_file(dir.as_ref().join("lock")).unwrap();
    let line = run_child(dir.as_ref());
    assert_locked_by_me(dir.as_ref(), &line);
    // The same process cannot open it twice either.
    assert!(matches!(Env::open(&dir, test_opts()), Err(Error::Locked { .. })));
    let mut tx = env.write().unwrap();
    let t = tx.open_tree("t").unwrap().unwrap();
    tx.put(&t, "k2", "v2").unwrap();
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    assert!(env.read().unwrap().open_tree("child").unwrap().is_none(), "the child wrote");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A batch submitted before this thread began a write transaction, waited for while it holds
/// it: the merger can never take the writer lock, so `wait()` must answer at once (`Busy`, or
/// the outcome if the batch was already committed) instead of waiting forever; the batch still
/// commits once the transaction ends. Racy by nature (the merger may win), so it runs 200 rounds
/// and prints how many met the held lock; every round must answer within the deadline.
#[test]
fn batch_wait_on_the_writer_thread_does_not_hang() {
    let env = TestDb::with_opts("misuse", mem_opts());
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let (busy, done) = within_deadline("BatchHandle::wait on the writer thread", move || {
        let (mut busy, mut done) = (0, 0);
        for i in 0u32..200 {
            let mut b = WriteBatch::new();
            b.put(&t, i.to_be_bytes(), b"v");
            let h = env.write_batch_async(b);
            let tx = env.write().unwrap();
            match h.wait() {
                Ok(()) => done += 1,
                Err(Error::Busy(m)) => {
                    assert!(m.contains("holds the write transaction"), "{m}");
                    busy += 1;
                }
                Err(e) => panic!("round {i}: {e}"),
            }
            drop(tx);
            // Committed either way, once the transaction ended.
            let mut n = 0;
            while env.read().unwrap().get(&t, i.to_be_bytes()).unwrap().is_none() {
                n += 1;
                assert!(n < 10_000, "round {i}: the batch never committed");
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        (busy, done)
    });
    println!("batch_wait_on_the_writer_thread_does_not_hang: {busy} rounds met the held lock, {done} found the batch committed");
    assert_eq!(busy + done, 200);
}

/// Close and open one database 100 times while two threads spawn children as fast as they can:
/// every child holds copies of this process's descriptors from its fork to its exec, the lock
/// of a database closed a moment ago included, so an open could meet this process's own lock
/// held by no live `Env`. It must wait that moment out, not fail with `Locked` (test suites and
/// servers that spawn processes met it). A second open while the first `Env` lives is still
/// refused at once.
#[test]
fn reopening_while_other_threads_spawn_children_is_not_locked() {
    let dir = TestDb::dir("lock-fork");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spawners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    Command::new("true").status().expect("spawn true");
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut waited = Duration::ZERO;
    for i in 0..100u32 {
        let t0 = std::time::Instant::now();
        let env = Env::open(&dir, test_opts()).unwrap_or_else(|e| panic!("open {i}: {e}"));
        waited = waited.max(t0.elapsed());
        let t0 = std::time::Instant::now();
        assert!(matches!(Env::open(&dir, test_opts()), Err(Error::Locked { .. })), "second open {i} not refused");
        assert!(t0.elapsed() < Duration::from_millis(500), "a second open waited {:?} to be refused", t0.elapsed());
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.put(&t, i.to_be_bytes(), b"v").unwrap();
        tx.commit().unwrap();
        env.close().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let children: u64 = spawners.into_iter().map(|h| h.join().unwrap()).sum();
    println!("100 opens while {children} children were spawned; longest open {waited:?}");
    let env = Env::open(&dir, test_opts()).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().expect("tree t");
    assert_eq!(r.tree_stats(&t).unwrap().entries, 100);
}
