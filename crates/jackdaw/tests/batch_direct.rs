//! `Env::write_batch` commits on the calling thread when the merger is idle and commits are not
//! `Sync` (no hand-over between threads; up to two callers at a time wait there for a busy writer,
//! the others commit in groups on their own threads), and keeps every rule of a merged batch. Its own test
//! binary: it counts the process's merger threads, which other tests running beside it could
//! start.
mod common;
use common::*;
use jackdaw::{Durability, Env, Error, WriteBatch};

/// The merger's threads in this process (`jackdaw-merger`, `jackdaw-committer`, by the names the
/// kernel keeps: 15 bytes), or `None` without `/proc`. Counted by name: the other background
/// threads (the flusher, the journal's spare-file thread) start and end on their own, and a
/// spare-file thread ending during the batches once made a count of all threads fall.
fn merger_threads() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let names = tasks.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok());
    Some(names.filter(|n| n.starts_with("jackdaw-merger") || n.starts_with("jackdaw-committ")).count())
}

/// Wait (up to 20 s) until `n` callers are queued in the environment's group, and assert it.
fn wait_queued(env: &Env, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while env.queued_batches() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(env.queued_batches(), n, "callers queued in the group");
}

#[test]
fn batches_commit_on_the_calling_thread_unless_sync() {
    let dir = TestDb::dir("batch_direct");
    let env = Env::open(&dir, test_opts().durability(Durability::Buffered)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    tx.commit().unwrap();
    let commits = env.stats().commits;
    for i in 0..100u32 {
        let mut b = WriteBatch::new();
        b.put(&t, i.to_be_bytes(), b"v");
        b.multi_put(&m, b"k", i.to_be_bytes());
        env.write_batch(b).unwrap();
    }
    assert_eq!(env.stats().commits - commits, 100, "one commit a batch");
    if let Some(n) = merger_threads() {
        assert_eq!(n, 0, "no merger thread started for one caller's Buffered batches");
    }
    // A bad batch fails alone and changes nothing, as in the merger.
    let mut too_big = WriteBatch::new();
    too_big.put(&t, b"c", b"3");
    too_big.put(&t, vec![0u8; 5000], b"y");
    assert!(matches!(env.write_batch(too_big), Err(Error::KeyTooLarge { .. })));
    let mut wrong = WriteBatch::new();
    wrong.put(&t, b"d", b"4");
    wrong.multi_put(&t, b"k", b"v");
    assert!(matches!(env.write_batch(wrong), Err(Error::WrongTreeKind(_))));
    // A thread holding the write transaction still gets Busy.
    let tx = env.write().unwrap();
    let mut b = WriteBatch::new();
    b.put(&t, b"z", b"z");
    assert!(matches!(env.write_batch(b), Err(Error::Busy(_))));
    drop(tx);
    let r = env.read().unwrap();
    assert_eq!(r.tree_stats(&t).unwrap().entries, 100);
    assert!(r.get(&t, b"c").unwrap().is_none() && r.get(&t, b"d").unwrap().is_none());
    assert_eq!(r.multi_count(&m, b"k").unwrap(), 100);
    drop(r);

    // The writer busy: two callers wait for it on their own threads (still no merger thread); the
    // callers that come while two wait queue in a group, whose leader commits every batch queued
    // by the time it gets the writer in one transaction (a bad batch among them fails alone).
    let tx = env.write().unwrap();
    let commits = env.stats().commits;
    let put = |k: &[u8]| {
        let mut b = WriteBatch::new();
        b.put(&t, k, b"w");
        env.write_batch(b)
    };
    std::thread::scope(|s| {
        let first = s.spawn(|| put(b"w1"));
        let second = s.spawn(|| put(b"w2"));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !first.is_finished() && !second.is_finished(),
            "a batch committed while another thread held the writer"
        );
        assert_eq!(env.queued_batches(), 0, "the first two callers wait for the writer, not in the group");
        let mut grouped = Vec::new();
        for i in 0..5u8 {
            grouped.push(s.spawn(move || put(&[b'g', b'0' + i])));
            // One at a time, so that the direct waiters are surely two (their count is only
            // a bound while callers arrive together).
            wait_queued(&env, i as usize + 1);
        }
        let bad = s.spawn(|| put(&[7u8; 5000]));
        wait_queued(&env, 6);
        if let Some(n) = merger_threads() {
            assert_eq!(n, 0, "callers waiting for the writer wait on their own threads, not the merger's");
        }
        drop(tx);
        first.join().unwrap().unwrap();
        second.join().unwrap().unwrap();
        for g in grouped {
            g.join().unwrap().unwrap();
        }
        assert!(matches!(bad.join().unwrap(), Err(Error::KeyTooLarge { .. })), "a bad batch in a group fails alone");
    });
    assert_eq!(env.stats().commits - commits, 3, "two direct commits and one for the group's five good batches");
    assert_eq!(env.queued_batches(), 0);
    let r = env.read().unwrap();
    for k in ["w1", "w2", "g0", "g1", "g2", "g3", "g4"] {
        assert!(r.get(&t, k).unwrap().is_some(), "{k} committed");
    }
    drop(r);
    env.close().unwrap();
    drop(env);

    // Sync: batches go through the merger (its threads start), where callers share syncs.
    let env = Env::open(&dir, test_opts()).unwrap();
    let t = env.read().unwrap().open_tree("t").unwrap().unwrap();
    let mut b = WriteBatch::new();
    b.put(&t, b"s", b"1");
    env.write_batch(b).unwrap();
    if let Some(n) = merger_threads() {
        assert!(n > 0, "the merger's threads run Sync batches");
    }
    assert!(env.read().unwrap().get(&t, b"s").unwrap().is_some());
    env.close().unwrap();
}

/// Closing while callers wait for the writer (two on its mutex, the rest in a group): every
/// caller returns, none hangs, and a batch that did not commit reports `Closed`.
#[test]
fn callers_waiting_for_the_writer_return_when_the_environment_closes() {
    let dir = TestDb::dir("batch_direct_close");
    let env = Env::open(&dir, test_opts().durability(Durability::Buffered)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let tx = env.write().unwrap();
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..6u8)
            .map(|i| {
                let (env, t) = (&env, &t);
                s.spawn(move || {
                    let mut b = WriteBatch::new();
                    b.put(t, [i], b"v");
                    env.write_batch(b)
                })
            })
            .collect();
        // Four queued in the group behind the two waiting on the mutex.
        wait_queued(&env, 4);
        // This thread holds the writer: close does not wait for it, and says so.
        assert!(matches!(env.close(), Err(Error::Busy(_))));
        drop(tx);
        for c in callers {
            match c.join().unwrap() {
                Err(Error::Closed) => {}
                other => panic!("a caller waiting across close got {other:?}, not Closed"),
            }
        }
    });
    assert_eq!(env.queued_batches(), 0);
}
