//! I/O errors at every call (stage 2 of the fault tests; the injector is `fault/inject.rs`).
//!
//! Two deterministic workloads (Manual flusher, `MemStorage` underneath, journal files reported
//! as `O_DIRECT|O_DSYNC`):
//! - `fresh`: create a database, 30 transactions over four trees in every durability mode (small
//!   and overflow values, a streamed value, a big transaction whose pages are written once, a
//!   tree deleted and recreated, bulk loads that grow the data file), flushes, a `check()`, 64 KiB journal files (rotation, recycling
//!   and removal), `close()`;
//! - `recovery`: open a crash image with unflushed journal records (replay, header rewrite,
//!   journal clean-up), read everything, 10 more transactions, flushes, `close()`.
//!
//! A dry run counts the calls (and their kinds). Then for every call `i` and every fault that
//! applies to its kind (EIO or ENOSPC on writes, EIO on syncs and directory syncs, ENOSPC on
//! `allocate`/growing `set_len`, short reads, EIO on the other calls), the workload runs again
//! with call `i` failing, once transiently (only that call) and once for good (that call and the
//! later calls the fault applies to). Each run is inside `catch_unwind`; it must:
//! - end in a typed `Err` from the API (never a panic, never a silent success; the one exception:
//!   a transient `ENOSPC` on growing the data file, which the engine retries at exactly the size it
//!   needs (`DataFile::ensure_pages`), may succeed, and is counted as absorbed);
//! - if the failed call was a write, sync, directory sync, rename, remove or shrinking `set_len`
//!   of an open environment: `write()`/`commit()`/`flush()` afterwards return `Error::Poisoned`
//!   (`Closed` when the failure was in `close()` itself);
//! - after dropping the environment, `Env::open` over the same files with a healthy storage
//!   recovers the state after some transaction `t`, `written <= t <= attempted` (`written`: the
//!   last `Sync`/`Buffered` commit, flush or close that returned: a process-crash bound, as the
//!   files keep everything written), with exactly the model's contents for `t`, and `check()`
//!   passes, and a commit then succeeds.
//!
//! The workloads are fixed by a seed (printed; `JACKDAW_SEED` replays).

mod common;
mod fault;

use fault::inject::{Call, Fault, FaultStorage, Plan};
use fault::*;
use jackdaw::internals::{MemStorage, Storage};
use jackdaw::{Durability, Env, Error, FlusherMode, Options, WriteTxn};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DIR: &str = "/io/db";
const TREES: [&str; 3] = ["red", "green", "blue"];

