//! Concurrency under a deterministic scheduler: a writer (transactions), a batch writer (through
//! the merger and committer threads), the background flusher and two readers run in one
//! environment on `MemStorage`, and shuttle (`jackdaw::shuttle`, feature `shuttle`) picks the
//! interleaving of every lock, wait, notify, atomic and channel operation of the engine
//! (src/sync.rs routes them all through it). Each schedule checks against a model:
//!
//! - every snapshot a reader takes equals, tree by tree, the state after one whole commit (the
//!   tree's counter key says which), never a mixture; a reader's later snapshots never go back;
//! - every commit and batch is acknowledged without error, `check()` passes while the others run
//!   and after, `flush()` returns;
//! - after close and reopen (recovery) the database holds exactly the last commit of each writer.
//!
//! A second test (`batch_groups_under_shuttle`) schedules five `write_batch` callers in
//! `Buffered` against a writer holding transactions and a reader: the callers that find the
//! writer busy wait for its mutex or commit in groups on their own threads (`batch::Group`);
//! every caller returns, no snapshot holds half a batch, every batch is there after a reopen.
//!
//! The workload (keys, values from empty to overflow-sized, deletes, durability modes) comes from
//! the seed; schedules come from the seed too (random scheduler, then PCT). The seed is printed
//! and `JACKDAW_SEED` replays the same run; `JACKDAW_SHUTTLE_SCHEDULES` sets the count per
//! scheduler (default 5,000 each). Run: `cargo test --release -p jackdaw --features shuttle --test shuttle`.
#![cfg(feature = "shuttle")]

mod common;

use common::{seed, Rng};
use jackdaw::internals::ManualClock;
use jackdaw::internals::MemStorage;
use jackdaw::shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use jackdaw::shuttle::{thread, Config, Runner};
use jackdaw::{Durability, Env, Options, WriteBatch};
use std::collections::BTreeMap;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One change of a commit: put (key, value) or delete (key).
#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
}

/// The seeded workload: the writer's commits to tree "t" and the batch writer's batches to tree
/// "u", each with its counter key, and the states after each of them.
struct Plan {
    commits: Vec<(Vec<Op>, Durability)>,
    batches: Vec<Vec<Op>>,
    t_states: Vec<Model>,
    u_states: Vec<Model>,
}

const COUNTER: &[u8] = b"#";

fn ops(rng: &mut Rng, n: u64, step: usize) -> Vec<Op> {
    let mut v = Vec::new();
    for _ in 0..1 + rng.below(5) {
        let key = format!("k{:02}", rng.below(24)).into_bytes();
        if rng.below(4) == 0 {
            v.push(Op::Del(key));
        } else {
            let len = [0usize, 9, 300, 1500, 5000][rng.below(5) as usize];
            v.push(Op::Put(key, vec![b'a' + (step % 26) as u8; len]));
        }
    }
    v.push(Op::Put(COUNTER.to_vec(), n.to_le_bytes().to_vec()));
    v
}

fn apply(m: &Model, ops: &[Op]) -> Model {
    let mut m = m.clone();
    for op in ops {
        match op {
            Op::Put(k, v) => {
                m.insert(k.clone(), v.clone());
            }
            Op::Del(k) => {
                m.remove(k);
            }
        }
    }
    m
}

fn plan(seed: u64) -> Plan {
    let mut rng = Rng::new(seed | 1);
    let modes = [Durability::Sync, Durability::Buffered, Durability::None];
    let commits: Vec<_> = (0..5).map(|i| (ops(&mut rng, i, i as usize), modes[rng.below(3) as usize])).collect();
    let batches: Vec<_> = (0..3).map(|i| ops(&mut rng, i, 7 + i as usize)).collect();
    let states = |steps: Vec<&Vec<Op>>| {
        let mut s = vec![Model::new()];
        for o in steps {
            let next = apply(s.last().unwrap(), o);
            s.push(next);
        }
        s
    };
    let t_states = states(commits.iter().map(|c| &c.0).collect());
    let u_states = states(batches.iter().collect());
    Plan { commits, batches, t_states, u_states }
}

