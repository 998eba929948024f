//! The spare journal file (`journal/writer.rs`, `Spare`): with a background flusher, the next new
//! journal file is zero-filled and synced on a thread of its own, and the rotation that needs it
//! only renames it. These tests show that rotations take it, that a failing spare costs nothing
//! but a file created inline, and that no spare outlives the environment.

mod common;

use common::*;
use jackdaw::internals::{
    FsStorage, JournalHandles, LockAttempt, LockTarget, OpenMode, Storage, StorageFile, SyncSite,
};
use jackdaw::{Durability, Env, FlusherMode, Options};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SPARE: &str = "spare.jnl.tmp";

/// Journal files of 64 KiB and none kept for recycling: every rotation needs a new file.
fn opts(flusher: FlusherMode) -> Options {
    Options::default().journal_file_bytes(64 << 10).journal_files_kept(0).flusher(flusher)
}

/// `n` transactions of 4 keys with 3 KiB values (about 4 pages each, so a 64 KiB file holds a
/// few records), alternating `Buffered` and `Sync`; flushes now and then so files retire.
fn workload(env: &Env, n: u64) {
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    for i in 0..n {
        let mut tx = env.write().unwrap();
        tx.set_durability(if i % 2 == 0 { Durability::Buffered } else { Durability::Sync });
        for k in 0..4u64 {
            tx.put(&t, key(i, k), value(i, k)).unwrap();
        }
        tx.commit().unwrap();
        if i % 40 == 39 {
            env.flush().unwrap();
        }
    }
}

fn key(i: u64, k: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(i * 7919 % 1000).to_be_bytes());
    b[8..].copy_from_slice(&(i * 4 + k).to_be_bytes());
    b
}

fn value(i: u64, k: u64) -> Vec<u8> {
    (0..3000u64).map(|j| (((i * 31 + k * 17 + j) * 2654435761) >> 11) as u8).collect()
}

fn assert_contents(env: &Env, n: u64) {
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().expect("tree t");
    for i in 0..n {
        for k in 0..4u64 {
            let v = r.get(&t, key(i, k)).unwrap().unwrap_or_else(|| panic!("key ({i}, {k}) missing"));
            assert_eq!(&v[..], &value(i, k)[..], "value of ({i}, {k})");
        }
    }
}

fn spare_exists(dir: &Path) -> bool {
    dir.join("journal").join(SPARE).exists()
}

#[test]
fn rotations_take_the_spare_and_close_removes_it() {
    let dir = TestDb::dir("spare-used");
    let env = Env::open(&dir, opts(FlusherMode::Background)).unwrap();
    workload(&env, 200);
    let s = env.stats();
    // Only the first file, created when no spare existed yet, was zero-filled by a commit.
    assert!(s.journal_files_created >= 10, "{s:?}");
    assert_eq!(s.journal_files_prepared, s.journal_files_created - 1, "{s:?}");
    assert_eq!(s.journal_files_recycled, 0, "{s:?}");
    env.close().unwrap();
    assert!(!spare_exists(dir.path()), "the spare outlived close()");
    drop(env);
    let env = Env::open(&dir, opts(FlusherMode::Background)).unwrap();
    assert_contents(&env, 200);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn a_manual_environment_prepares_nothing_ahead() {
    let dir = TestDb::dir("spare-manual");
    let env = Env::open(&dir, opts(FlusherMode::Manual)).unwrap();
    workload(&env, 120);
    let s = env.stats();
    assert!(s.journal_files_created >= 5, "{s:?}");
    assert_eq!(s.journal_files_prepared, 0, "{s:?}");
    assert!(!spare_exists(dir.path()));
    drop(env);
    let env = Env::open(&dir, opts(FlusherMode::Manual)).unwrap();
    assert_contents(&env, 120);
}

#[test]
fn a_leftover_spare_is_removed_at_open() {
    let dir = TestDb::dir("spare-leftover");
    let env = Env::open(&dir, opts(FlusherMode::Background)).unwrap();
    workload(&env, 30);
    drop(env);
    // What a crash while the spare was being written leaves: a partial file of junk.
    std::fs::write(dir.path().join("journal").join(SPARE), vec![0xA5u8; 10_000]).unwrap();
    let env = Env::open(&dir, opts(FlusherMode::Manual)).unwrap();
    assert!(!spare_exists(dir.path()), "open must delete a leftover spare");
    assert_contents(&env, 30);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// The real file system, except that creating the spare fails (as a full disk would) `fail`
/// times at most.
#[derive(Debug)]
struct NoSpare {
    fail: AtomicU64,
    refused: AtomicU64,
}

impl Storage for NoSpare {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        if path.file_name().is_some_and(|n| n == SPARE)
            && self.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |f| f.checked_sub(1)).is_ok()
        {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        FsStorage.open(path, mode)
    }
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        FsStorage.open_journal(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        FsStorage.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        FsStorage.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        FsStorage.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        FsStorage.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        FsStorage.remove(path)
    }
    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()> {
        FsStorage.sync_dir(path, site)
    }
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        FsStorage.lock(path, target)
    }
}

#[test]
fn a_failed_spare_is_replaced_by_a_file_created_inline() {
    let dir = TestDb::dir("spare-failing");
    let storage = Arc::new(NoSpare { fail: AtomicU64::new(3), refused: AtomicU64::new(0) });
    let env = Env::open(&dir, opts(FlusherMode::Background).storage(storage.clone())).unwrap();
    workload(&env, 200);
    let s = env.stats();
    assert_eq!(storage.refused.load(Ordering::SeqCst), 3, "the first three spares must have failed");
    // Every rotation still got a file: the three whose spare failed created theirs inline.
    assert!(s.journal_files_created >= 10, "{s:?}");
    assert_eq!(s.journal_files_prepared, s.journal_files_created - 4, "{s:?}");
    assert!(!s.poisoned, "a failed spare must not poison the environment");
    env.close().unwrap();
    assert!(!spare_exists(dir.path()));
    drop(env);
    let env = Env::open(&dir, opts(FlusherMode::Manual)).unwrap();
    assert_contents(&env, 200);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
