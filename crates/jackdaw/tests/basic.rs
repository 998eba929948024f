mod common;
use common::*;
use jackdaw::{Durability, Env, Error, FlusherMode, Options};

#[test]
fn commit_read_reopen() {
    let dir = TestDb::dir("basic");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let pages: Vec<u64> = (0..10).map(|i| alloc(&mut tx, i)).collect();
    let st = tx.commit().unwrap();
    assert_eq!(st.txid, 1);
    assert_eq!(st.pages, 10, "appended pages need no bitmap change");
    let r = env.read().unwrap();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(read_value(&r, *p), i as u64);
    }
    drop(r);
    check_pages(&env, pages.clone());
    let s = env.stats();
    assert_eq!(s.journal_io, "O_DIRECT|O_DSYNC", "tests run on the real disk: {s:?}");
    assert_eq!(s.journal_direct_writes, 1);
    env.close().unwrap();
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    let r = env.read().unwrap();
    assert_eq!(r.txid().get(), 1);
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(read_value(&r, *p), i as u64);
    }
    drop(r);
    dir.raw_pages(pages.clone());
    check_pages(&env, pages);
}

#[test]
fn abort_discards_pages_and_allocations() {
    let dir = TestDb::dir("abort");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let a = alloc(&mut tx, 1);
    tx.commit().unwrap();
    let before = env.stats();
    let mut tx = env.write().unwrap();
    fill(&mut tx, a, 99);
    let b = alloc(&mut tx, 2);
    tx.free_page(a).unwrap();
    tx.abort();
    let mut tx = env.write().unwrap();
    // The same page number comes back: the aborted allocation left no trace.
    let b2 = alloc(&mut tx, 3);
    assert_eq!(b, b2);
    drop(tx);
    let after = env.stats();
    assert_eq!(before.next_page, after.next_page);
    assert_eq!(before.free_pages, after.free_pages);
    assert_eq!(read_value(&env.read().unwrap(), a), 1);
    dir.raw_pages([a]);
    check_pages(&env, [a]);
}

#[test]
fn second_open_is_locked() {
    let dir = TestDb::dir("locked");
    let env = Env::open(&dir, test_opts()).unwrap();
    assert!(matches!(Env::open(&dir, test_opts()), Err(Error::Locked { .. })));
    drop(env);
    Env::open(&dir, test_opts()).unwrap();
}

#[test]
fn try_write_is_busy_while_writing() {
    let dir = TestDb::dir("busy");
    let env = Env::open(&dir, test_opts()).unwrap();
    let tx = env.write().unwrap();
    assert!(matches!(env.try_write(), Err(Error::Busy(_))));
    drop(tx);
    env.try_write().unwrap();
}

#[test]
fn closed_env_refuses_transactions_but_snapshots_read_on() {
    let dir = TestDb::dir("closed");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let a = alloc(&mut tx, 5);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let env2 = env.clone();
    // Closed, but the live snapshot keeps the database locked, and `close` says so.
    assert!(matches!(env.close(), Err(Error::Busy(_))));
    assert!(matches!(env2.write(), Err(Error::Closed)));
    assert!(matches!(env2.read(), Err(Error::Closed)));
    assert!(matches!(Env::open(&dir, test_opts()), Err(Error::Locked { .. })));
    assert_eq!(read_value(&r, a), 5);
    drop(r);
    let env3 = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(read_value(&env3.read().unwrap(), a), 5);
    dir.raw_pages([a]);
    check_pages(&env3, [a]);
}

#[test]
fn snapshot_sees_its_version_across_commits_and_flushes() {
    let dir = TestDb::dir("snap");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let a = alloc(&mut tx, 0);
    tx.commit().unwrap();
    let old = env.read().unwrap();
    for i in 1..=50 {
        let mut tx = env.write().unwrap();
        fill(&mut tx, a, i);
        tx.commit().unwrap();
        if i % 7 == 0 {
            env.flush().unwrap();
        }
        assert_eq!(read_value(&old, a), 0);
    }
    let s = env.stats();
    assert_eq!(s.oldest_reader_txid.map(|t| t.get()), Some(1));
    assert!(s.readers[0].pinned_bytes > 0);
    // Readers from another thread.
    let t = std::thread::spawn(move || read_value(&old, a));
    assert_eq!(t.join().unwrap(), 0);
    env.flush().unwrap();
    assert_eq!(env.stats().scratch_bytes, 0, "everything flushed once the reader is gone");
    assert_eq!(read_value(&env.read().unwrap(), a), 50);
    dir.raw_pages([a]);
    check_pages(&env, [a]);
}

