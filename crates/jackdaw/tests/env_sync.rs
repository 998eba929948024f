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
