//! Space on disk: a closed database gives back the growth slack of its data file, never below
//! what a snapshot maps, and deleted pages are reused rather than grown past (DURABILITY §9.1).

mod common;
use common::{test_opts, TestDb};
use jackdaw::{Env, FlusherMode, Options};

fn data_len(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join("data.jdb")).unwrap().len()
}

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    // Spread over the key space (random-looking order), 16 bytes as in the space workloads.
    k[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn fill(env: &Env, range: std::ops::Range<u64>, per_tx: u64) {
    let mut i = range.start;
    while i < range.end {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for j in i..(i + per_tx).min(range.end) {
            tx.put(&t, key(j), [j as u8; 100]).unwrap();
        }
        tx.commit().unwrap();
        i += per_tx;
    }
}

/// The file holds growth slack while open (the flusher grows it ahead of the writer by an
/// eighth); `close` cuts it back to the high-water mark, and the database reopens whole.
#[test]
fn close_gives_the_growth_slack_back() {
    let dir = TestDb::dir("space-close");
    let env = Env::open(&dir, test_opts()).unwrap();
    fill(&env, 0..60_000, 5_000);
    env.flush().unwrap();
    let s = env.stats();
    let high = s.next_page * s.page_size as u64;
    assert_eq!(s.slack_bytes, s.data_file_bytes - high);
    assert!(
        s.slack_bytes > 0,
        "the test needs slack to give back: file {} bytes, high-water {high}",
        s.data_file_bytes
    );
    env.close().unwrap();
    assert_eq!(data_len(dir.path()), high, "a closed database's data file ends at its high-water mark");
    let env = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(env.stats().slack_bytes, 0);
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    for j in (0..60_000).step_by(97) {
        assert_eq!(r.get(&t, key(j)).unwrap().as_deref(), Some(&[j as u8; 100][..]), "key {j}");
    }
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    // It grows again as needed.
    fill(&env, 60_000..80_000, 5_000);
    env.close().unwrap();
    let env = Env::open(&dir, test_opts()).unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    assert_eq!(
        env.read().unwrap().tree_stats(&env.read().unwrap().open_tree("t").unwrap().unwrap()).unwrap().entries,
        80_000
    );
}

/// A snapshot alive at `close` maps the file at its old length: the file is not cut under it,
/// and it reads everything it saw.
#[test]
fn close_leaves_the_file_alone_while_a_snapshot_maps_it() {
    let dir = TestDb::dir("space-reader");
    let env = Env::open(&dir, test_opts()).unwrap();
    fill(&env, 0..40_000, 5_000);
    env.flush().unwrap();
    let before = data_len(dir.path());
    let r = env.read().unwrap();
    assert!(env.stats().slack_bytes > 0);
    assert!(matches!(env.close(), Err(jackdaw::Error::Busy(_))), "close with a live snapshot keeps the locks");
    assert_eq!(data_len(dir.path()), before, "the file is not cut while a snapshot maps it");
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.range::<[u8], _>(&t, ..).unwrap().count(), 40_000);
    drop(r);
    let env = Env::open(&dir, test_opts()).unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// Deletes give their pages back for reuse: fill 1,000,000 keys, delete them all, fill them
/// again: the data file does not grow past its first size by more than 5%.
#[test]
fn deleted_pages_are_reused() {
    let dir = TestDb::dir("space-reuse");
    let o = Options::default();
    let env = Env::open(&dir, o).unwrap();
    const N: u64 = 1_000_000;
    fill(&env, 0..N, 100_000);
    env.flush().unwrap();
    let first = env.stats();
    let mut i = 0;
    while i < N {
        let mut tx = env.write().unwrap();
        let t = tx.open_tree("t").unwrap().unwrap();
        for j in i..(i + 100_000).min(N) {
            assert!(tx.delete(&t, key(j)).unwrap());
        }
        tx.commit().unwrap();
        i += 100_000;
    }
    env.flush().unwrap();
    let emptied = env.stats();
    fill(&env, 0..N, 100_000);
    env.flush().unwrap();
    let second = env.stats();
    println!(
        "high-water mark: {} pages after the first fill, {} after deleting all ({} free), {} after the second fill",
        first.next_page, emptied.next_page, emptied.free_pages, second.next_page
    );
    assert!(
        second.next_page * 100 <= first.next_page * 105,
        "the second fill grew the high-water mark from {} to {} pages",
        first.next_page,
        second.next_page
    );
    env.close().unwrap();
    assert!(data_len(dir.path()) * 100 <= first.data_file_bytes.max(first.next_page * first.page_size as u64) * 105);
}

/// Large values (past `write_once_min_pages`) overwritten again and again reuse the pages the
/// old ones freed, put from a slice or streamed with `put_reader`: they were always appended
/// (pages written once), and 300 overwrites of one 1 MB value left a 294 MB data file.
#[test]
fn overwritten_large_values_reuse_their_pages() {
    let dir = TestDb::dir("space-large-overwrite");
    let env = Env::open(&dir, Options::default()).unwrap();
    let t = tree_t(&env);
    const LEN: usize = 1 << 20;
    for i in 0..100u32 {
        let v = vec![i as u8; LEN];
        let mut tx = env.write().unwrap();
        if i % 2 == 0 {
            tx.put(&t, b"blob", &v).unwrap();
        } else {
            tx.put_reader(&t, b"blob", LEN as u64, &v[..]).unwrap();
        }
        tx.put(&t, [i as u8], b"small").unwrap();
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    let st = env.stats();
    println!("100 overwrites of a 1 MiB value: high-water mark {} pages, {} free", st.next_page, st.free_pages);
    // Two copies of the value (the live one and the one freed last) and change.
    assert!(st.next_page * st.page_size as u64 <= 4 * LEN as u64, "{} pages", st.next_page);
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, b"blob").unwrap().unwrap().to_vec(), vec![99u8; LEN]);
    drop(r);
    env.check().unwrap().into_result().unwrap();
    env.close().unwrap();
    assert!(data_len(dir.path()) <= 4 * LEN as u64, "{} bytes after close", data_len(dir.path()));
}

