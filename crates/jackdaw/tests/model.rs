//! Model-based randomized test of the page store.
//!
//! A sequence of operations (alloc / overwrite / free inside the write transaction, commit, abort,
//! flush, snapshots kept across later operations, reopen, a crash image, per-transaction
//! durability, bursts of small commits) runs against the engine and against a model: a
//! `BTreeMap<pgno, value>` of the live pages. A page's body is a function of its value: for even
//! values exactly what `common::fill` writes (the value repeated); odd values give pages that
//! journal differently: `v % 4 == 1` is zero except one word (overwrites become small diff
//! entries), `v % 4 == 3` is incompressible noise (large records, some bigger than a journal
//! file). After every commit, reopen and crash the engine must show exactly the model, and
//! `check_with` (checksums, free map vs the live set, journal chain) must pass.
//!
//! Two drivers share the operations:
//! - proptest (shrinking, a fixed number of cases, a fixed RNG seed so runs are reproducible);
//! - a plain seeded loop (our own xorshift) over consecutive seeds.
//!
//! Both print their seed; `JACKDAW_SEED=<n>` replays: the seeded loop then runs exactly that seed,
//! and the proptest drivers use it as their RNG seed. Each driver runs on `MemStorage` and on the
//! real disk (target/tmp).

mod common;

use common::Rng;
use common::*;
use jackdaw::internals::MemStorage;
use jackdaw::internals::{page_kind, page_no, page_txid, PageKind, PAGE_HEADER};
use jackdaw::{Durability, Env, Error, FlusherMode, FreeSpacePolicy, Options, ReadTxn, WriteTxn};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

type Model = BTreeMap<u64, u64>;

