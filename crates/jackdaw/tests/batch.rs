//! Write batches: the transaction merger (`Sync`) and groups on the callers' threads (`Buffered`).
mod common;
use common::*;
use jackdaw::{Durability, Env, Error, WriteBatch};
use std::sync::Arc;

#[test]
fn eight_threads_of_batches_commit_exactly_once_in_order_with_group_commit() {
    let batches_per_write = threads_of_batches(Durability::Sync, 8, 10_000);
    // Without group commit every batch is one journal write. How many merge depends on the
    // machine's load (5.8 per write on a quiet 2-core machine, 3.8 with the other core busy), so
    // the bound is loose: at least two batches per write on average.
    assert!(batches_per_write > 2.0, "group commit through the merger: {batches_per_write:.2} batches per write");
}

/// `Buffered`: callers past the two that wait for a busy writer commit in groups on their own
/// threads (`batch::Group`), with the same guarantees.
#[test]
fn sixteen_threads_of_buffered_batches_commit_exactly_once_in_order_in_groups() {
    let batches_per_write = threads_of_batches(Durability::Buffered, 16, 2_000);
    // Sixteen threads that only write keep the writer busy: most callers queue in groups.
    assert!(batches_per_write > 1.0, "groups on the callers' threads: {batches_per_write:.2} batches per write");
}

/// `threads` threads each write `per` batches of 10 puts with `write_batch` while a reader checks
/// that each thread's batches become visible whole and in order; every batch is there exactly
/// once at the end. Returns batches per journal write.
fn threads_of_batches(durability: Durability, threads: u32, per: u32) -> f64 {
    let dir = TestDb::dir("batches");
    let env = Env::open(&dir, test_opts().durability(durability)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.create_multi_tree("order").unwrap();
    tx.commit().unwrap();
    let before = env.stats();
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let (env, t) = (env.clone(), t.clone());
            std::thread::spawn(move || {
                for b in 0..per {
                    let mut batch = WriteBatch::new();
                    for i in 0..10u32 {
                        batch.put(&t, format!("{th:02}-{b:06}-{i:02}"), format!("{th}:{b}:{i}"));
                    }
                    // The batch's position in the thread's sequence, to check the order later.
                    batch.put(&t, format!("last-{th:02}"), b.to_be_bytes());
                    env.write_batch(batch).unwrap();
                }
            })
        })
        .collect();
    // Meanwhile, a reader checks that each thread's last batch number only grows.
    let reader = {
        let env = env.clone();
        std::thread::spawn(move || {
            let mut last = vec![0u32; threads as usize];
            for _ in 0..200 {
                let r = env.read().unwrap();
                let t = r.open_tree("t").unwrap().unwrap();
                for th in 0..threads {
                    if let Some(v) = r.get(&t, format!("last-{th:02}")).unwrap() {
                        let b = u32::from_be_bytes(v.as_ref().try_into().unwrap());
                        assert!(b >= last[th as usize], "thread {th}: batch {b} visible after {}", last[th as usize]);
                        // Every put of an acknowledged-order batch is there, all of it.
                        for i in 0..10u32 {
                            assert!(r.get(&t, format!("{th:02}-{b:06}-{i:02}")).unwrap().is_some());
                        }
                        last[th as usize] = b;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    reader.join().unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.tree_stats(&t).unwrap().entries, (threads * per * 10 + threads) as u64);
    for th in 0..threads {
        let n = r.prefix(&t, format!("{th:02}-")).unwrap().count();
        assert_eq!(n, (per * 10) as usize);
    }
    drop(r);
    let after = env.stats();
    let writes = after.journal_writes - before.journal_writes;
    let batches = (threads * per) as u64;
    println!(
        "{durability:?}: {batches} batches from {threads} threads in {writes} journal writes ({:.1} batches per write)",
        batches as f64 / writes as f64
    );
    assert_eq!(env.queued_batches(), 0);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    batches as f64 / writes as f64
}

#[test]
fn a_bad_batch_fails_alone_and_errors_are_typed() {
    let dir = TestDb::dir("badbatch");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    let nope = tx.create_tree("nope").unwrap();
    tx.commit().unwrap();
    // A handle to a tree deleted before the batch runs.
    let mut tx = env.write().unwrap();
    assert!(tx.delete_tree("nope").unwrap());
    tx.commit().unwrap();
    let mut good = WriteBatch::new();
    good.put(&t, b"a", b"1");
    good.multi_put(&m, b"k", b"v1");
    good.multi_put(&m, b"k", b"v2");
    let mut missing = WriteBatch::new();
    missing.put(&t, b"b", b"2");
    missing.put(&nope, b"x", b"y");
    let mut too_big = WriteBatch::new();
    too_big.put(&t, b"c", b"3");
    too_big.put(&t, vec![0u8; 5000], b"y");
    let mut wrong = WriteBatch::new();
    wrong.multi_put(&t, b"k", b"v");
    let hs = vec![
        env.write_batch_async(good),
        env.write_batch_async(missing),
        env.write_batch_async(too_big),
        env.write_batch_async(wrong),
    ];
    let rs: Vec<_> = hs.into_iter().map(|h| h.wait()).collect();
    assert!(rs[0].is_ok());
    assert!(matches!(rs[1], Err(Error::NoSuchTree(_))), "{:?}", rs[1]);
    assert!(matches!(rs[2], Err(Error::KeyTooLarge { .. })), "{:?}", rs[2]);
    assert!(matches!(rs[3], Err(Error::WrongTreeKind(_))), "{:?}", rs[3]);
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, b"a").unwrap().unwrap().as_ref(), b"1");
    // Nothing of the failed batches was applied.
    assert!(r.get(&t, b"b").unwrap().is_none());
    assert!(r.get(&t, b"c").unwrap().is_none());
    assert_eq!(r.multi_count(&m, b"k").unwrap(), 2);
    drop(r);
    // A thread holding the write transaction gets Busy instead of a deadlock.
    let tx = env.write().unwrap();
    let mut b = WriteBatch::new();
    b.put(&t, b"z", b"z");
    assert!(matches!(env.write_batch(b), Err(Error::Busy(_))));
    drop(tx);
    // Explicit transactions and batches take turns and never see each other's uncommitted work.
    let env2 = Arc::new(env.clone());
    let mut tx = env.write().unwrap();
    let tt = tx.open_tree("t").unwrap().unwrap();
    tx.put(&tt, b"explicit", b"1").unwrap();
    let h = {
        let (env2, t) = (env2.clone(), t.clone());
        std::thread::spawn(move || {
            let mut b = WriteBatch::new();
            b.put(&t, b"batched", b"1");
            env2.write_batch(b)
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(tx.get(&tt, b"batched").unwrap().is_none());
    tx.commit().unwrap();
    h.join().unwrap().unwrap();
    let r = env.read().unwrap();
    assert!(r.get(&t, b"explicit").unwrap().is_some() && r.get(&t, b"batched").unwrap().is_some());
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env.close().unwrap();
    let mut b = WriteBatch::new();
    b.put(&t, b"late", b"1");
    assert!(matches!(env.write_batch(b), Err(Error::Closed)));
}