/// A new plain tree named "t", committed.
fn tree_t(env: &Env) -> jackdaw::Tree {
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    t
}

/// Overwrite `b"blob"` in `t` with `vec![i; len]` for each `i` of `values`, a transaction each,
/// flushing after each commit when `flush` (a `Manual` environment's flushes).
fn overwrite_blob(env: &Env, t: &jackdaw::Tree, values: impl IntoIterator<Item = u8>, len: usize, flush: bool) {
    for i in values {
        let mut tx = env.write().unwrap();
        tx.put(t, b"blob", vec![i; len]).unwrap();
        tx.commit().unwrap();
        if flush {
            env.flush().unwrap();
        }
    }
}

/// The reuse above is bounded by the transaction's dirty pages (free pages taken through the
/// journal stay in memory until commit; only appended ones can spill): one transaction putting
/// many large values into a database with much free space takes free pages through the journal
/// for the first, within half the bound, and writes the others once, straight into free pages
/// the last flush left free (`PageTxn::claim_free`), not past the end: before that, they were
/// appended and the file grew by seven values with 2,600 pages free.
#[test]
fn large_values_past_the_dirty_page_bound_are_written_once_into_free_pages() {
    let dir = TestDb::dir("space-large-bound");
    let env = Env::open(&dir, Options::default().max_dirty_pages(512)).unwrap();
    const LEN: usize = 512 << 10; // 130 pages: past write_once_min_pages, within half the bound
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..20u8 {
        tx.put(&t, [i], vec![i; LEN]).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    for i in 0..20u8 {
        tx.delete(&t, [i]).unwrap();
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    let before = env.stats();
    let mut tx = env.write().unwrap();
    for i in 0..8u8 {
        tx.put(&t, [100 + i], vec![i; LEN]).unwrap();
    }
    let c = tx.commit().unwrap();
    env.flush().unwrap();
    let after = env.stats();
    let reused = after.written_once_reused_pages - before.written_once_reused_pages;
    println!(
        "free {} -> {}, high-water mark {} -> {}, {} pages journaled, {} written once ({reused} in free pages)",
        before.free_pages,
        after.free_pages,
        before.next_page,
        after.next_page,
        c.pages - c.written_once_pages,
        c.written_once_pages
    );
    assert!(c.pages - c.written_once_pages <= 256 + 16, "more than half the bound journaled in one transaction");
    assert!(reused >= 7 * 128, "only {reused} pages written once into free pages");
    assert!(after.next_page <= before.next_page + 16, "the values were appended");
    assert!(after.free_pages + 8 * 128 <= before.free_pages);
    let r = env.read().unwrap();
    for i in 0..8u8 {
        assert_eq!(r.get(&t, [100 + i]).unwrap().unwrap().to_vec(), vec![i; LEN]);
    }
    drop(r);
    env.check().unwrap().into_result().unwrap();
}

/// A value past half the dirty-page bound (written once, never through the journal) overwritten
/// again and again, each commit flushed, reuses the pages the last one freed: two copies of it
/// and change, where every copy used to be appended (40 overwrites of 400 KiB grew the file by
/// 16 MB). Put from a slice and streamed with `put_reader` in turn; one transaction also
/// overwrites its own value (the pages it wrote once in place go back to the free-space map).
/// Read back after a reopen; `check()` clean.
#[test]
fn values_past_the_dirty_page_bound_reuse_their_pages() {
    let dir = TestDb::dir("space-large-past-bound");
    let opts = || Options::default().max_dirty_pages(64).flusher(FlusherMode::Manual);
    let env = Env::open(&dir, opts()).unwrap();
    let t = tree_t(&env);
    const LEN: usize = 400 << 10; // ~100 pages: three times half the bound
    let value = |i: u32| (0..LEN).map(|j| (j as u32 ^ i.wrapping_mul(0x9e37_79b9)) as u8).collect::<Vec<u8>>();
    for i in 0..40u32 {
        let v = value(i);
        let mut tx = env.write().unwrap();
        if i % 2 == 0 {
            tx.put(&t, b"blob", &v).unwrap();
        } else {
            tx.put_reader(&t, b"blob", LEN as u64, &v[..]).unwrap();
        }
        if i == 20 {
            // Overwritten within the transaction: the first copy's pages are freed again.
            tx.put(&t, b"blob", value(1000)).unwrap();
            tx.put(&t, b"blob", &v).unwrap();
        }
        tx.commit().unwrap();
        env.flush().unwrap();
    }
    let st = env.stats();
    println!(
        "40 overwrites of a 400 KiB value: high-water mark {} pages, {} free, {} pages written once, {} of them in free pages",
        st.next_page, st.free_pages, st.written_once_pages, st.written_once_reused_pages
    );
    assert!(st.next_page * st.page_size as u64 <= 5 * LEN as u64, "{} pages", st.next_page);
    assert!(st.written_once_reused_pages >= 35 * 100, "{} pages reused", st.written_once_reused_pages);
    env.check().unwrap().into_result().unwrap();
    env.close().unwrap();
    let env = Env::open(&dir, opts()).unwrap();
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, b"blob").unwrap().unwrap().to_vec(), value(39));
    drop(r);
    env.check().unwrap().into_result().unwrap();
}

