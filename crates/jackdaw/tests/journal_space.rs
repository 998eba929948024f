//! Journal files do not outlive their use (space issue §1, the part owned by the journal):
//! after a clean `close` the journal directory is empty, the data file holding everything; a file
//! made bigger than `journal_file_bytes` for one huge record is deleted once flushed, not kept for
//! recycling; a close that a live snapshot keeps from flushing everything keeps the files the
//! next open needs.

mod common;

use common::{test_opts, TestDb};
use jackdaw::{Durability, Env, FlusherMode};
use std::path::Path;

fn jnl_files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir.join("journal"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().map_or(0, |m| m.len())))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn commit_n(env: &Env, first: u32, n: u32, len: usize) {
    let mut tx = env.write().unwrap();
    let t = match tx.open_tree("t").unwrap() {
        Some(t) => t,
        None => tx.create_tree("t").unwrap(),
    };
    for i in first..first + n {
        tx.put(&t, i.to_be_bytes(), common::noise(u64::from(i), len)).unwrap();
    }
    tx.commit().unwrap();
}

fn count(env: &Env) -> usize {
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    r.range(&t, ..).unwrap().count()
}

#[test]
fn a_clean_close_leaves_no_journal_file() {
    let dir = TestDb::dir("jspace-close");
    let env = Env::open(&dir, test_opts().durability(Durability::Sync)).unwrap();
    for i in 0..200u32 {
        commit_n(&env, i * 50, 50, 100);
    }
    assert!(!jnl_files(dir.path()).is_empty(), "the commits wrote journal files");
    env.close().unwrap();
    assert_eq!(jnl_files(dir.path()), Vec::<(String, u64)>::new(), "journal files after a clean close");
    let env = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(count(&env), 10_000);
    // Commits after the reopen start a new journal and are kept.
    commit_n(&env, 10_000, 10, 100);
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(count(&env), 10_010);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn a_file_made_for_one_huge_record_is_not_kept() {
    let dir = TestDb::dir("jspace-huge");
    let opts = test_opts().journal_file_bytes(64 << 10).flusher(FlusherMode::Manual).write_once_min_pages(0);
    let env = Env::open(&dir, opts.clone()).unwrap();
    commit_n(&env, 0, 10, 100);
    // ~2 MiB of journaled pages (write-once off): a record, and a file, of its own size.
    commit_n(&env, 10, 1000, 2000);
    commit_n(&env, 2000, 10, 100);
    let biggest = jnl_files(dir.path()).iter().map(|(_, l)| *l).max().unwrap();
    assert!(biggest > 1 << 20, "the huge record got a file of its own size ({biggest} bytes)");
    env.flush().unwrap();
    // Once flushed, retired files are kept for recycling only up to the configured size.
    commit_n(&env, 3000, 10, 100);
    env.flush().unwrap();
    let left = jnl_files(dir.path());
    assert!(left.iter().all(|(_, l)| *l <= 1 << 20), "a file bigger than journal_file_bytes was kept: {left:?}");
    drop(env);
    let env = Env::open(&dir, opts).unwrap();
    assert_eq!(count(&env), 1030);
}

#[test]
fn a_close_held_back_by_a_snapshot_keeps_what_the_next_open_needs() {
    let dir = TestDb::dir("jspace-held");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    commit_n(&env, 0, 100, 100);
    let snap = env.read().unwrap();
    commit_n(&env, 100, 100, 100);
    // The snapshot keeps the flush below the last commit: close says Busy, files stay.
    assert!(env.close().is_err());
    assert!(!jnl_files(dir.path()).is_empty(), "the unflushed commit's journal was removed");
    drop(snap);
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(count(&env), 200);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
