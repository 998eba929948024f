//! Read transactions on many threads (`txn/readers.rs`: readers registered in per-thread lanes,
//! each lane keeping the epoch its snapshots begin from, which holds the environment).
//!
//! - Snapshots begun on several threads, some held across many commits and flushes, each read
//!   exactly their state to the end: the flusher and every commit see the readers of all lanes.
//! - An environment dropped after reads on many threads closes its files, also when a read
//!   transaction outlives it (the lanes' epochs hold the environment: `close` must let go).
//! - A snapshot reads the page table's versions in place (page_table invariant 5): values it
//!   returned and an iterator half-way through stay right after a flush retires those versions
//!   and later commits reuse page buffers; a reader held across many flushes keeps at most what
//!   the table held when it began. Handles read from the mapped data file keep their bytes
//!   while the file grows (is mapped anew) and flushes rewrite the pages they came from.
//! - Every page of a commit is read at that commit's version by snapshots on several threads
//!   while later commits publish newer versions and flushes retire older ones (the page table's
//!   slots, invariant 6: a snapshot takes a slot's image only when it is at or before it).

mod common;
use common::{seed, tmpdir, Rng};

use jackdaw::{Env, FlusherMode, Options};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Descriptors of this process open on files under `dir` (other tests' files do not count).
fn fds_under(dir: &Path) -> usize {
    let dir = std::fs::canonicalize(dir).unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.starts_with(&dir))
        .count()
}

/// Two keys written together in every commit must read equal in every snapshot, and a snapshot
/// held while later commits are flushed must still read its own values.
#[test]
fn snapshots_on_many_threads_keep_their_state_across_commits_and_flushes() {
    let dir = tmpdir("readers-lanes");
    // A small threshold: the background flusher runs many times during the test.
    let env = Env::open(&*dir, Options::default().flush_threshold_bytes(64 << 10)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "a", 0u64.to_be_bytes()).unwrap();
    tx.put(&t, "b", 0u64.to_be_bytes()).unwrap();
    tx.commit().unwrap();
    const COMMITS: u64 = 1500;
    let done = AtomicBool::new(false);
    let read_u64 = |r: &jackdaw::ReadTxn, k: &str| -> u64 {
        u64::from_be_bytes(r.get(&t, k).unwrap().unwrap().as_ref().try_into().unwrap())
    };
    let held_checked = std::thread::scope(|s| {
        let readers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut held = Vec::new();
                    let mut last = 0;
                    let mut n = 0u64;
                    while !done.load(Ordering::Acquire) {
                        let r = env.read().unwrap();
                        let (a, b) = (read_u64(&r, "a"), read_u64(&r, "b"));
                        assert_eq!(a, b, "a snapshot saw half a commit (txid {})", r.txid());
                        assert!(a >= last, "a later snapshot saw an older state: {a} after {last}");
                        last = a;
                        n += 1;
                        if n.is_multiple_of(97) && held.len() < 24 {
                            held.push((r, a));
                        }
                    }
                    // Flushes and commits ran since: each held snapshot still reads its state.
                    for (r, a) in &held {
                        assert_eq!((read_u64(r, "a"), read_u64(r, "b")), (*a, *a), "held snapshot {}", r.txid());
                    }
                    held.len()
                })
            })
            .collect();
        for i in 1..=COMMITS {
            let mut tx = env.write().unwrap();
            tx.put(&t, "a", i.to_be_bytes()).unwrap();
            tx.put(&t, format!("k{i:06}"), [i as u8; 200]).unwrap();
            tx.put(&t, "b", i.to_be_bytes()).unwrap();
            tx.commit().unwrap();
            if i % 100 == 0 {
                env.flush().unwrap();
            }
        }
        done.store(true, Ordering::Release);
        readers.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
    });
    assert!(held_checked > 0, "no snapshot was held across commits: the test proved nothing");
    let r = env.read().unwrap();
    assert_eq!((read_u64(&r, "a"), read_u64(&r, "b")), (COMMITS, COMMITS));
    drop(r);
    let report = env.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    env.close().unwrap();
}

