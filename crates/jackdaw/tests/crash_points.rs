//! Crash images at every sync point (process-crash model: everything written to the OS is kept).
//!
//! A workload thread commits (mixed durabilities, page contents that produce full images, diffs
//! and diffs against zeros), frees and flushes, through a gated storage armed for every sync: each
//! sync call waits until the test thread has copied the database directory (a crash image taken
//! at that instant) and lets it through. Each image must recover to the state after some
//! transaction `t` with `durable <= t <= started`, where `durable` is the last transaction whose
//! commit (Sync or Buffered) or flush had returned and `started` the last one whose commit began;
//! the pages must be exactly that state and `check_with` must pass.
//!
//! Recovery itself is crashed too: each image is opened through the gated storage, and at each
//! sync of the recovery a second image is taken, which must recover to the same state.

mod common;

use common::gate::{GatedStorage, Point, ReleaseOnDrop};
use common::*;
use jackdaw::internals::SyncSite;
use jackdaw::internals::PAGE_HEADER;
use jackdaw::{Durability, Env, FlusherMode, Options, ReadTxn, WriteTxn};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

type Model = BTreeMap<u64, u64>;

/// Page body for `v`: even values fill the body (as `common::fill`), odd values leave it zero
/// except one word, so overwriting one odd value with another changes a few bytes (a diff entry).
fn put(tx: &mut WriteTxn, p: u64, v: u64) {
    let b = &mut tx.page_mut(p).unwrap()[PAGE_HEADER..];
    if v.is_multiple_of(2) {
        for c in b.chunks_mut(8) {
            c.copy_from_slice(&v.to_le_bytes());
        }
    } else {
        b.fill(0);
        let words = b.len() / 8;
        let i = (v as usize / 2) % words;
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
}

fn matches_value(page: &[u8], v: u64) -> bool {
    let b = &page[PAGE_HEADER..];
    if v.is_multiple_of(2) {
        b.chunks(8).all(|c| c == v.to_le_bytes())
    } else {
        let words = b.len() / 8;
        let i = (v as usize / 2) % words;
        b.chunks(8).enumerate().all(|(j, c)| if j == i { c == v.to_le_bytes() } else { c == [0u8; 8] })
    }
}

fn verify_state(r: &ReadTxn, m: &Model, what: &str) {
    for (&p, &v) in m {
        let page = r.page(p).unwrap_or_else(|e| panic!("{what}: page {p}: {e}"));
        assert!(matches_value(page, v), "{what}: page {p} does not hold {v}");
    }
}

fn opts() -> Options {
    test_opts().journal_file_bytes(64 << 10).flusher(FlusherMode::Manual)
}

/// What the workload has told the test: states by transaction, and how far it is durable.
#[derive(Default, Clone)]
struct Knowledge {
    states: BTreeMap<u64, Model>,
    durable: u64,
}

/// Open a crash image; return the recovered transaction after checking it against `k`. Its live
/// pages become the fixture's drop check's.
fn verify_image(db: &TestDb, k: &Knowledge, what: &str) -> u64 {
    let env = Env::open(db, opts()).unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let r = env.read().unwrap();
    let t = r.txid().get();
    let started = *k.states.keys().next_back().unwrap();
    assert!(
        t >= k.durable && t <= started,
        "{what}: recovered transaction {t}, durable {}, started {started}",
        k.durable
    );
    let m = &k.states[&t];
    db.raw_pages(m.keys().copied());
    verify_state(&r, m, what);
    drop(r);
    check_with_what(&env, m, what);
    env.close().unwrap();
    t
}

fn check_with_what(env: &Env, m: &Model, what: &str) {
    let live: Vec<u64> = m.keys().copied().collect();
    if let Err(e) = env.check_with(move |_| Ok(live)).and_then(jackdaw::CheckReport::into_result) {
        panic!("{what}: check: {e}");
    }
}

/// Crash the recovery of the (never opened) image `base` at each of its syncs; every such image
/// recovers to `t`. `base` is recovered in place.
fn crash_recovery(base: &Path, t: u64, k: &Knowledge, what: &str) -> usize {
    let gs = GatedStorage::new();
    let _open_gate = ReleaseOnDrop(gs.gate.clone());
    gs.gate.arm(Point::AnySync);
    let (b, g) = (base.to_path_buf(), gs.clone());
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let h = std::thread::spawn(move || {
        let r = Env::open(&b, opts().storage(Arc::new(g))).map(|env| {
            let t = env.read().unwrap().txid().get();
            drop(env);
            t
        });
        d2.store(true, Ordering::SeqCst);
        r
    });
    let mut n = 0;
    loop {
        assert!(gs.gate.wait_held_or(1, DEADLINE, || done.load(Ordering::SeqCst)), "{what}: recovery stuck");
        if gs.gate.waiting() == 0 {
            break;
        }
        let held = gs.gate.held();
        let img2 = TestDb::dir("crash-points-r");
        copy_dir(base, img2.path());
        gs.gate.step_and_wait();
        let w = format!("{what}, then crashed in recovery at {held:?}");
        let t2 = verify_image(&img2, k, &w);
        assert_eq!(t2, t, "{w}");
        drop(img2);
        n += 1;
    }
    gs.gate.release();
    let t3 = h.join().unwrap().unwrap_or_else(|e| panic!("{what}: gated recovery failed: {e}"));
    assert_eq!(t3, t, "{what}");
    n
}

/// Run the workload of `seed`, imaging every sync. Returns (images, recovery images).
fn run(seed: u64, commits: u64) -> (usize, usize, BTreeMap<String, usize>) {
    let dir = TestDb::dir("crash-points");
    let gs = GatedStorage::new();
    let _open_gate = ReleaseOnDrop(gs.gate.clone());
    gs.gate.arm(Point::AnySync);
    let know = Arc::new(Mutex::new(Knowledge { states: BTreeMap::from([(0, Model::new())]), durable: 0 }));
    let done = Arc::new(AtomicBool::new(false));
    let (d, g, kn, dn) = (dir.path().to_path_buf(), gs.clone(), know.clone(), done.clone());
    let worker = std::thread::spawn(move || {
        struct Done(Arc<AtomicBool>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _done = Done(dn);
        let mut rng = Rng::new(seed);
        let env = Env::open(&d, opts().journal_files_kept(rng.below(3) as usize).storage(Arc::new(g))).unwrap();
        let mut live = Model::new();
        for txid in 1..=commits {
            let mut tx = env.write().unwrap();
            let dur = [Durability::Sync, Durability::Buffered, Durability::None][rng.below(3) as usize];
            tx.set_durability(dur);
            for _ in 0..rng.range(1, 4) {
                match rng.below(8) {
                    0..=2 => {
                        let p = tx.alloc_page(jackdaw::internals::PageKind::Raw).unwrap();
                        let v = rng.next_u64() >> 1;
                        put(&mut tx, p, v);
                        live.insert(p, v);
                    }
                    3 if live.len() > 2 => {
                        let p = *live.keys().nth(rng.below(live.len() as u64) as usize).unwrap();
                        tx.free_page(p).unwrap();
                        live.remove(&p);
                    }
                    _ if !live.is_empty() => {
                        let p = *live.keys().nth(rng.below(live.len() as u64) as usize).unwrap();
                        // Mostly small changes: odd -> odd differs in two words.
                        let v = if rng.chance(3, 4) { (rng.next_u64() >> 1) | 1 } else { rng.next_u64() & !1 };
                        put(&mut tx, p, v);
                        live.insert(p, v);
                    }
                    _ => {
                        let p = tx.alloc_page(jackdaw::internals::PageKind::Raw).unwrap();
                        put(&mut tx, p, 7);
                        live.insert(p, 7);
                    }
                }
            }
            // Known before the commit starts: its record may reach the file before any sync.
            kn.lock().unwrap().states.insert(txid, live.clone());
            assert_eq!(tx.commit().unwrap().txid, txid);
            if dur != Durability::None {
                kn.lock().unwrap().durable = txid;
            }
            if rng.chance(1, 6) {
                env.flush().unwrap();
                kn.lock().unwrap().durable = txid;
            }
        }
        env.close().unwrap();
        kn.lock().unwrap().durable = commits;
        live
    });
    let (mut images, mut rimages) = (0, 0);
    let mut sites: BTreeMap<String, usize> = BTreeMap::new();
    loop {
        assert!(gs.gate.wait_held_or(1, DEADLINE, || done.load(Ordering::SeqCst)), "workload stuck");
        if gs.gate.waiting() == 0 {
            break;
        }
        let held = gs.gate.held();
        let k = know.lock().unwrap().clone();
        let img = TestDb::dir("crash-points-img");
        copy_dir(dir.path(), img.path());
        gs.gate.step_and_wait();
        let pristine = TestDb::dir("crash-points-rbase");
        copy_dir(img.path(), pristine.path());
        let what = format!(
            "seed {seed}: crash at {held:?} (image {images}, durable {}, started {})",
            k.durable,
            k.states.keys().next_back().unwrap()
        );
        let t = verify_image(&img, &k, &what);
        rimages += crash_recovery(pristine.path(), t, &k, &what);
        pristine.raw_pages(k.states[&t].keys().copied());
        drop(pristine);
        for h in held {
            if let Point::Sync(s) = h {
                *sites.entry(s.name().to_string()).or_default() += 1;
            }
        }
        drop(img);
        images += 1;
    }
    gs.gate.release();
    let live = worker.join().unwrap();
    let env = Env::open(&dir, opts()).unwrap();
    verify_state(&env.read().unwrap(), &live, "final");
    check_with_what(&env, &live, "final");
    dir.raw_pages(live.keys().copied());
    drop(env);
    (images, rimages, sites)
}

#[test]
fn crash_image_at_every_sync_point() {
    let seeds: Vec<u64> = match env_seed() {
        Some(s) => vec![s],
        None => (0..4).map(|i| 0xc4a5_0000 + i).collect(),
    };
    for seed in seeds {
        let _g = OnPanic(format!("crash_image_at_every_sync_point: replay with JACKDAW_SEED={seed}"));
        println!("crash_image_at_every_sync_point: seed {seed}");
        let (images, rimages, sites) = run(seed, 60);
        println!("seed {seed}: {images} crash images ({sites:?}), {rimages} images of crashed recoveries");
        assert!(
            sites.contains_key(SyncSite::DataFlush.name()) && sites.contains_key(SyncSite::Header.name()),
            "{sites:?}"
        );
    }
}

/// Regression test for an engine bug (fixed upstream in 54a945a, found independently by these
/// tests): a crash after the flusher wrote pages to the data file but before it wrote the header
/// left a database that could not be opened.
///
/// Replay applied each journal record's diff to the page read from the data file and verified
/// the page's checksum after every record. But the flusher may already have written a *newer*
/// version of the page (the header still says the older transaction was the last flushed), and a
/// diff against the older version applied to the newer page gives neither version: the check
/// failed and `Env::open` returned `Corrupted { page, "page rebuilt from journal record N fails
/// its check" }`. The same happened if recovery itself was interrupted after writing replayed
/// pages. (Only the final page, after every record is applied, is right: diffs carry absolute
/// ranges.)
///
/// Scenario: Manual flusher; commit page A; flush; three commits each changing a different
/// single byte of A (journaled as diffs); start `env.flush()` and stop it in its `Header` sync
/// (header written, not synced), then in its `DataFlush` sync (pages written, header not); copy
/// the directory (a process-crash image); the copy must open with all four commits.
#[test]
fn crash_between_flush_page_writes_and_header_recovers() {
    for site in [SyncSite::Header, SyncSite::DataFlush] {
        let dir = TestDb::dir("midflush");
        let gs = GatedStorage::new();
        let env = Env::open(&dir, opts().storage(Arc::new(gs.clone()))).unwrap();
        let _open_gate = ReleaseOnDrop(gs.gate.clone());
        let mut tx = env.write().unwrap();
        let a = alloc(&mut tx, 1);
        tx.commit().unwrap();
        env.flush().unwrap();
        for i in 2..5usize {
            let mut tx = env.write().unwrap();
            tx.page_mut(a).unwrap()[100 * i] = i as u8;
            tx.commit().unwrap();
        }
        gs.gate.arm(Point::Sync(site));
        let e = env.clone();
        let flush = std::thread::spawn(move || e.flush());
        assert!(gs.gate.wait_blocked(DEADLINE));
        let img = TestDb::dir("midflush-img");
        copy_dir(dir.path(), img.path());
        gs.gate.release();
        flush.join().unwrap().unwrap();
        drop(env);
        let env = Env::open(&img, opts())
            .unwrap_or_else(|e| panic!("crash image taken in the flush's {site:?} sync does not open: {e}"));
        let r = env.read().unwrap();
        assert_eq!(r.txid().get(), 4);
        let p = r.page(a).unwrap();
        assert_eq!((p[200], p[300], p[400]), (2, 3, 4));
        drop(r);
        check_pages(&env, [a]);
        dir.raw_pages([a]);
        img.raw_pages([a]);
        drop(env);
    }
}