/// The state of a tree in a snapshot, and which step it claims to be (0 = before the first).
fn snapshot_state(env: &Env, name: &str) -> (usize, Model) {
    let r = env.read().unwrap();
    let tree = r.open_tree(name).unwrap().expect("tree created before the threads start");
    let m: Model =
        r.range::<[u8], _>(&tree, ..).unwrap().map(|e| e.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let step = m.get(COUNTER).map_or(0, |c| u64::from_le_bytes(c[..].try_into().unwrap()) as usize + 1);
    (step, m)
}

fn opts(storage: &MemStorage) -> Options {
    Options::default()
        .storage(Arc::new(storage.clone()))
        .clock(Arc::new(ManualClock::default()))
        .journal_file_bytes(64 << 10)
        .flush_threshold_bytes(8 << 10)
        .write_once_min_pages(4)
}

/// One schedule: everything runs under shuttle's scheduler.
fn one_schedule(plan: &Arc<Plan>) {
    let storage = MemStorage::new();
    let env = Arc::new(Env::open("/db", opts(&storage)).unwrap());
    let u = {
        let mut w = env.write().unwrap();
        w.create_tree("t").unwrap();
        let u = w.create_tree("u").unwrap();
        w.commit().unwrap();
        u
    };
    let mut threads = Vec::new();
    {
        let (env, plan) = (env.clone(), plan.clone());
        threads.push(thread::spawn(move || {
            for (ops, mode) in &plan.commits {
                let mut w = env.write().unwrap();
                w.set_durability(*mode);
                let t = w.open_tree("t").unwrap().unwrap();
                for op in ops {
                    match op {
                        Op::Put(k, v) => w.put(&t, k, v).unwrap(),
                        Op::Del(k) => {
                            w.delete(&t, k).unwrap();
                        }
                    }
                }
                w.commit().unwrap();
            }
            env.flush().unwrap();
        }));
    }
    {
        let (env, plan) = (env.clone(), plan.clone());
        threads.push(thread::spawn(move || {
            for ops in &plan.batches {
                let mut b = WriteBatch::new();
                for op in ops {
                    match op {
                        Op::Put(k, v) => b.put(&u, k, v),
                        Op::Del(k) => b.delete(&u, k),
                    }
                }
                env.write_batch(b).unwrap();
            }
        }));
    }
    for reader in 0..2 {
        let (env, plan) = (env.clone(), plan.clone());
        threads.push(thread::spawn(move || {
            let (mut last_t, mut last_u) = (0, 0);
            for _ in 0..3 {
                let (st, mt) = snapshot_state(&env, "t");
                let (su, mu) = snapshot_state(&env, "u");
                assert_eq!(mt, plan.t_states[st], "reader {reader}: tree t is not the state after commit {st}");
                assert_eq!(mu, plan.u_states[su], "reader {reader}: tree u is not the state after batch {su}");
                assert!(st >= last_t && su >= last_u, "reader {reader}: a later snapshot went back");
                (last_t, last_u) = (st, su);
                thread::yield_now();
            }
            if reader == 0 {
                env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    assert!(env.stats().flushes >= 1, "the writer's flush() returned but no flush ran");
    env.close().unwrap();
    drop(env);
    let env = Env::open("/db", opts(&storage)).unwrap();
    let (st, mt) = snapshot_state(&env, "t");
    let (su, mu) = snapshot_state(&env, "u");
    assert_eq!((st, su), (plan.commits.len(), plan.batches.len()), "recovered state is not the last commit");
    assert_eq!(mt, plan.t_states[st]);
    assert_eq!(mu, plan.u_states[su]);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
}

fn run(name: &str, scheduler: impl Scheduler + 'static, plan: &Arc<Plan>) -> usize {
    let mut config = Config::new();
    config.stack_size = 1 << 20;
    // Its warning that every atomic ordering is modelled as SeqCst is in docs/TESTING.md.
    config.silence_warnings = true;
    let plan = plan.clone();
    let t0 = std::time::Instant::now();
    let n = Runner::new(scheduler, config).run(move || one_schedule(&plan));
    println!("shuttle {name}: {n} schedules, 0 failures, {:.1} s", t0.elapsed().as_secs_f64());
    n
}

#[test]
fn writer_flusher_readers_batches_under_shuttle() {
    let seed = seed();
    let per = std::env::var("JACKDAW_SHUTTLE_SCHEDULES").ok().and_then(|s| s.parse().ok()).unwrap_or(5000);
    let plan = Arc::new(plan(seed));
    let random = run("random", RandomScheduler::new_from_seed(seed, per), &plan);
    let pct = run("pct(depth 3)", PctScheduler::new_from_seed(seed, 3, per), &plan);
    println!("shuttle: {} schedules in all (seed {seed}), 0 failures", random + pct);
    assert_eq!(random + pct, 2 * per);
}

/// `write_batch` callers on their own threads in `Buffered` (no merger): with the writer held by
/// a transaction, callers past the two that wait for its mutex commit in groups (`batch::Group`:
/// a leader takes the queued batches, commits them, tells each caller, passes the lead on). Each
/// schedule checks that every caller returns `Ok`, that a reader never sees half a batch (each
/// puts a key and its mirror), and that every batch is there at the end and after a reopen.
fn one_group_schedule() {
    let storage = MemStorage::new();
    let env = Arc::new(Env::open("/db", opts(&storage).durability(Durability::Buffered)).unwrap());
    let u = {
        let mut w = env.write().unwrap();
        let u = w.create_tree("u").unwrap();
        w.commit().unwrap();
        u
    };
    const CALLERS: u8 = 5;
    let mut threads = Vec::new();
    {
        let (env, u) = (env.clone(), u.clone());
        threads.push(thread::spawn(move || {
            for i in 0..2u8 {
                let mut w = env.write().unwrap();
                w.put(&u, [b'w', i], b"x").unwrap();
                thread::yield_now();
                w.commit().unwrap();
            }
        }));
    }
    for c in 0..CALLERS {
        let (env, u) = (env.clone(), u.clone());
        threads.push(thread::spawn(move || {
            for i in 0..2u8 {
                let mut b = WriteBatch::new();
                b.put(&u, [b'b', c, i], b"v");
                b.put(&u, [b'm', c, i], b"v");
                env.write_batch(b).unwrap();
            }
        }));
    }
    {
        let (env, u) = (env.clone(), u.clone());
        threads.push(thread::spawn(move || {
            for _ in 0..3 {
                let r = env.read().unwrap();
                for c in 0..CALLERS {
                    for i in 0..2u8 {
                        let b = r.get(&u, [b'b', c, i]).unwrap().is_some();
                        let m = r.get(&u, [b'm', c, i]).unwrap().is_some();
                        assert_eq!(b, m, "a snapshot holds half of batch {c}/{i}");
                    }
                }
                drop(r);
                thread::yield_now();
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let all = |env: &Env| {
        let r = env.read().unwrap();
        let n = r.range::<[u8], _>(&u, ..).unwrap().count();
        assert_eq!(n, 2 + 4 * CALLERS as usize, "every commit and batch is in the tree");
    };
    all(&env);
    assert_eq!(env.queued_batches(), 0);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
    drop(env);
    let env = Env::open("/db", opts(&storage)).unwrap();
    all(&env);
    env.close().unwrap();
}

#[test]
fn batch_groups_under_shuttle() {
    let seed = seed();
    let per = std::env::var("JACKDAW_SHUTTLE_SCHEDULES").ok().and_then(|s| s.parse().ok()).unwrap_or(5000) / 5;
    let config = || {
        let mut config = Config::new();
        config.stack_size = 1 << 20;
        config.silence_warnings = true;
        config
    };
    let t0 = std::time::Instant::now();
    let random = Runner::new(RandomScheduler::new_from_seed(seed, per), config()).run(one_group_schedule);
    let pct = Runner::new(PctScheduler::new_from_seed(seed, 3, per), config()).run(one_group_schedule);
    println!(
        "shuttle groups: {} schedules (seed {seed}), 0 failures, {:.1} s",
        random + pct,
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(random + pct, 2 * per);
}