/// One thread commits and begins snapshots in turn, keeping a random few: a lane rewrites its
/// epoch in place for the next state when no snapshot holds it (`Readers::begin`), so each
/// snapshot kept, begun from an epoch later reused or replaced, must still read its own state,
/// and each new one the last. Seeded (`JACKDAW_SEED` replays it).
#[test]
fn snapshots_kept_on_the_committing_thread_keep_their_state() {
    let mut rng = Rng::new(seed());
    let dir = tmpdir("readers-epoch");
    let env = Env::open(&*dir, Options::default().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "v", 0u64.to_be_bytes()).unwrap();
    tx.commit().unwrap();
    let value = |r: &jackdaw::ReadTxn| -> u64 {
        u64::from_be_bytes(r.get(&t, "v").unwrap().unwrap().as_ref().try_into().unwrap())
    };
    let mut kept: Vec<(jackdaw::ReadTxn, u64)> = Vec::new();
    for i in 1..=600u64 {
        let mut tx = env.write().unwrap();
        tx.put(&t, "v", i.to_be_bytes()).unwrap();
        tx.commit().unwrap();
        // One to three snapshots of this state (the first makes the lane's epoch for it, the
        // next ones begin from it), some kept, some dropped at once.
        for _ in 0..1 + rng.below(3) {
            let r = env.read().unwrap();
            assert_eq!(value(&r), i, "a new snapshot after commit {i}");
            if rng.below(4) == 0 {
                kept.push((r, i));
            }
        }
        if rng.below(50) == 0 {
            env.flush().unwrap();
        }
        // Drop a random kept snapshot now and then, so epochs are freed in every order.
        if !kept.is_empty() && rng.below(3) == 0 {
            kept.swap_remove(rng.below(kept.len() as u64) as usize);
        }
        for (r, v) in &kept {
            assert_eq!(value(r), *v, "snapshot of commit {v}, checked after commit {i}");
        }
    }
    assert!(kept.len() > 10, "too few snapshots kept to prove anything: {}", kept.len());
    drop(kept);
    let report = env.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// 40 keys with values of 1,500 bytes (two a leaf, so a commit changes some twenty leaves), all
/// rewritten by every commit in a random order with the commit's number: each snapshot, on four
/// threads, reads every key at one number, never less than the snapshot before it, and the
/// snapshots held across later commits and flushes still read theirs. A flush every 20 commits (and the background
/// flusher's own) sets, rewrites and empties slots throughout. Random order and reader timing from a seed
/// (`JACKDAW_SEED` replays the order).
#[test]
fn every_page_of_a_commit_is_read_at_its_version_while_slots_change() {
    let seed = seed();
    let dir = tmpdir("readers-slots");
    let env = Env::open(&*dir, Options::default().flush_threshold_bytes(64 << 10)).unwrap();
    const KEYS: u64 = 40;
    const COMMITS: u64 = 600;
    let key = |k: u64| format!("key{k:04}");
    let value = |i: u64| {
        let mut v = vec![(i % 251) as u8; 1500];
        v[..8].copy_from_slice(&i.to_be_bytes());
        v
    };
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in 0..KEYS {
        tx.put(&t, key(k), value(0)).unwrap();
    }
    tx.commit().unwrap();
    let done = AtomicBool::new(false);
    let read_all = |r: &jackdaw::ReadTxn| -> Vec<u64> {
        (0..KEYS)
            .map(|k| {
                let v = r.get(&t, key(k)).unwrap().unwrap();
                let i = u64::from_be_bytes(v[..8].try_into().unwrap());
                assert_eq!(&v[..], &value(i)[..], "key {k}: the value's bytes disagree with its number {i}");
                i
            })
            .collect()
    };
    let (snapshots, held) = std::thread::scope(|s| {
        let readers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let (mut last, mut n, mut checked) = (0, 0u64, 0usize);
                    let mut held = std::collections::VecDeque::new();
                    let check_held = |(r, i): (jackdaw::ReadTxn, u64)| {
                        assert!(read_all(&r).iter().all(|x| *x == i), "held snapshot {} at commit {i}", r.txid());
                    };
                    while !done.load(Ordering::Acquire) {
                        let r = env.read().unwrap();
                        let seen = read_all(&r);
                        assert!(seen.iter().all(|i| *i == seen[0]), "snapshot {} saw {seen:?}", r.txid());
                        assert!(seen[0] >= last, "a later snapshot saw an older commit: {} after {last}", seen[0]);
                        last = seen[0];
                        n += 1;
                        // A few snapshots held for a while (so that flushes still move on),
                        // read again when let go.
                        if n.is_multiple_of(53) {
                            held.push_back((r, last));
                            if held.len() > 3 {
                                check_held(held.pop_front().expect("four held"));
                                checked += 1;
                            }
                        }
                    }
                    checked += held.len();
                    held.into_iter().for_each(check_held);
                    (n, checked)
                })
            })
            .collect();
        let mut rng = Rng::new(seed);
        let mut order: Vec<u64> = (0..KEYS).collect();
        for i in 1..=COMMITS {
            for j in (1..order.len()).rev() {
                order.swap(j, (rng.next_u64() % (j as u64 + 1)) as usize);
            }
            let mut tx = env.write().unwrap();
            for k in &order {
                tx.put(&t, key(*k), value(i)).unwrap();
            }
            tx.commit().unwrap();
            if i % 20 == 0 {
                env.flush().unwrap();
            }
        }
        done.store(true, Ordering::Release);
        readers.into_iter().map(|h| h.join().unwrap()).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    assert!(snapshots > 100 && held > 0, "{snapshots} snapshots, {held} held: the test proved nothing");
    let flushes = env.stats().flushes;
    assert!(flushes > 10, "{flushes} flushes: slots were not emptied by retires");
    assert!(read_all(&env.read().unwrap()).iter().all(|i| *i == COMMITS));
    let report = env.check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    env.close().unwrap();
}