/// The body (bytes after the page header) of a page holding `v`.
fn write_body(b: &mut [u8], v: u64) {
    match v % 4 {
        1 => {
            b.fill(0);
            let i = (v as usize / 4) % (b.len() / 8);
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        3 => Rng::new(v).fill_bytes(b),
        _ => {
            for c in b.chunks_mut(8) {
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

fn body_is(page: &[u8], v: u64) -> bool {
    let b = &page[PAGE_HEADER..];
    let mut want = vec![0u8; b.len()];
    write_body(&mut want, v);
    b == &want[..]
}

/// Write `v` into page `p` of the transaction.
fn put(tx: &mut WriteTxn, p: u64, v: u64) {
    write_body(&mut tx.page_mut(p).unwrap()[PAGE_HEADER..], v);
}

/// Allocate a raw page holding `v`.
fn alloc_v(tx: &mut WriteTxn, v: u64) -> u64 {
    let p = tx.alloc_page(PageKind::Raw).unwrap();
    put(tx, p, v);
    p
}

/// Crash-image in-memory databases whose background flusher may be in the middle of a flush
/// (timing-dependent; crash_points.rs covers every sync point deterministically). Manual-flusher
/// cases crash between operations.
const CRASH_WITH_BACKGROUND_FLUSHER: bool = true;

#[derive(Debug, Clone, Copy)]
struct Setup {
    page_size: u32,
    flusher: FlusherMode,
    durability: Durability,
    free_space: FreeSpacePolicy,
    /// Retired journal files kept (0 removes every retired file at once).
    files_kept: usize,
}

#[derive(Debug, Clone)]
enum Op {
    /// Allocate a page holding the value (in the open write transaction, begun if needed).
    Alloc(u64),
    /// Allocate n pages holding v, v + 4, v + 8, ... (same kind of content).
    AllocMany(u8, u64),
    /// Overwrite the n-th live page (modulo the count) with the value.
    Overwrite(usize, u64),
    /// Free the n-th live page.
    Free(usize),
    /// Commit the open transaction (an empty one if none is open).
    Commit,
    /// Drop the open transaction.
    Abort,
    Flush,
    /// Open a snapshot and keep it.
    Snapshot,
    /// Verify the n-th kept snapshot still sees exactly its version, then drop it.
    EndSnapshot(usize),
    /// Close (snapshots still open keep reading), drop, `Env::open` again.
    Reopen,
    /// Take a crash image of the open database (everything written to the OS, nothing more),
    /// drop the original and open the image.
    Crash,
    /// Durability of the open transaction's commit.
    Durability(Durability),
    /// n small transactions, each overwriting one live page (durability rotates).
    Burst(u8, usize, u64),
}

const DURABILITIES: [Durability; 3] = [Durability::Sync, Durability::Buffered, Durability::None];

// ---------------------------------------------------------------------------------------------
// Generation: proptest strategies and the same distribution from the seeded RNG.

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => any::<u64>().prop_map(Op::Alloc),
        10 => (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Op::Overwrite(i, v)),
        4 => any::<usize>().prop_map(Op::Free),
        7 => Just(Op::Commit),
        1 => Just(Op::Abort),
        2 => Just(Op::Flush),
        2 => Just(Op::Snapshot),
        2 => any::<usize>().prop_map(Op::EndSnapshot),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        2 => (0..3usize).prop_map(|d| Op::Durability(DURABILITIES[d])),
        1 => (1u8..48, any::<usize>(), any::<u64>()).prop_map(|(n, i, v)| Op::Burst(n, i, v)),
        1 => (1u8..120, any::<u64>()).prop_map(|(n, v)| Op::AllocMany(n, v)),
    ]
}

fn setup_strategy(flusher: Option<FlusherMode>) -> impl Strategy<Value = Setup> {
    let fl = match flusher {
        Some(f) => Just(f).boxed(),
        None => prop_oneof![Just(FlusherMode::Manual), Just(FlusherMode::Background)].boxed(),
    };
    (prop_oneof![3 => Just(4096u32), 1 => Just(8192u32)], fl, 0..3usize, any::<bool>(), 0..5usize).prop_map(
        |(page_size, flusher, d, append, files_kept)| Setup {
            page_size,
            flusher,
            durability: DURABILITIES[d],
            free_space: if append { FreeSpacePolicy::AppendOnly } else { FreeSpacePolicy::Reuse },
            files_kept,
        },
    )
}

fn gen_setup(rng: &mut Rng) -> Setup {
    Setup {
        page_size: if rng.chance(1, 4) { 8192 } else { 4096 },
        flusher: if rng.chance(1, 2) { FlusherMode::Manual } else { FlusherMode::Background },
        durability: DURABILITIES[rng.below(3) as usize],
        free_space: if rng.chance(1, 2) { FreeSpacePolicy::AppendOnly } else { FreeSpacePolicy::Reuse },
        files_kept: rng.below(5) as usize,
    }
}

fn gen_op(rng: &mut Rng) -> Op {
    // Same weights as `op_strategy` (total 44).
    let w = rng.below(44);
    let u = rng.next_u64() as usize;
    let v = rng.next_u64();
    match w {
        0..=9 => Op::Alloc(v),
        10..=19 => Op::Overwrite(u, v),
        20..=23 => Op::Free(u),
        24..=30 => Op::Commit,
        31 => Op::Abort,
        32..=33 => Op::Flush,
        34..=35 => Op::Snapshot,
        36..=37 => Op::EndSnapshot(u),
        38 => Op::Reopen,
        39 => Op::Crash,
        40..=41 => Op::Durability(DURABILITIES[rng.below(3) as usize]),
        42 => Op::Burst(rng.range(1, 47) as u8, u, v),
        _ => Op::AllocMany(rng.range(1, 119) as u8, v),
    }
}

// ---------------------------------------------------------------------------------------------
// The harness.

/// What the cases exercised, printed by each driver (so a generator that stops reaching some
/// operation is noticed).
#[derive(Default)]
struct Coverage {
    commits: AtomicU64,
    reopens: AtomicU64,
    crashes: AtomicU64,
    crash_lost: AtomicU64,
    flushes: AtomicU64,
    snapshots_verified: AtomicU64,
    journal_files_created: AtomicU64,
    journal_files_recycled: AtomicU64,
    max_live_pages: AtomicU64,
}

impl Coverage {
    fn print(&self, name: &str) {
        println!(
            "{name}: commits {} reopens {} crashes {} (losing unsynced commits: {}) flushes {} snapshots verified {} journal files created {} recycled {} max live pages {}",
            self.commits.load(Relaxed),
            self.reopens.load(Relaxed),
            self.crashes.load(Relaxed),
            self.crash_lost.load(Relaxed),
            self.flushes.load(Relaxed),
            self.snapshots_verified.load(Relaxed),
            self.journal_files_created.load(Relaxed),
            self.journal_files_recycled.load(Relaxed),
            self.max_live_pages.load(Relaxed),
        );
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Mem,
    Disk,
}

enum Backend {
    Mem(MemStorage, PathBuf),
    Disk(PathBuf),
}

struct Snap {
    r: ReadTxn,
    model: Model,
    txid: u64,
}

struct Harness {
    setup: Setup,
    backend: Backend,
    env: Option<Env>,
    tx: Option<WriteTxn>,
    /// The open transaction's view, its durability and how many changes it made.
    pending: Model,
    tx_durability: Durability,
    tx_ops: usize,
    /// The last committed state.
    committed: Model,
    last_txid: u64,
    /// Every committed transaction up to `floor` is in any crash image; `history` holds the state
    /// after each transaction in `[floor, last_txid]`.
    floor: u64,
    history: BTreeMap<u64, Model>,
    snaps: Vec<Snap>,
    /// The fixtures of the disk directories (the first, then each crash image), checked with
    /// their final live pages when the case passes.
    dirs: Vec<TestDb>,
    cov: &'static Coverage,
}

fn options(setup: &Setup, backend: &Backend) -> Options {
    let mut o = test_opts()
        .page_size(setup.page_size)
        .durability(setup.durability)
        .free_space(setup.free_space)
        .flusher(setup.flusher);
    o = o.journal_files_kept(setup.files_kept);
    if setup.flusher == FlusherMode::Background {
        // A flusher that runs often, concurrently with everything (check() included: it used to
        // report false corruption when a flush removed journal files under it, see
        // flusher_blocking.rs, check_overlapping_a_flush_sees_a_consistent_journal).
        o = o.flush_threshold_bytes(32 << 10).flush_idle(Duration::from_millis(2));
    }
    if let Backend::Mem(m, _) = backend {
        o = o.storage(Arc::new(m.clone()));
    }
    o
}

fn open(setup: &Setup, backend: &Backend) -> Env {
    let path = match backend {
        Backend::Mem(_, p) => p.clone(),
        Backend::Disk(d) => d.clone(),
    };
    Env::open(&path, options(setup, backend)).unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Every page of `model` reads back exactly through `r`.
fn verify_view(r: &ReadTxn, model: &Model, what: &str) {
    for (&p, &v) in model {
        let page = r.page(p).unwrap_or_else(|e| panic!("{what}: page {p}: {e}"));
        assert_eq!(page_no(page), p, "{what}: page {p} header");
        assert_eq!(page_kind(page), Some(PageKind::Raw), "{what}: page {p} kind");
        assert!(page_txid(page) <= r.txid().get(), "{what}: page {p} written by a later transaction");
        assert!(body_is(page, v), "{what}: page {p} does not hold {v} (snapshot txid {})", r.txid().get());
    }
}

impl Harness {
    fn new(kind: Kind, setup: Setup, cov: &'static Coverage) -> Harness {
        let mut dirs = Vec::new();
        let backend = match kind {
            Kind::Mem => Backend::Mem(MemStorage::new(), PathBuf::from("/mem/model")),
            Kind::Disk => {
                let d = TestDb::dir("model");
                let p = d.path().to_path_buf();
                dirs.push(d);
                Backend::Disk(p)
            }
        };
        let mut h = Harness {
            setup,
            dirs,
            env: None,
            backend,
            tx: None,
            pending: Model::new(),
            tx_durability: setup.durability,
            tx_ops: 0,
            committed: Model::new(),
            last_txid: 0,
            floor: 0,
            history: BTreeMap::from([(0, Model::new())]),
            snaps: Vec::new(),
            cov,
        };
        h.env = Some(open(&h.setup, &h.backend));
        h
    }

    fn env(&self) -> &Env {
        self.env.as_ref().expect("env open")
    }

    fn tx(&mut self) -> &mut WriteTxn {
        if self.tx.is_none() {
            self.tx = Some(self.env().write().unwrap());
            self.pending = self.committed.clone();
            self.tx_durability = self.setup.durability;
            self.tx_ops = 0;
        }
        self.tx.as_mut().unwrap()
    }

    fn nth_live(&self, m: &Model, i: usize) -> Option<u64> {
        if m.is_empty() {
            None
        } else {
            m.keys().nth(i % m.len()).copied()
        }
    }

    fn verify_committed(&self, what: &str) {
        let r = self.env().read().unwrap();
        assert_eq!(r.txid().get(), self.last_txid, "{what}: snapshot txid");
        verify_view(&r, &self.committed, what);
    }

    fn check(&self) {
        check_pages(self.env(), self.committed.keys().copied());
    }

    /// Record a successful commit of `pending` as transaction `txid`.
    fn committed_as(&mut self, txid: u64, durability: Durability) {
        assert_eq!(txid, self.last_txid + 1, "commit txid");
        self.committed = std::mem::take(&mut self.pending);
        self.last_txid = txid;
        self.history.insert(txid, self.committed.clone());
        self.cov.commits.fetch_add(1, Relaxed);
        self.cov.max_live_pages.fetch_max(self.committed.len() as u64, Relaxed);
        if durability != Durability::None {
            // Sync: on the device; Buffered: written to the OS, so in a process-crash image.
            // Either also writes out every earlier deferred record.
            self.floor = txid;
            self.history = self.history.split_off(&txid);
        }
    }

    fn commit(&mut self) {
        let (tx, ops, d) = match self.tx.take() {
            Some(tx) => (tx, self.tx_ops, self.tx_durability),
            None => {
                self.pending = self.committed.clone();
                (self.env().write().unwrap(), 0, self.setup.durability)
            }
        };
        let st = tx.commit().unwrap();
        if ops == 0 {
            assert_eq!(st.txid, 0, "a transaction without changes commits nothing");
            assert_eq!(self.pending, self.committed);
            self.pending.clear();
            if d == Durability::Sync {
                // An empty Sync commit makes everything before it durable.
                self.floor = self.last_txid;
                self.history = self.history.split_off(&self.last_txid);
            }
        } else {
            assert!(st.pages > 0, "{st:?}");
            self.committed_as(st.txid.get(), d);
        }
        self.verify_committed("after commit");
        self.check();
    }

    fn end_snapshot(&mut self, i: usize) {
        let s = self.snaps.remove(i);
        assert_eq!(s.r.txid().get(), s.txid);
        verify_view(&s.r, &s.model, "kept snapshot");
        self.cov.snapshots_verified.fetch_add(1, Relaxed);
    }

    fn after_open(&mut self, what: &str) {
        self.pending.clear();
        self.history = BTreeMap::from([(self.last_txid, self.committed.clone())]);
        self.floor = self.last_txid;
        assert_eq!(self.env().stats().last_committed_txid.get(), self.last_txid, "{what}");
        self.verify_committed(what);
        self.check();
    }

    /// Journal counters of the environment about to be dropped.
    fn account(&self) {
        let s = self.env().stats();
        self.cov.journal_files_created.fetch_add(s.journal_files_created, Relaxed);
        self.cov.journal_files_recycled.fetch_add(s.journal_files_recycled, Relaxed);
    }

    fn reopen(&mut self) {
        self.tx = None;
        self.account();
        self.cov.reopens.fetch_add(1, Relaxed);
        let env = self.env.take().unwrap();
        // Kept snapshots hold the lock past close(), which says so.
        match env.close() {
            Ok(()) => assert!(self.snaps.is_empty(), "close() with live snapshots released the lock"),
            Err(jackdaw::Error::Busy(_)) if !self.snaps.is_empty() => {}
            Err(e) => panic!("close(): {e}"),
        }
        // Snapshots outlive close().
        while !self.snaps.is_empty() {
            self.end_snapshot(0);
        }
        drop(env);
        self.env = Some(open(&self.setup, &self.backend));
        self.after_open("after reopen");
    }

    fn crash(&mut self) {
        if self.setup.flusher == FlusherMode::Background
            && (matches!(self.backend, Backend::Disk(_)) || !CRASH_WITH_BACKGROUND_FLUSHER)
        {
            // On disk, copying a directory is not atomic: a background flush that retires journal
            // files during the copy would make an image no real crash can produce. In memory,
            // see CRASH_WITH_BACKGROUND_FLUSHER. Reopen instead.
            return self.reopen();
        }
        self.tx = None;
        while !self.snaps.is_empty() {
            self.end_snapshot(0);
        }
        let image = match &self.backend {
            // deep_clone holds the file-system lock: journal files cannot be retired meanwhile,
            // and data.jdb is copied before the journal, so the image is one a crash can leave.
            Backend::Mem(m, p) => Backend::Mem(m.deep_clone(), p.clone()),
            Backend::Disk(d) => {
                let to = TestDb::dir("model-crash");
                copy_dir(d, to.path());
                // The crashed-from directory ends with everything committed (its Env closes below).
                self.dirs.last().unwrap().raw_pages(self.committed.keys().copied());
                let p = to.path().to_path_buf();
                self.dirs.push(to);
                Backend::Disk(p)
            }
        };
        self.account();
        self.cov.crashes.fetch_add(1, Relaxed);
        drop(self.env.take());
        self.backend = image;
        self.env = Some(open(&self.setup, &self.backend));
        let t = self.env().read().unwrap().txid().get();
        assert!(
            t >= self.floor && t <= self.last_txid,
            "crash recovery ended at transaction {t}; durable up to {}, last committed {}",
            self.floor,
            self.last_txid
        );
        if t < self.last_txid {
            self.cov.crash_lost.fetch_add(1, Relaxed);
        }
        self.committed = self.history.get(&t).expect("history covers [floor, last]").clone();
        self.last_txid = t;
        self.after_open("after crash");
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Alloc(v) => {
                let tx = self.tx();
                let p = alloc_v(tx, v);
                assert!(p >= 4 && p < tx.next_page(), "allocated page {p}");
                assert!(body_is(tx.page(p).unwrap(), v));
                assert!(!self.pending.contains_key(&p), "page {p} allocated while live");
                self.pending.insert(p, v);
                self.tx_ops += 1;
            }
            Op::AllocMany(n, v) => {
                for i in 0..n as u64 {
                    self.apply(&Op::Alloc(v.wrapping_add(4 * i)));
                }
            }
            Op::Overwrite(i, v) => {
                self.tx();
                let Some(p) = self.nth_live(&self.pending, i) else {
                    return;
                };
                let tx = self.tx.as_mut().unwrap();
                put(tx, p, v);
                assert!(body_is(tx.page(p).unwrap(), v));
                self.pending.insert(p, v);
                self.tx_ops += 1;
            }
            Op::Free(i) => {
                self.tx();
                let Some(p) = self.nth_live(&self.pending, i) else {
                    return;
                };
                let tx = self.tx.as_mut().unwrap();
                tx.free_page(p).unwrap();
                assert!(matches!(tx.free_page(p), Err(Error::Invalid(_))), "double free of {p} accepted");
                self.pending.remove(&p);
                self.tx_ops += 1;
            }
            Op::Commit => self.commit(),
            Op::Abort => {
                if let Some(tx) = self.tx.take() {
                    tx.abort();
                    self.pending.clear();
                    assert_eq!(self.env().read().unwrap().txid().get(), self.last_txid);
                }
            }
            Op::Flush => {
                self.env().flush().unwrap();
                self.cov.flushes.fetch_add(1, Relaxed);
                let s = self.env().stats();
                match self.snaps.iter().map(|s| s.txid).min() {
                    None => {
                        assert_eq!(s.last_flushed_txid.get(), self.last_txid, "{s:?}");
                        assert_eq!(s.scratch_bytes, 0, "no reader: everything flushed");
                        self.floor = self.last_txid;
                        self.history = self.history.split_off(&self.last_txid);
                    }
                    Some(oldest) => {
                        assert!(
                            s.last_flushed_txid.get() >= oldest && s.last_flushed_txid.get() <= self.last_txid,
                            "{s:?}"
                        );
                    }
                }
            }
            Op::Snapshot => {
                if self.snaps.len() >= 4 {
                    self.end_snapshot(0);
                }
                let r = self.env().read().unwrap();
                assert_eq!(r.txid().get(), self.last_txid);
                self.snaps.push(Snap { r, model: self.committed.clone(), txid: self.last_txid });
            }
            Op::EndSnapshot(i) => {
                if !self.snaps.is_empty() {
                    self.end_snapshot(i % self.snaps.len());
                }
            }
            Op::Reopen => self.reopen(),
            Op::Crash => self.crash(),
            Op::Durability(d) => {
                self.tx().set_durability(d);
                self.tx_durability = d;
            }
            Op::Burst(n, i, v) => {
                if self.tx.is_some() {
                    self.commit();
                }
                if self.committed.is_empty() {
                    self.apply(&Op::Alloc(v));
                    self.commit();
                }
                for k in 0..n as usize {
                    let d = DURABILITIES[(v as usize + k) % 3];
                    let p = self.nth_live(&self.committed, i + k).unwrap();
                    let val = v.wrapping_add(k as u64);
                    let mut tx = self.env().write().unwrap();
                    tx.set_durability(d);
                    put(&mut tx, p, val);
                    let st = tx.commit().unwrap();
                    self.pending = self.committed.clone();
                    self.pending.insert(p, val);
                    self.committed_as(st.txid.get(), d);
                }
                self.verify_committed("after burst");
                self.check();
            }
        }
    }

    /// Commit what is open, reopen once more, verify, and leave the directories to their fixtures.
    fn finish(mut self) {
        if self.tx.is_some() {
            self.commit();
        }
        self.reopen();
        let env = self.env.take().unwrap();
        env.close().unwrap();
        drop(env);
        // Checked on drop, with the pages of the final state.
        if let Some(d) = self.dirs.last() {
            d.raw_pages(self.committed.keys().copied());
        }
    }
}

fn run_case(kind: Kind, setup: Setup, ops: &[Op], cov: &'static Coverage) {
    let mut h = Harness::new(kind, setup, cov);
    for (i, op) in ops.iter().enumerate() {
        let _g = OnPanic(format!("model: failed at op #{i} {op:?} ({kind:?}, {setup:?})"));
        h.apply(op);
    }
    h.finish();
}

// ---------------------------------------------------------------------------------------------
// Drivers.

const DEFAULT_SEED: u64 = 0x4a41_434b_4441_5721;

fn proptest_driver(name: &str, kind: Kind, flusher: Option<FlusherMode>, cases: u32, max_ops: usize) {
    let cov: &'static Coverage = Box::leak(Box::default());
    let seed = seed_or(name, DEFAULT_SEED);
    let config = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 300,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (setup_strategy(flusher), proptest::collection::vec(op_strategy(), 1..max_ops));
    let result = runner.run(&strategy, |(setup, ops)| {
        run_case(kind, setup, &ops, cov);
        Ok(())
    });
    cov.print(name);
    if let Err(e) = result {
        panic!("{name}: {e}\nreplay the whole run with JACKDAW_SEED={seed}");
    }
}

fn seeded_driver(name: &str, kind: Kind, runs: u64, ops: usize) {
    let cov: &'static Coverage = Box::leak(Box::default());
    let (first, runs) = match env_seed() {
        Some(s) => (s, 1),
        None => (DEFAULT_SEED, runs),
    };
    for seed in first..first + runs {
        let _g = OnPanic(format!(
            "{name}: failing seed {seed}: replay with JACKDAW_SEED={seed} cargo test --release --test model {name}"
        ));
        println!("{name}: seed {seed}");
        let mut rng = Rng::new(seed);
        let setup = gen_setup(&mut rng);
        let n = rng.range(ops as u64 / 2, ops as u64) as usize;
        let ops: Vec<Op> = (0..n).map(|_| gen_op(&mut rng)).collect();
        run_case(kind, setup, &ops, cov);
    }
    cov.print(name);
}

#[test]
fn model_proptest_mem() {
    proptest_driver("model_proptest_mem", Kind::Mem, None, 256, 400);
}

#[test]
fn model_proptest_disk_manual() {
    proptest_driver("model_proptest_disk_manual", Kind::Disk, Some(FlusherMode::Manual), 32, 250);
}

#[test]
fn model_proptest_disk_background() {
    proptest_driver("model_proptest_disk_background", Kind::Disk, Some(FlusherMode::Background), 32, 250);
}

#[test]
fn model_seeded_mem() {
    seeded_driver("model_seeded_mem", Kind::Mem, 64, 600);
}

#[test]
fn model_seeded_disk() {
    seeded_driver("model_seeded_disk", Kind::Disk, 24, 400);
}