fn opts(s: Arc<dyn Storage>) -> Options {
    Options::default()
        .storage(s)
        .flusher(FlusherMode::Manual)
        .journal_file_bytes(64 << 10)
        .write_once_min_pages(4)
        .max_dirty_pages(16)
        .journal_files_kept(1)
        // Commits of 8 journaled pages or more stream their records (faults issue §5), so
        // failures land between a streamed record's payload and its header too.
        .stream_record_bytes(32 << 10)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Workload {
    Fresh,
    Recovery,
}

/// What the workload has been told.
#[derive(Clone, Debug)]
struct Know {
    /// Every transaction up to here was handed to the OS (survives a process crash).
    lo: u64,
    /// The last transaction begun committing.
    hi: u64,
    digests: Vec<u128>,
}

type Failure = (&'static str, Error);

fn tree(tx: &mut WriteTxn, m: &mut Model, name: &str) -> Result<jackdaw::Tree, Failure> {
    match tx.open_tree(name).map_err(|e| ("open_tree", e))? {
        Some(t) => Ok(t),
        None => {
            m.insert(name.to_string(), BTreeMap::new());
            tx.create_tree(name).map_err(|e| ("create_tree", e))
        }
    }
}

/// One transaction `i` of a workload (deterministic in `seed` and `i`). Returns its durability.
fn txn(seed: u64, i: u64, env: &Env, m: &mut Model, k: &mut Know) -> Result<(), Failure> {
    let mut r = Rng::new(seed ^ (i + 1).wrapping_mul(0x517c_c1b7_2722_0a95));
    let mut tx = env.write().map_err(|e| ("begin", e))?;
    let txid = tx.txid().get();
    let dur = [Durability::Sync, Durability::Buffered, Durability::None, Durability::Sync][(i % 4) as usize];
    tx.set_durability(dur);
    let t = tree(&mut tx, m, TREES[(i % 3) as usize])?;
    let name = TREES[(i % 3) as usize];
    match i % 6 {
        // A streamed value (written once before the record).
        1 => {
            let v = value(seed, r.next_u64(), 20_000 + r.below(10_000) as usize);
            let key = format!("s{}", r.below(4));
            tx.put_reader(&t, &key, v.len() as u64, &v[..]).map_err(|e| ("put_reader", e))?;
            m.get_mut(name).unwrap().insert(key.into_bytes(), v);
        }
        // A big transaction: pages written once at commit.
        3 => {
            for j in 0..24 {
                let key = format!("big{:03}", (i * 7 + j) % 60);
                let v = value(seed, r.next_u64(), 600 + r.below(900) as usize);
                tx.put(&t, &key, &v).map_err(|e| ("put", e))?;
                m.get_mut(name).unwrap().insert(key.into_bytes(), v);
            }
        }
        // Delete a tree and recreate it.
        5 => {
            let other = TREES[((i + 1) % 3) as usize];
            let had = m.remove(other).is_some();
            let got = tx.delete_tree(other).map_err(|e| ("delete_tree", e))?;
            assert_eq!(got, had, "delete_tree {other}");
            let t2 = tree(&mut tx, m, other)?;
            let v = value(seed, r.next_u64(), 50);
            tx.put(&t2, "again", &v).map_err(|e| ("put", e))?;
            m.get_mut(other).unwrap().insert(b"again".to_vec(), v);
        }
        _ => {}
    }
    if i % 10 == 7 {
        // Many new pages: the data file grows.
        let b = tree(&mut tx, m, "bulk")?;
        for j in 0..80 {
            let key = format!("bulk{:03}", (i * 80 + j) % 240);
            let v = value(seed, r.next_u64(), 1200 + r.below(400) as usize);
            tx.put(&b, &key, &v).map_err(|e| ("put", e))?;
            m.get_mut("bulk").unwrap().insert(key.into_bytes(), v);
        }
    }
    for _ in 0..r.range(1, 4) {
        let key = format!("k{:02}", r.below(30)).into_bytes();
        if r.chance(1, 4) {
            let had = m.get_mut(name).unwrap().remove(&key).is_some();
            let got = tx.delete(&t, &key).map_err(|e| ("delete", e))?;
            assert_eq!(got, had, "delete");
        }
        let v = value(seed, r.next_u64(), value_len(&mut r).min(20_000));
        tx.put(&t, &key, &v).map_err(|e| ("put", e))?;
        m.get_mut(name).unwrap().insert(key, v);
    }
    assert_eq!(k.digests.len() as u64, txid);
    k.digests.push(digest(m));
    k.hi = txid;
    let st = tx.commit().map_err(|e| ("commit", e))?;
    assert_eq!(st.txid, txid);
    if dur != Durability::None {
        k.lo = txid;
    }
    Ok(())
}

/// Run a workload; the environment stays in `slot` (so a failure can be probed).
fn workload(
    w: Workload,
    seed: u64,
    s: Arc<dyn Storage>,
    slot: &mut Option<Env>,
    k: &mut Know,
    m: &mut Model,
) -> Result<(), Failure> {
    *slot = Some(Env::open(DIR, opts(s)).map_err(|e| ("open", e))?);
    let env = slot.as_ref().unwrap().clone();
    let n = match w {
        Workload::Fresh => 30,
        Workload::Recovery => {
            let (t, got) = read_db(&env).map_err(|e| ("read", e))?;
            assert!(t == k.hi && digest(&got) == k.digests[t as usize], "recovery workload opened another state");
            10
        }
    };
    for i in 0..n {
        txn(seed, i, &env, m, k)?;
        if i % 5 == 4 {
            env.flush().map_err(|e| ("flush", e))?;
            k.lo = k.hi;
        }
        if i == 8 {
            env.check().and_then(jackdaw::CheckReport::into_result).map_err(|e| ("check", e))?;
        }
    }
    env.close().map_err(|e| ("close", e))?;
    k.lo = k.hi;
    Ok(())
}

/// The starting files of a workload: (storage, knowledge, model).
fn start(w: Workload, seed: u64, base: &(MemStorage, Know, Model)) -> (MemStorage, Know, Model) {
    match w {
        Workload::Fresh => {
            (MemStorage::new(), Know { lo: 0, hi: 0, digests: vec![digest(&Model::new())] }, Model::new())
        }
        Workload::Recovery => {
            let _ = seed;
            (base.0.deep_clone(), base.1.clone(), base.2.clone())
        }
    }
}

/// The crash image the `recovery` workload starts from: a database with flushed and unflushed
/// transactions and a process-crash image of it (everything written kept, nothing closed).
fn recovery_base(seed: u64) -> (MemStorage, Know, Model) {
    let mem = MemStorage::new();
    let env = Env::open(DIR, opts(Arc::new(mem.clone()))).unwrap();
    let mut k = Know { lo: 0, hi: 0, digests: vec![digest(&Model::new())] };
    let mut m = Model::new();
    for i in 0..20 {
        txn(seed ^ 0xba5e, i, &env, &mut m, &mut k).unwrap();
        if i == 9 {
            env.flush().unwrap();
        }
    }
    // A Sync commit last, so everything is written.
    let mut tx = env.write().unwrap();
    let t = tx.open_tree(TREES[0]).unwrap().unwrap();
    tx.put(&t, "last", "x").unwrap();
    m.get_mut(TREES[0]).unwrap().insert(b"last".to_vec(), b"x".to_vec());
    k.digests.push(digest(&m));
    k.hi = tx.commit().unwrap().txid.get();
    k.lo = k.hi;
    let img = mem.deep_clone();
    drop(env);
    (img, k, m)
}

#[derive(Default)]
struct Figures {
    calls: BTreeMap<String, u64>,
    cases: u64,
    by_fault: BTreeMap<String, u64>,
    by_error: BTreeMap<String, u64>,
    by_step: BTreeMap<String, u64>,
    panics: u64,
    silent: u64,
    /// Transient `ENOSPC` on growth that the retry at the needed size absorbed.
    absorbed: u64,
    diverged: u64,
    poison_checked: u64,
    poison_ok: u64,
    reopen_ok: u64,
    recovered_latest: u64,
    violations: Vec<String>,
}

/// Progress for the watchdog: (case number, start time in ms since the test began).
static CASE: AtomicU64 = AtomicU64::new(0);
static CASE_T: AtomicU64 = AtomicU64::new(0);
static DONE: AtomicBool = AtomicBool::new(false);

fn watchdog(t0: Instant, what: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        while !DONE.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(500));
            let started = CASE_T.load(Ordering::SeqCst);
            let now = t0.elapsed().as_millis() as u64;
            if !DONE.load(Ordering::SeqCst) && now.saturating_sub(started) > 30_000 {
                eprintln!("io_errors: case {} hangs for 30 s: {}", CASE.load(Ordering::SeqCst), what.lock().unwrap());
                std::process::abort();
            }
        }
    });
}