/// After reads on many threads, dropping the `Env` closes every file of the database: at once
/// when no read transaction is alive, else when the last one (which still reads) ends.
#[test]
fn an_env_dropped_after_reads_on_many_threads_closes_its_files() {
    for outlive in [false, true] {
        let dir = tmpdir("readers-drop");
        let env = Env::open(&*dir, Options::default()).unwrap();
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for i in 0..500u32 {
            tx.put(&t, i.to_be_bytes(), [7u8; 50]).unwrap();
        }
        tx.commit().unwrap();
        std::thread::scope(|s| {
            for j in 0..6u32 {
                let (env, t) = (&env, &t);
                s.spawn(move || {
                    for i in 0..2_000u32 {
                        let r = env.read().unwrap();
                        assert!(r.get(t, ((i * 7 + j) % 500).to_be_bytes()).unwrap().is_some());
                    }
                });
            }
        });
        assert!(fds_under(&dir) > 0, "the open database's files are not seen: the test proves nothing");
        let kept = outlive.then(|| env.read().unwrap());
        drop(env);
        if let Some(r) = kept {
            // The environment is gone; the transaction still reads its snapshot.
            assert_eq!(r.get(&t, 3u32.to_be_bytes()).unwrap().unwrap().as_ref(), &[7u8; 50][..]);
            assert!(fds_under(&dir) > 0, "files closed under a live read transaction");
        }
        assert_eq!(fds_under(&dir), 0, "files of a dropped Env still open (outlive: {outlive})");
    }
}