#[test]
fn freed_pages_are_reused_and_old_readers_keep_old_content() {
    let dir = TestDb::dir("reuse");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let a = alloc(&mut tx, 7);
    tx.commit().unwrap();
    env.flush().unwrap();
    let r = env.read().unwrap();
    let mut tx = env.write().unwrap();
    tx.free_page(a).unwrap();
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    let b = alloc(&mut tx, 8);
    assert_eq!(a, b, "the freed page is reused by the next transaction");
    tx.commit().unwrap();
    env.flush().unwrap();
    assert_eq!(read_value(&r, a), 7);
    drop(r);
    env.flush().unwrap();
    assert_eq!(read_value(&env.read().unwrap(), a), 8);
    dir.raw_pages([b]);
    check_pages(&env, [b]);
}

#[test]
fn durability_modes_and_overrides() {
    let dir = TestDb::dir("modes");
    let env = Env::open(&dir, test_opts().durability(Durability::None).flusher(FlusherMode::Manual)).unwrap();
    let mut pages = Vec::new();
    for (i, d) in [Durability::None, Durability::Buffered, Durability::None, Durability::Sync].into_iter().enumerate() {
        let mut tx = env.write().unwrap();
        tx.set_durability(d);
        pages.push(alloc(&mut tx, i as u64));
        tx.commit().unwrap();
    }
    let s = env.stats();
    assert_eq!(s.last_committed_txid.get(), 4);
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    let r = env.read().unwrap();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(read_value(&r, *p), i as u64);
    }
    drop(r);
    dir.raw_pages(pages.clone());
    check_pages(&env, pages);
}

#[test]
fn many_commits_rotate_and_recycle_journal_files() {
    let dir = TestDb::dir("rotate");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let pages: Vec<u64> = (0..40).map(|i| alloc(&mut tx, i)).collect();
    tx.commit().unwrap();
    for round in 0..200u64 {
        let mut tx = env.write().unwrap();
        for (i, p) in pages.iter().enumerate() {
            if (i as u64 + round).is_multiple_of(3) {
                // Random-looking content defeats diffs and compression.
                let p2 = tx.page_mut(*p).unwrap();
                for (j, b) in p2[jackdaw::internals::PAGE_HEADER..].iter_mut().enumerate() {
                    *b = ((j as u64 * 2654435761 + round * 97 + i as u64) >> 7) as u8;
                }
            }
        }
        tx.commit().unwrap();
        if round % 50 == 49 {
            env.flush().unwrap();
        }
    }
    let s = env.stats();
    assert!(s.journal_files_created >= 2, "{s:?}");
    assert!(s.journal_files_recycled >= 1, "{s:?}");
    check_pages(&env, pages.clone());
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    dir.raw_pages(pages.clone());
    check_pages(&env, pages);
}

#[test]
fn options_are_validated() {
    let dir = TestDb::dir("opts");
    assert!(matches!(Env::open(&dir, Options::default().page_size(1000)), Err(Error::Invalid(_))));
    let env = Env::open(&dir, test_opts().page_size(16384)).unwrap();
    assert_eq!(env.stats().page_size, 16384);
    drop(env);
    // The page size of an existing database comes from its header.
    let env = Env::open(&dir, test_opts().page_size(4096)).unwrap();
    assert_eq!(env.stats().page_size, 16384);
}