fn run_case(w: Workload, seed: u64, base: &(MemStorage, Know, Model), plan: Plan, dry: &[Call], f: &mut Figures) {
    let (mem, mut k, mut m) = start(w, seed, base);
    let fs = FaultStorage::new(mem.clone(), Some(plan));
    let what = format!(
        "{w:?} workload, call {} ({:?}) fails with {:?}{}",
        plan.at,
        dry[plan.at as usize],
        plan.fault,
        if plan.persistent { " for good" } else { " once" }
    );
    let mut slot: Option<Env> = None;
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        workload(w, seed, Arc::new(fs.clone()), &mut slot, &mut k, &mut m)
    }));
    f.cases += 1;
    *f.by_fault
        .entry(format!("{:?} {}", plan.fault, if plan.persistent { "persistent" } else { "transient" }))
        .or_default() += 1;
    let calls = fs.calls();
    let n = (plan.at as usize).min(calls.len());
    if calls[..n] != dry[..n.min(dry.len())] || calls.get(plan.at as usize) != dry.get(plan.at as usize) {
        f.diverged += 1;
        f.violations.push(format!("{what}: the calls before the fault differ from the dry run"));
    }
    let fired = fs.fired();
    match r {
        Err(p) => {
            f.panics += 1;
            f.violations.push(format!("{what}: PANIC {}", panic_text(&*p)));
        }
        Ok(Ok(())) => {
            let retried = plan.fault == Fault::Enospc
                && !plan.persistent
                && matches!(dry.get(plan.at as usize), Some(Call::Allocate | Call::SetLenGrow));
            if retried {
                f.absorbed += 1;
            } else {
                f.silent += 1;
                f.violations.push(format!("{what}: no error reached the caller (fired: {fired:?})"));
            }
        }
        Ok(Err((step, e))) => {
            *f.by_error.entry(err_kind(&e).to_string()).or_default() += 1;
            *f.by_step.entry(step.to_string()).or_default() += 1;
            let fired_kind = fired.map(|(_, c)| c);
            if let (Some(env), Some(c)) = (slot.as_ref(), fired_kind) {
                if c.must_poison() && step != "open" {
                    f.poison_checked += 1;
                    let probe = std::panic::catch_unwind(AssertUnwindSafe(|| poison_probe(env, step == "close")));
                    match probe {
                        Ok(Ok(())) => f.poison_ok += 1,
                        Ok(Err(msg)) => f.violations.push(format!("{what}: failed in {step} with {e}; then {msg}")),
                        Err(p) => {
                            f.panics += 1;
                            f.violations.push(format!("{what}: PANIC while probing: {}", panic_text(&*p)));
                        }
                    }
                }
            }
        }
    }
    // Drop the environment (its close may fail again), then reopen over the same files.
    if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(|| drop(slot.take()))) {
        f.panics += 1;
        f.violations.push(format!("{what}: PANIC in drop: {}", panic_text(&*p)));
    }
    let re = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<(u64, u128), String> {
        let env = Env::open(DIR, opts(Arc::new(mem.clone()))).map_err(|e| format!("reopen failed: {e}"))?;
        let (t, got) = read_db(&env).map_err(|e| format!("reading after reopen: {e}"))?;
        env.check()
            .and_then(jackdaw::CheckReport::into_result)
            .map_err(|e| format!("check() after reopen at {t}: {e}"))?;
        // Reopened, the environment takes writes again.
        let mut tx = env.write().map_err(|e| format!("write() after reopen: {e}"))?;
        let tr = match tx.open_tree("after") {
            Ok(Some(tr)) => tr,
            _ => tx.create_tree("after").map_err(|e| format!("create_tree after reopen: {e}"))?,
        };
        tx.put(&tr, "k", "v").map_err(|e| format!("put after reopen: {e}"))?;
        tx.commit().map_err(|e| format!("commit after reopen: {e}"))?;
        env.close().map_err(|e| format!("close after reopen: {e}"))?;
        Ok((t, digest(&got)))
    }));
    match re {
        Err(p) => {
            f.panics += 1;
            f.violations.push(format!("{what}: PANIC in reopen: {}", panic_text(&*p)));
        }
        Ok(Err(msg)) => f.violations.push(format!("{what}: {msg}")),
        Ok(Ok((t, d))) => {
            if t < k.lo || t > k.hi {
                f.violations.push(format!("{what}: reopened at transaction {t}, written {}, attempted {}", k.lo, k.hi));
            } else if d != k.digests[t as usize] {
                f.violations.push(format!("{what}: reopened at transaction {t} with other contents (hole or mixture)"));
            } else {
                f.reopen_ok += 1;
                if t == k.hi {
                    f.recovered_latest += 1;
                }
            }
        }
    }
}