/// Values and an iterator of a snapshot whose pages are page-table versions, read in place: the
/// flush that retires those versions, and the commits after it (whose page copies come from the
/// buffers retired versions go back to), change nothing the snapshot reads.
#[test]
fn versions_read_in_place_survive_the_flush_that_retires_them() {
    let dir = tmpdir("readers-in-place");
    let env = Env::open(&*dir, Options::default().flusher(FlusherMode::Manual)).unwrap();
    const KEYS: u32 = 400;
    let key = |i: u32| format!("key{i:05}");
    let value = |i: u32, round: u32| vec![(i % 251) as u8 ^ (round as u8); 100];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..KEYS {
        tx.put(&t, key(i), value(i, 0)).unwrap();
    }
    tx.commit().unwrap();
    // Every page of the tree is a version in memory now (no flush yet).
    let r = env.read().unwrap();
    let held: Vec<_> = (0..KEYS).map(|i| r.get(&t, key(i)).unwrap().unwrap()).collect();
    let mut it = r.range(&t, ..).unwrap();
    for i in 0..KEYS / 2 {
        let (k, v) = it.next().unwrap().unwrap();
        assert_eq!((k.as_ref(), v.as_ref()), (key(i).as_bytes(), &value(i, 0)[..]));
    }
    for (i, v) in held.iter().enumerate() {
        assert_eq!(v.as_ref(), &value(i as u32, 0)[..], "value {i}, read in place in the page table");
    }
    for round in 1..=20 {
        env.flush().unwrap();
        let mut tx = env.write().unwrap();
        for i in 0..KEYS {
            tx.put(&t, key(i), value(i, round)).unwrap();
        }
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    for (i, v) in held.iter().enumerate() {
        assert_eq!(v.as_ref(), &value(i as u32, 0)[..], "value {i} returned before the flush changed");
    }
    for i in KEYS / 2..KEYS {
        let (k, v) = it.next().unwrap().unwrap();
        assert_eq!((k.as_ref(), v.as_ref()), (key(i).as_bytes(), &value(i, 0)[..]), "iterator at key {i}");
    }
    assert!(it.next().is_none());
    let kept = env.stats().retired_kept_bytes;
    assert!(kept >= 4096, "the versions the snapshot read stay in memory while it lives: {kept} bytes");
    drop((held, it, r));
    let r = env.read().unwrap();
    // The new snapshot's lane let go of the old one's epoch, and with it of the retired versions.
    assert_eq!(env.stats().retired_kept_bytes, 0);
    for i in 0..KEYS {
        assert_eq!(r.get(&t, key(i)).unwrap().unwrap().as_ref(), &value(i, 20)[..]);
    }
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// Handles a snapshot returned from the mapped data file (values, keys, and a key's nested list
/// of values half-way read, which is read in place) keep their bytes while later commits grow
/// the file, which maps it anew each time, and flushes write newer versions of the same pages:
/// each handle holds its snapshot, whose view holds the mapping it read (`storage::sys::Held`).
#[test]
fn handles_of_the_mapped_file_survive_its_growth_and_rewrites() {
    let dir = tmpdir("readers-mapped");
    let env = Env::open(&*dir, Options::default().flusher(FlusherMode::Manual)).unwrap();
    let key = |i: u32| format!("key{i:05}");
    let value = |i: u32, round: u32| vec![(i % 251) as u8 ^ (round as u8).wrapping_mul(37); 300];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    for i in 0..200 {
        tx.put(&t, key(i), value(i, 0)).unwrap();
    }
    for v in 0..40u32 {
        tx.multi_put(&m, b"list", v.to_be_bytes()).unwrap();
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    let data = dir.join("data.jdb");
    let len0 = std::fs::metadata(&data).unwrap().len();
    let r = env.read().unwrap();
    let held: Vec<_> = (0..200).map(|i| r.get(&t, key(i)).unwrap().unwrap()).collect();
    let mut vals = r.multi_get(&m, b"list").unwrap();
    let first = vals.next().unwrap().unwrap();
    let (k0, _) = r.range(&t, ..).unwrap().next().unwrap().unwrap();
    for round in 1..=8u32 {
        let mut tx = env.write().unwrap();
        for i in 0..200 {
            tx.put(&t, key(i), value(i, round)).unwrap();
        }
        for i in 0..1_000 {
            tx.put(&t, format!("more{round}-{i:05}"), [round as u8; 1_000]).unwrap();
        }
        tx.multi_delete(&m, b"list", (round - 1).to_be_bytes()).unwrap();
        tx.commit().unwrap();
        env.flush().unwrap();
    }
    let len1 = std::fs::metadata(&data).unwrap().len();
    assert!(len1 > 4 * len0, "the file grew (mapped anew): {len0} -> {len1} bytes");
    for (i, v) in held.iter().enumerate() {
        assert_eq!(v.as_ref(), &value(i as u32, 0)[..], "value {i}, held across growth and rewrites");
    }
    assert_eq!(k0.as_ref(), key(0).as_bytes());
    assert_eq!(first.as_ref(), &0u32.to_be_bytes()[..]);
    let rest: Vec<u32> = vals.map(|v| u32::from_be_bytes(v.unwrap().as_ref().try_into().unwrap())).collect();
    assert_eq!(rest, (1..40).collect::<Vec<_>>(), "the list as the snapshot saw it");
    drop((held, first, k0, r));
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, key(7)).unwrap().unwrap().as_ref(), &value(7, 8)[..]);
    assert_eq!(r.multi_count(&m, b"list").unwrap(), 32);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A read transaction held across many commits and flushes keeps at most the page versions the
/// table held when it began (the only ones a flush can retire while it lives: versions at or
/// below its id), not one more per flush; they are freed when it ends.
#[test]
fn a_long_reader_keeps_no_more_than_the_table_held_when_it_began() {
    let dir = tmpdir("readers-long");
    let env = Env::open(&*dir, Options::default().flusher(FlusherMode::Manual)).unwrap();
    let key = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 5_000).to_be_bytes();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    for c in 0..20u64 {
        let mut tx = env.write().unwrap();
        for i in 0..250 {
            tx.put(&t, key(c * 250 + i), [c as u8; 200]).unwrap();
        }
        tx.commit().unwrap();
    }
    let held_at_begin = env.stats().scratch_bytes;
    let r = env.read().unwrap();
    let before: Vec<Option<Vec<u8>>> = (0..5_000).map(|i| r.get(&t, key(i)).unwrap().map(|b| b.to_vec())).collect();
    for c in 20..80u64 {
        let mut tx = env.write().unwrap();
        for i in 0..250 {
            tx.put(&t, key(c * 250 + i), [c as u8; 200]).unwrap();
        }
        tx.commit().unwrap();
        env.flush().unwrap();
    }
    let st = env.stats();
    assert!(st.retired_kept_bytes > 0, "the first flush retired versions the reader may read");
    assert!(
        st.retired_kept_bytes <= held_at_begin,
        "kept {} bytes, more than the {held_at_begin} the table held when the reader began",
        st.retired_kept_bytes
    );
    for (i, v) in before.iter().enumerate() {
        assert_eq!(r.get(&t, key(i as u64)).unwrap().map(|b| b.to_vec()), *v, "key {i}");
    }
    drop(r);
    env.flush().unwrap();
    assert_eq!(env.stats().retired_kept_bytes, 0, "freed once the reader is gone and a flush began");
}
