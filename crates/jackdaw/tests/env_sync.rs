//! `Env::sync()`: every committed transaction durable with one device sync, returning the last
//! durable transaction id; usable while another thread holds the write transaction.

mod common;

use common::{test_opts, TestDb};
use jackdaw::{Durability, Env, Error, FlusherMode};
use std::sync::mpsc;
use std::time::Duration;

fn journal_syncs(env: &Env) -> u64 {
    env.stats().syncs.iter().find(|(n, _)| *n == "journal.data").map(|(_, c)| *c).unwrap()
}

fn put(env: &Env, i: u32) -> u64 {
    let mut tx = env.write().unwrap();
    let t = match tx.open_tree("log").unwrap() {
        Some(t) => t,
        None => tx.create_tree("log").unwrap(),
    };
    tx.put(&t, i.to_be_bytes(), b"entry").unwrap();
    tx.commit().unwrap().txid.get()
}

#[test]
fn sync_makes_buffered_commits_durable_with_one_device_sync() {
    for durability in [Durability::Buffered, Durability::None] {
        let dir = TestDb::dir("env-sync");
        let env = Env::open(dir.path(), test_opts().durability(durability).flusher(FlusherMode::Manual)).unwrap();
        let mut last = 0;
        for i in 0..20 {
            last = put(&env, i);
        }
        let before = journal_syncs(&env);
        let durable = env.sync().unwrap();
        assert_eq!(durable.get(), last, "{durability:?}: the last committed transaction is durable");
        assert_eq!(journal_syncs(&env) - before, 1, "{durability:?}: one journal sync for 20 commits");
        // Nothing new: no sync at all.
        assert_eq!(env.sync().unwrap().get(), last);
        assert_eq!(journal_syncs(&env) - before, 1, "{durability:?}: nothing left to sync");
        env.close().unwrap();
        assert!(matches!(env.sync(), Err(Error::Closed)));
    }
}

#[test]
fn sync_does_not_wait_for_a_write_transaction_held_elsewhere() {
    let dir = TestDb::dir("env-sync-held");
    let env = Env::open(dir.path(), test_opts().durability(Durability::Buffered)).unwrap();
    let last = put(&env, 0);
    let tx = env.write().unwrap();
    let (done_tx, done) = mpsc::channel();
    let e = env.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(e.sync().map(|t| t.get()));
    });
    let r = done.recv_timeout(Duration::from_secs(20)).expect("sync waited for the write transaction");
    assert_eq!(r.unwrap(), last);
    drop(tx);
    // And on the thread that holds it.
    let tx = env.write().unwrap();
    assert_eq!(env.sync().unwrap().get(), last);
    drop(tx);
}

fn syncs(env: &Env, site: &str) -> u64 {
    env.stats().syncs.iter().find(|(n, _)| *n == site).map(|(_, c)| *c).unwrap()
}

/// A commit that writes pages once grows the data file without a sync of its own: the
/// `fdatasync` of those pages (`data.write_once`) makes the growth durable too, one device
/// flush instead of two. A commit that grows the file and writes nothing once syncs the growth
/// itself (`data.grow`) before its record. Both read back after a reopen.
#[test]
fn a_growth_is_synced_with_the_pages_written_once_or_on_its_own() {
    let dir = TestDb::dir("grow-sync");
    let data_len = || std::fs::metadata(dir.path().join("data.jdb")).unwrap().len();
    // Manual flusher: no growth ahead of the writer, so each commit below grows the file itself.
    let big = vec![7u8; 4 << 20];
    {
        let env = Env::open(dir.path(), test_opts().flusher(FlusherMode::Manual)).unwrap();
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.commit().unwrap();
        let (grow, once, len) = (syncs(&env, "data.grow"), syncs(&env, "data.write_once"), data_len());
        let mut tx = env.write().unwrap();
        tx.put(&t, b"big", &big).unwrap();
        let st = tx.commit().unwrap();
        assert!(st.written_once_pages > 1000, "the value was written once: {st:?}");
        assert!(data_len() >= len + (4 << 20), "the file grew: {len} -> {}", data_len());
        assert_eq!(syncs(&env, "data.write_once") - once, 1, "one sync of the pages written once");
        assert_eq!(syncs(&env, "data.grow") - grow, 0, "the growth was made durable by that sync");
        env.close().unwrap();
    }
    {
        // Pages written once off (`write_once_min_pages(0)`): everything is journaled.
        let env = Env::open(dir.path(), test_opts().flusher(FlusherMode::Manual).write_once_min_pages(0)).unwrap();
        let t = env.read().unwrap().open_tree("t").unwrap().unwrap();
        let (grow, once, len) = (syncs(&env, "data.grow"), syncs(&env, "data.write_once"), data_len());
        let mut tx = env.write().unwrap();
        for i in 0u32..40_000 {
            tx.put(&t, i.to_be_bytes(), [i as u8; 200]).unwrap();
        }
        let st = tx.commit().unwrap();
        assert_eq!(st.written_once_pages, 0, "{st:?}");
        assert!(data_len() > len, "the file grew: {len} -> {}", data_len());
        assert_eq!(syncs(&env, "data.write_once") - once, 0);
        assert_eq!(syncs(&env, "data.grow") - grow, 1, "the growth was synced on its own");
        env.close().unwrap();
    }
    let env = Env::open(dir.path(), test_opts()).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.get(&t, b"big").unwrap().unwrap().as_ref(), &big[..]);
    for i in (0u32..40_000).step_by(997) {
        assert_eq!(r.get(&t, i.to_be_bytes()).unwrap().unwrap().as_ref(), &[i as u8; 200][..]);
    }
    drop(r);
    env.check().unwrap();
}