/// After a failed write or sync: the environment refuses writes until reopened.
fn poison_probe(env: &Env, closed: bool) -> Result<(), String> {
    let refused = |e: &Error| matches!(e, Error::Poisoned(_)) || (closed && matches!(e, Error::Closed));
    match env.write() {
        Err(e) if refused(&e) => {}
        Err(e) => return Err(format!("write() returned {e}, not Poisoned")),
        Ok(mut tx) => {
            let t = match tx.open_tree(TREES[0]) {
                Ok(Some(t)) => t,
                Ok(None) => tx.create_tree(TREES[0]).map_err(|e| format!("create_tree: {e}"))?,
                Err(e) => return Err(format!("open_tree: {e}")),
            };
            let _ = tx.put(&t, "probe", "probe");
            match tx.commit() {
                Err(e) if refused(&e) => {}
                Err(e) => return Err(format!("a commit returned {e}, not Poisoned")),
                Ok(_) => return Err("a commit succeeded".into()),
            }
        }
    }
    match env.flush() {
        Err(e) if refused(&e) => Ok(()),
        Err(e) => Err(format!("flush() returned {e}, not Poisoned")),
        Ok(()) => Err("flush() succeeded".into()),
    }
}

#[test]
fn every_io_call_fails_in_turn() {
    let t0 = Instant::now();
    tune_malloc();
    let seed = seed_or("every_io_call_fails_in_turn", 0x10_e770);
    let _g = OnPanic(format!("every_io_call_fails_in_turn: replay with JACKDAW_SEED={seed}"));
    let what = Arc::new(Mutex::new(String::new()));
    watchdog(t0, what.clone());
    let base = recovery_base(seed);
    let mut total = Figures::default();
    for w in [Workload::Fresh, Workload::Recovery] {
        // Dry run: count the calls.
        let (mem, mut k, mut m) = start(w, seed, &base);
        let fs = FaultStorage::new(mem, None);
        let mut slot = None;
        workload(w, seed, Arc::new(fs.clone()), &mut slot, &mut k, &mut m)
            .unwrap_or_else(|(s, e)| panic!("dry run of {w:?}: {s}: {e}"));
        drop(slot);
        let dry = fs.calls();
        // A second dry run must give the same calls (else the sweep cannot aim).
        {
            let (mem, mut k, mut m) = start(w, seed, &base);
            let fs2 = FaultStorage::new(mem, None);
            let mut slot = None;
            workload(w, seed, Arc::new(fs2.clone()), &mut slot, &mut k, &mut m).unwrap();
            drop(slot);
            assert_eq!(fs2.calls(), dry, "the {w:?} workload is not deterministic");
        }
        let mut f = Figures::default();
        for c in &dry {
            *f.calls.entry(format!("{c:?}")).or_default() += 1;
        }
        let tw = Instant::now();
        for (i, c) in dry.iter().enumerate() {
            for &fault in c.faults() {
                for persistent in [false, true] {
                    let plan = Plan { at: i as u64, fault, persistent };
                    CASE.fetch_add(1, Ordering::SeqCst);
                    CASE_T.store(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
                    *what.lock().unwrap() = format!("{w:?} {plan:?}");
                    run_case(w, seed, &base, plan, &dry, &mut f);
                }
            }
        }
        println!(
            "io_errors {w:?}: {} I/O calls in the dry run; {} faulty runs in {:.1}s",
            dry.len(),
            f.cases,
            tw.elapsed().as_secs_f64()
        );
        print_tally(&format!("io_errors {w:?}: calls by kind (dry run)"), &f.calls);
        print_tally(&format!("io_errors {w:?}: runs by fault"), &f.by_fault);
        print_tally(&format!("io_errors {w:?}: errors returned, by kind"), &f.by_error);
        print_tally(&format!("io_errors {w:?}: errors returned, by the API call that failed"), &f.by_step);
        println!(
            "io_errors {w:?}: panics {}, silent successes {}, absorbed by the growth retry {}, diverged runs {}, poison checks {} ({} refused writes), reopens ok {} ({} at the last attempted transaction), violations {}",
            f.panics, f.silent, f.absorbed, f.diverged, f.poison_checked, f.poison_ok, f.reopen_ok, f.recovered_latest, f.violations.len()
        );
        for v in f.violations.iter().take(12) {
            println!("    {v}");
        }
        total.cases += f.cases;
        total.panics += f.panics;
        total.silent += f.silent;
        total.poison_checked += f.poison_checked;
        total.poison_ok += f.poison_ok;
        total.reopen_ok += f.reopen_ok;
        total.violations.extend(f.violations);
    }
    DONE.store(true, Ordering::SeqCst);
    println!(
        "io_errors: {} faulty runs, {} panics, {} silent, {} poison checks passed of {}, {} reopens ok, {} violations, {:.1}s",
        total.cases,
        total.panics,
        total.silent,
        total.poison_ok,
        total.poison_checked,
        total.reopen_ok,
        total.violations.len(),
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(total.panics, 0, "panics: {:#?}", total.violations);
    assert!(
        total.violations.is_empty(),
        "violations:\n{}",
        total.violations.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
    assert_eq!(total.reopen_ok, total.cases);
    let _ = Fault::Eio;
}

// ---------------------------------------------------------------------------------------------
// After a failed journal write or sync, nothing returns Ok.

/// What a scenario or a probe does.
#[derive(Clone, Copy, Debug)]
enum Op {
    Commit(Durability),
    /// A `Sync` commit that changes nothing (a durability barrier).
    EmptySync,
    Batch,
    Flush,
    Close,
}

fn do_op(env: &Env, op: Op) -> Result<(), Error> {
    match op {
        Op::Commit(d) => {
            let mut tx = env.write()?;
            tx.set_durability(d);
            let t = match tx.open_tree("t")? {
                Some(t) => t,
                None => tx.create_tree("t")?,
            };
            let n = tx.txid().get();
            tx.put(&t, format!("k{n}"), vec![n as u8; 100])?;
            tx.commit().map(|_| ())
        }
        Op::EmptySync => {
            let mut tx = env.write()?;
            tx.set_durability(Durability::Sync);
            tx.commit().map(|_| ())
        }
        Op::Batch => {
            let t = match env.read()?.open_tree("t")? {
                Some(t) => t,
                None => {
                    let mut tx = env.write()?;
                    let t = tx.create_tree("t")?;
                    tx.commit()?;
                    t
                }
            };
            let mut b = jackdaw::WriteBatch::new();
            b.put(&t, "batch", "v");
            env.write_batch(b)
        }
        Op::Flush => env.flush(),
        Op::Close => env.close(),
    }
}

/// For every way a journal record reaches the disk (a `Sync` commit's direct write, a `Buffered`
/// commit, a `Sync` commit after a `None` one (buffered path, its `fdatasync`), an empty `Sync`
/// commit, a batch, a flush's and a close's `make_durable` of pending `None` records), the
/// journal write or sync fails once (a transient fault: the next call would succeed, so nothing
/// but the engine's own memory of the failure stands between a later call and a false `Ok`).
/// Then every later commit (each mode, and empty), batch, flush, close, and a second close, must
/// return an error. Before the fix a second `close()` returned `Ok` (and a failed `make_durable`
/// in `close` did not poison), and `make_durable` answered `Ok` without looking at the journal's
/// failure when its target was already durable.
#[test]
fn nothing_returns_ok_after_a_failed_journal_write_or_sync() {
    use Durability::*;
    let scenarios: Vec<(&str, Vec<Op>, Op, Call)> = vec![
        ("Sync commit (direct write)", vec![Op::Commit(Sync)], Op::Commit(Sync), Call::Write),
        ("Buffered commit", vec![Op::Commit(Sync)], Op::Commit(Buffered), Call::Write),
        ("Sync commit after None (write)", vec![Op::Commit(Sync), Op::Commit(None)], Op::Commit(Sync), Call::Write),
        ("Sync commit after None (sync)", vec![Op::Commit(Sync), Op::Commit(None)], Op::Commit(Sync), Call::Sync),
        ("empty Sync commit after None (write)", vec![Op::Commit(Sync), Op::Commit(None)], Op::EmptySync, Call::Write),
        (
            "empty Sync commit after Buffered (sync)",
            vec![Op::Commit(Sync), Op::Commit(Buffered)],
            Op::EmptySync,
            Call::Sync,
        ),
        ("write_batch", vec![Op::Commit(Sync)], Op::Batch, Call::Write),
        ("flush after None (write)", vec![Op::Commit(Sync), Op::Commit(None)], Op::Flush, Call::Write),
        ("flush after Buffered (sync)", vec![Op::Commit(Sync), Op::Commit(Buffered)], Op::Flush, Call::Sync),
        ("close after None (write)", vec![Op::Commit(Sync), Op::Commit(None)], Op::Close, Call::Write),
        ("close after Buffered (sync)", vec![Op::Commit(Sync), Op::Commit(Buffered)], Op::Close, Call::Sync),
    ];
    let probes = [
        Op::Commit(None),
        Op::Commit(Buffered),
        Op::Commit(Sync),
        Op::EmptySync,
        Op::Batch,
        Op::Flush,
        Op::Close,
        Op::Close,
    ];
    let mut bad = Vec::new();
    for (name, setup, op, kind) in &scenarios {
        // Dry run: where the operation's first call of that kind is.
        let fs = FaultStorage::new(MemStorage::new(), Option::None);
        let env = Env::open(DIR, opts(Arc::new(fs.clone()))).unwrap();
        for s in setup {
            do_op(&env, *s).unwrap();
        }
        let from = fs.calls().len();
        do_op(&env, *op).unwrap_or_else(|e| panic!("{name}: dry run: {e}"));
        let at =
            from + fs.calls()[from..].iter().position(|c| c == kind).unwrap_or_else(|| panic!("{name}: no {kind:?}"));
        drop(env);
        // The run with that call failing once.
        let plan = Plan { at: at as u64, fault: Fault::Eio, persistent: false };
        let fs = FaultStorage::new(MemStorage::new(), Some(plan));
        let env = Env::open(DIR, opts(Arc::new(fs.clone()))).unwrap();
        for s in setup {
            do_op(&env, *s).unwrap();
        }
        let r = do_op(&env, *op);
        assert_eq!(fs.fired(), Some((at as u64, *kind)), "{name}: the fault did not fire where planned");
        assert!(r.is_err(), "{name}: the failing operation returned Ok");
        let mut got = Vec::new();
        for p in probes {
            let r = do_op(&env, p);
            if r.is_ok() {
                bad.push(format!("{name}: then {p:?} returned Ok"));
            }
            got.push(format!("{p:?}: {}", r.err().map(|e| err_kind(&e)).unwrap_or("OK")));
        }
        println!("{name}: {} -> {}", r.err().map(|e| err_kind(&e)).unwrap_or("OK"), got.join(", "));
    }
    assert!(bad.is_empty(), "calls returned Ok after a failed journal write or sync:\n{}", bad.join("\n"));
}