#[test]
fn big_sync_commit_writes_pages_once_and_recovers() {
    use jackdaw::internals::MemStorage;
    use std::sync::Arc;
    let mem = MemStorage::new();
    let opts = || test_opts().storage(Arc::new(mem.clone())).flusher(FlusherMode::Manual).write_once_min_pages(16);
    let dir = std::path::PathBuf::from("/wo");
    let env = Env::open(&dir, opts()).unwrap();
    let mut tx = env.write().unwrap();
    let pages: Vec<u64> = (0..100).map(|i| alloc(&mut tx, i)).collect();
    let st = tx.commit().unwrap();
    assert_eq!(st.written_once_pages, 100);
    assert!(st.journal_bytes_written <= 8192, "only checksums are journaled: {st:?}");
    // A small follow-up commit modifies one of them through the journal.
    let mut tx = env.write().unwrap();
    fill(&mut tx, pages[5], 500);
    let st = tx.commit().unwrap();
    assert_eq!(st.written_once_pages, 0);
    let r = env.read().unwrap();
    assert_eq!(read_value(&r, pages[5]), 500);
    assert_eq!(read_value(&r, pages[99]), 99);
    drop(r);
    // Crash image: everything written so far, nothing flushed.
    let image = mem.deep_clone();
    check_pages(&env, pages.clone());
    drop(env);
    let env = Env::open(&dir, test_opts().storage(Arc::new(image))).unwrap();
    let r = env.read().unwrap();
    assert_eq!(r.txid().get(), 2);
    assert_eq!(read_value(&r, pages[5]), 500);
    for (i, p) in pages.iter().enumerate().filter(|(i, _)| *i != 5) {
        assert_eq!(read_value(&r, *p), i as u64);
    }
    drop(r);
    check_pages(&env, pages);
}