/// The same with the background flusher and no flush asked for: a commit of such a value runs a
/// flush itself when free pages could hold it but no flush has passed their free yet (a flush
/// asked of the flusher thread came too late: 200 overwrites of 20 MiB ended at a 404 MiB
/// high-water mark; none at all, at 4 GB).
#[test]
fn values_past_the_dirty_page_bound_reuse_their_pages_with_the_background_flusher() {
    let dir = TestDb::dir("space-large-past-bound-bg");
    let env = Env::open(&dir, Options::default().max_dirty_pages(64)).unwrap();
    let t = tree_t(&env);
    const LEN: usize = 400 << 10;
    overwrite_blob(&env, &t, 0..60, LEN, false);
    let st = env.stats();
    println!(
        "60 overwrites of a 400 KiB value: high-water mark {} pages, {} flushes, {} pages reused",
        st.next_page, st.flushes, st.written_once_reused_pages
    );
    assert!(st.next_page * st.page_size as u64 <= 4 * LEN as u64, "{} pages", st.next_page);
    assert_eq!(env.read().unwrap().get(&t, b"blob").unwrap().unwrap().to_vec(), vec![59u8; LEN]);
    env.check().unwrap().into_result().unwrap();
}

/// `FreeSpacePolicy::AppendOnly` (the free-space benchmark's control group) never reuses a free
/// page, large values written once included: the first version of the reuse took free pages
/// for them whatever the policy said.
#[test]
fn append_only_never_writes_large_values_into_free_pages() {
    let dir = TestDb::dir("space-large-append-only");
    let opts = Options::default().max_dirty_pages(64).free_space(jackdaw::FreeSpacePolicy::AppendOnly);
    let env = Env::open(&dir, opts).unwrap();
    let t = tree_t(&env);
    const LEN: usize = 400 << 10;
    overwrite_blob(&env, &t, 0..10, LEN, true);
    let st = env.stats();
    assert_eq!(st.written_once_reused_pages, 0);
    assert!(st.next_page * st.page_size as u64 >= 10 * LEN as u64, "{} pages", st.next_page);
    env.check().unwrap().into_result().unwrap();
}