/// A commit that syncs the data file anyway (a value streamed straight to it) writes its other
/// fresh pages once too, even fewer than `write_once_min_pages`: they cost no flush of their own
/// and are not journaled. Recovered from a crash image with nothing flushed.
#[test]
fn a_commit_that_syncs_the_data_file_writes_its_few_fresh_pages_once_too() {
    use jackdaw::internals::MemStorage;
    use std::sync::Arc;
    let mem = MemStorage::new();
    let opts = || test_opts().storage(Arc::new(mem.clone())).flusher(FlusherMode::Manual).write_once_min_pages(16);
    let dir = std::path::PathBuf::from("/wo-few");
    let env = Env::open(&dir, opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("v").unwrap();
    tx.commit().unwrap();
    // 20 full overflow pages (4,048 bytes each): streamed at put time; 3 more: dirty pages.
    let big: Vec<u8> = (0..20 * 4048u32).map(|i| (i % 251) as u8).collect();
    let small: Vec<u8> = (0..3 * 4048u32).map(|i| (i % 241) as u8).collect();
    let mut tx = env.write().unwrap();
    tx.put(&t, "big", &big).unwrap();
    tx.put(&t, "small", &small).unwrap();
    let st = tx.commit().unwrap();
    // The 20 + 3 overflow pages and the tree's first leaf: only the catalog's leaf, rewritten
    // in place, is journaled (a diff).
    assert_eq!(st.written_once_pages, 24, "the fresh pages were written once with the value: {st:?}");
    assert!(st.journal_bytes_raw < 4096, "no fresh page image was journaled: {st:?}");
    let image = mem.deep_clone();
    env.check().unwrap().into_result().unwrap();
    drop(env);
    let env = Env::open(&dir, test_opts().storage(Arc::new(image))).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("v").unwrap().unwrap();
    assert_eq!(r.get(&t, "big").unwrap().unwrap().as_ref(), &big[..]);
    assert_eq!(r.get(&t, "small").unwrap().unwrap().as_ref(), &small[..]);
    drop(r);
    env.check().unwrap().into_result().unwrap();
}

/// Regression: with several commits prepared and waiting for the journal at once (pipelined
/// commits from many threads), publishing a version must not drop one a snapshot will read when
/// an earlier transaction becomes visible. Every commit rewrites page `a`, so a snapshot at
/// transaction t must see the version t stamped.
#[test]
fn snapshots_see_their_version_under_concurrent_pipelined_commits() {
    let dir = TestDb::dir("pipeline");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let a = alloc(&mut tx, 0);
    tx.commit().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..6)
        .map(|_| {
            let env = env.clone();
            std::thread::spawn(move || {
                for i in 0..150u64 {
                    let mut tx = env.write().unwrap();
                    fill(&mut tx, a, i);
                    tx.commit().unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (env, stop) = (env.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = env.read().unwrap();
                    let p = r.page(a).unwrap();
                    assert_eq!(
                        jackdaw::internals::page_txid(p),
                        r.txid().get(),
                        "snapshot {} read another version",
                        r.txid().get()
                    );
                    n += 1;
                }
                n
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    env.flush().unwrap();
    dir.raw_pages([a]);
    check_pages(&env, [a]);
}

/// A database opened only to be read is not grown: `close` trims the file to its high-water
/// mark, which is then past 7/8 of it, and the background flusher used to grow it by an eighth,
/// twice, within its first wake-ups after the open (two `fallocate`s and `fsync`s, and two
/// replacements of the mapping under the readers). Growth ahead is for a writer: the first
/// commit past the mark asks for it (`background_flusher_grows_the_data_file_ahead_of_the_writer`).
#[test]
fn a_database_opened_to_be_read_is_not_grown() {
    let dir = TestDb::dir("read-no-grow");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut pages = Vec::new();
    let mut tx = env.write().unwrap();
    for _ in 0..2000 {
        pages.push(alloc(&mut tx, pages.len() as u64));
    }
    tx.commit().unwrap();
    env.close().unwrap();
    // The flusher wakes every 5 ms (its idle interval) and finds the mark past 7/8 each time.
    let o = test_opts().flush_idle(std::time::Duration::from_millis(5));
    let env = Env::open(&dir, o).unwrap();
    let file_bytes = |env: &Env| env.stats().data_file_bytes;
    let at_open = file_bytes(&env);
    let (page_size, high) = (env.stats().page_size as u64, env.read().unwrap().next_page());
    assert!(high > at_open / page_size / 8 * 7, "the test needs the mark past 7/8: {high} pages of {at_open} bytes");
    for round in 0..60 {
        let r = env.read().unwrap();
        for (i, &p) in pages.iter().enumerate().skip(round).step_by(97) {
            assert_eq!(read_value(&r, p), i as u64);
        }
        drop(r);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(file_bytes(&env), at_open, "reading grew the data file");
    dir.raw_pages(pages.clone());
    check_pages(&env, pages);
}

/// The background flusher grows the data file ahead of the writer once a commit passes 7/8 of it:
/// the file grows although no commit runs after that one (a 64 MiB file by an eighth).
#[test]
fn background_flusher_grows_the_data_file_ahead_of_the_writer() {
    let dir = TestDb::dir("grow-ahead");
    // No flush on the way: only the growth wakes the thread.
    let o = test_opts().flush_threshold_bytes(1 << 40).flush_idle(std::time::Duration::from_secs(3600));
    let env = Env::open(&dir, o).unwrap();
    let file_pages = |env: &Env| env.stats().data_file_bytes / env.stats().page_size as u64;
    // One big commit: the file grows to exactly what it needs (20,004 pages: a step past the
    // small file would be less), past 7/8 of itself, which wakes the flusher.
    let mut pages = Vec::new();
    let mut tx = env.write().unwrap();
    for _ in 0..20000 {
        pages.push(alloc(&mut tx, pages.len() as u64));
    }
    tx.commit().unwrap();
    // The flusher may already have grown it by the time the commit returns here.
    let (need, grown) = (20004, 20004 + 20004 / 8);
    let before = file_pages(&env);
    assert!(before == need || before == grown, "the commit left {before} pages, not {need} (or {grown})");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while file_pages(&env) != grown && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(file_pages(&env), grown, "the flusher must add an eighth");
    assert_eq!(env.stats().flushes, 0, "growing is not flushing");
    check_pages(&env, pages.clone());
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    dir.raw_pages(pages.clone());
    check_pages(&env, pages);
}