/// A reader keeps the value it sees while that value is overwritten (written once, past half
/// the dirty-page bound) and flushed again and again: the pages it reads are freed after its
/// snapshot, and no flush passes its snapshot, so none is written in place (the file grows
/// meanwhile). Once the reader is gone and a flush has passed, overwrites reuse pages again.
#[test]
fn a_reader_keeps_its_large_value_while_it_is_overwritten() {
    let dir = TestDb::dir("space-large-reader");
    let env = Env::open(&dir, Options::default().max_dirty_pages(64).flusher(FlusherMode::Manual)).unwrap();
    const LEN: usize = 400 << 10;
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"blob", vec![0u8; LEN]).unwrap();
    tx.commit().unwrap();
    env.flush().unwrap();
    let r = env.read().unwrap();
    let reused_before = env.stats().written_once_reused_pages;
    for i in 1..=10u8 {
        let mut tx = env.write().unwrap();
        tx.put(&t, b"blob", vec![i; LEN]).unwrap();
        tx.commit().unwrap();
        env.flush().unwrap();
        let seen = r.get(&t, b"blob").unwrap().unwrap().to_vec();
        assert!(seen.iter().all(|b| *b == 0) && seen.len() == LEN, "overwrite {i}: the reader's value changed");
    }
    let held = env.stats();
    assert_eq!(held.written_once_reused_pages, reused_before, "a page a reader may read was written in place");
    drop(r);
    env.flush().unwrap();
    overwrite_blob(&env, &t, 11..=14, LEN, true);
    let after = env.stats();
    println!(
        "high-water mark {} pages with the reader, {} after; {} pages reused after",
        held.next_page,
        after.next_page,
        after.written_once_reused_pages - held.written_once_reused_pages
    );
    assert!(after.written_once_reused_pages >= held.written_once_reused_pages + 3 * 100);
    assert!(after.next_page <= held.next_page + 16, "overwrites after the reader still appended");
    assert_eq!(env.read().unwrap().get(&t, b"blob").unwrap().unwrap().to_vec(), vec![14u8; LEN]);
    env.check().unwrap().into_result().unwrap();
}

/// `CheckReport::live_bytes` counts the keys and values the trees hold, as stored by the user:
/// inline values, a large (overflow) value at its full length, the values of a multi-value tree
/// both in a nested list and in a nested tree, each with its key; deleted and overwritten
/// entries drop out. `Stats::used_bytes` is the pages in use times the page size.
#[test]
fn live_bytes_count_keys_and_values() {
    let dir = TestDb::dir("space-live");
    let env = Env::open(&dir, test_opts()).unwrap();
    fill(&env, 0..3_000, 1_000);
    let mut want = 3_000 * (16 + 100);
    let mut tx = env.write().unwrap();
    let t = tx.open_tree("t").unwrap().unwrap();
    // Overwrite one with a longer value, delete another, add a large value.
    tx.put(&t, key(7), [1u8; 300]).unwrap();
    want += 200;
    assert!(tx.delete(&t, key(8)).unwrap());
    want -= 116;
    tx.put(&t, b"big", vec![9u8; 50_000]).unwrap();
    want += 3 + 50_000;
    // A multi-value tree: "few" keeps a nested list, "many" outgrows it into a nested tree.
    let m = tx.create_multi_tree("m").unwrap();
    for v in 0..3u32 {
        tx.multi_put(&m, b"few", v.to_be_bytes()).unwrap();
    }
    want += 3 * (3 + 4);
    for v in 0..5_000u64 {
        tx.multi_put(&m, b"many", v.to_be_bytes()).unwrap();
    }
    want += 5_000 * (4 + 8);
    tx.commit().unwrap();
    let report = env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    assert_eq!(report.live_bytes, want);
    let s = env.stats();
    assert_eq!(s.used_bytes, s.pages_in_use * s.page_size as u64);
    assert!(s.used_bytes > want, "pages hold more than their keys and values: {} vs {want}", s.used_bytes);
    env.close().unwrap();
}
