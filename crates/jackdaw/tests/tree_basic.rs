mod common;
use common::*;
use jackdaw::{Env, Error, FlusherMode};
use std::collections::BTreeMap;

fn key(rng: &mut Rng, space: u64) -> Vec<u8> {
    let k = rng.below(space);
    match k % 4 {
        0 => format!("{k:016}").into_bytes(),
        1 => format!("k{k}").into_bytes(),
        2 => vec![(k % 256) as u8; (k % 300) as usize],
        _ => k.to_be_bytes().to_vec(),
    }
}

fn value(rng: &mut Rng, page: usize) -> Vec<u8> {
    let len = match rng.below(10) {
        0 => 0,
        1..=5 => rng.below(100) as usize,
        6 | 7 => rng.below(2100) as usize,
        8 => page / 2 - 60 + rng.below(120) as usize,
        _ => rng.below(3 * page as u64) as usize,
    };
    let b = rng.next_u64() as u8;
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

#[test]
fn random_ops_match_a_btreemap() {
    let s = seed();
    let mut rng = Rng::new(s);
    let dir = TestDb::dir("tree-model");
    let opts = || test_opts().flusher(if s.is_multiple_of(2) { FlusherMode::Manual } else { FlusherMode::Background });
    let mut env = Env::open(&dir, opts()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    for round in 0..60 {
        let mut tx = env.write().unwrap();
        let mut staged = model.clone();
        let space = if round % 3 == 0 { 200 } else { 5000 };
        for _ in 0..rng.below(400) {
            if rng.below(3) == 0 {
                let k = key(&mut rng, space);
                let was = tx.delete(&t, &k).unwrap();
                assert_eq!(was, staged.remove(&k).is_some(), "seed {s}");
            } else {
                let k = key(&mut rng, space);
                let v = value(&mut rng, 4096);
                tx.put(&t, &k, &v).unwrap();
                staged.insert(k, v);
            }
        }
        // The write transaction sees its own changes.
        let k = key(&mut rng, space);
        assert_eq!(tx.get(&t, &k).unwrap().map(|b| b.to_vec()), staged.get(&k).cloned(), "seed {s}");
        let got: Vec<Vec<u8>> = tx.range(&t, ..).unwrap().map(|r| r.unwrap().0.to_vec()).collect();
        assert_eq!(got, staged.keys().cloned().collect::<Vec<_>>(), "seed {s}");
        if rng.below(5) == 0 {
            tx.abort();
        } else {
            tx.commit().unwrap();
            model = staged;
        }
        // Reads, ranges in both directions, prefixes.
        let r = env.read().unwrap();
        assert_eq!(r.tree_stats(&t).unwrap().entries, model.len() as u64, "seed {s}");
        for _ in 0..50 {
            let k = key(&mut rng, space);
            assert_eq!(r.get(&t, &k).unwrap().map(|b| b.to_vec()), model.get(&k).cloned(), "seed {s}");
        }
        let a = key(&mut rng, space);
        let b = key(&mut rng, space);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let want: Vec<_> = model.range(lo.clone()..hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
        let got: Vec<_> = r
            .range(&t, lo.as_slice()..hi.as_slice())
            .unwrap()
            .map(|x| x.unwrap())
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(got, want, "seed {s}");
        let got_rev: Vec<_> =
            r.range(&t, lo.as_slice()..=hi.as_slice()).unwrap().rev().map(|x| x.unwrap().0.to_vec()).collect();
        let want_rev: Vec<_> = model.range(lo.clone()..=hi.clone()).rev().map(|(k, _)| k.clone()).collect();
        assert_eq!(got_rev, want_rev, "seed {s}");
        let p = &lo[..lo.len().min(2)];
        let got_p: Vec<_> = r.prefix(&t, p).unwrap().map(|x| x.unwrap().0.to_vec()).collect();
        let want_p: Vec<_> = model.keys().filter(|k| k.starts_with(p)).cloned().collect();
        assert_eq!(got_p, want_p, "seed {s}");
        // Alternate from both ends.
        let mut it = r.range(&t, ..).unwrap();
        let mut both = Vec::new();
        let mut flip = false;
        loop {
            let x = if flip { it.next_back() } else { it.next() };
            flip = !flip;
            match x {
                Some(x) => both.push(x.unwrap().0.to_vec()),
                None => break,
            }
        }
        drop(it);
        both.sort();
        assert_eq!(both, model.keys().cloned().collect::<Vec<_>>(), "seed {s}");
        drop(r);
        if let Err(e) = env.check().and_then(jackdaw::CheckReport::into_result) {
            panic!("seed {s} round {round}: {e}");
        }
        if round % 10 == 9 {
            drop(env);
            env = Env::open(&dir, opts()).unwrap();
        }
    }
    // Delete everything: the tree collapses to empty and pages return to the free map.
    let mut tx = env.write().unwrap();
    for k in model.keys() {
        assert!(tx.delete(&t, k).unwrap());
    }
    let st = tx.tree_stats(&t).unwrap();
    assert_eq!((st.entries, st.depth, st.leaf_pages, st.branch_pages, st.overflow_pages), (0, 0, 0, 0, 0), "seed {s}");
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn named_trees_create_rename_delete_and_handles() {
    let dir = TestDb::dir("named");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let a = tx.create_tree("a").unwrap();
    let b = tx.create_tree("b").unwrap();
    tx.put(&a, b"k", b"va").unwrap();
    tx.put(&b, b"k", b"vb").unwrap();
    tx.commit().unwrap();
    let before_delete = env.read().unwrap();
    let mut tx = env.write().unwrap();
    tx.rename_tree("a", "c").unwrap();
    assert!(matches!(tx.rename_tree("c", "b"), Err(Error::TreeExists(_))));
    assert!(matches!(tx.rename_tree("zz", "y"), Err(Error::NoSuchTree(_))));
    // The handle follows the tree through the rename.
    assert_eq!(tx.get(&a, b"k").unwrap().unwrap().as_ref(), b"va");
    assert!(tx.delete_tree("b").unwrap());
    assert!(!tx.delete_tree("b").unwrap());
    assert_eq!(tx.list_trees().unwrap(), vec!["c".to_string()]);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert!(matches!(r.get(&b, b"k"), Err(Error::NoSuchTree(_))));
    assert_eq!(r.get(&a, b"k").unwrap().unwrap().as_ref(), b"va");
    // A snapshot from before the delete still reads the tree.
    assert_eq!(before_delete.get(&b, b"k").unwrap().unwrap().as_ref(), b"vb");
    drop(before_delete);
    // Re-created under the same name: a new tree, the old handle stays dead.
    let mut tx = env.write().unwrap();
    let b2 = tx.create_tree("b").unwrap();
    assert!(tx.get(&b2, b"k").unwrap().is_none());
    assert!(matches!(tx.get(&b, b"k"), Err(Error::NoSuchTree(_))));
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn oversized_keys_and_values_are_rejected() {
    let dir = TestDb::dir("sizes");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let max = jackdaw::max_key_size(4096);
    assert_eq!(max, 2001);
    tx.put(&t, vec![1u8; max], b"ok").unwrap();
    assert!(matches!(tx.put(&t, vec![1u8; max + 1], b"x"), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(
        tx.put_reader(&t, b"big", jackdaw::MAX_VALUE_SIZE + 1, std::io::empty()),
        Err(Error::ValueTooLarge { .. })
    ));
    tx.put(&t, b"", b"empty key is legal").unwrap();
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, b"").unwrap().unwrap().as_ref(), b"empty key is legal");
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// `CommitStats::pages_by_kind` counts what each commit wrote (the figures `flush_log` prints per
/// journal write): leaves, branches, overflow chains (built in memory or streamed in), and it
/// always adds up to `pages`.
#[test]
fn commit_stats_count_pages_by_kind() {
    let dir = TestDb::dir("pages-by-kind");
    let env = Env::open(&dir, test_opts().flush_log(true)).unwrap();
    let sum = |k: &jackdaw::PagesByKind| k.leaf + k.branch + k.overflow + k.freemap + k.meta + k.raw;

    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"a", b"small").unwrap();
    let st = tx.commit().unwrap();
    assert!(st.pages_by_kind.leaf >= 1 && st.pages_by_kind.overflow == 0 && st.pages_by_kind.branch == 0, "{st:?}");
    assert_eq!(sum(&st.pages_by_kind), st.pages as u64, "{st:?}");

    // 20,000 bytes: 5 overflow pages of 4,048 bytes each, and the leaf that points to them.
    let mut tx = env.write().unwrap();
    tx.put(&t, b"big", vec![7u8; 20_000]).unwrap();
    let st = tx.commit().unwrap();
    assert_eq!(st.pages_by_kind.overflow, 5, "{st:?}");
    assert!(st.pages_by_kind.leaf >= 1, "{st:?}");
    assert_eq!(sum(&st.pages_by_kind), st.pages as u64, "{st:?}");

    // Streamed in: 100,000 bytes are 25 pages written once, counted as overflow.
    let mut tx = env.write().unwrap();
    tx.put_reader(&t, b"streamed", 100_000, &vec![3u8; 100_000][..]).unwrap();
    let st = tx.commit().unwrap();
    assert_eq!(st.pages_by_kind.overflow, 25, "{st:?}");
    assert!(st.written_once_pages >= 25, "{st:?}");
    assert_eq!(sum(&st.pages_by_kind), st.pages as u64, "{st:?}");

    // Enough entries to split the root leaf: a branch appears.
    let mut tx = env.write().unwrap();
    for i in 0..2_000u32 {
        tx.put(&t, format!("k{i:08}"), [1u8; 100]).unwrap();
    }
    let st = tx.commit().unwrap();
    assert!(st.pages_by_kind.branch >= 1 && st.pages_by_kind.leaf > 40, "{st:?}");
    assert_eq!(sum(&st.pages_by_kind), st.pages as u64, "{st:?}");
    env.close().unwrap();
}

/// A value of `len` bytes that differs in every page (so a page out of place would show).
fn patterned(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ salt).collect()
}

/// Overflow values of 8 pages or more that lie in the data file as written (consecutive pages,
/// verified) are read with positional reads, one run per value; the others (in the page table,
/// not yet verified since open, or shorter) page by page. Both give back the same bytes.
#[test]
fn overflow_values_are_read_as_one_run_when_laid_out_in_the_file() {
    let dir = TestDb::dir("overflow_run");
    // Every page through the journal (none written once at commit), flushed only when asked.
    let opts = || test_opts().flusher(FlusherMode::Manual).write_once_min_pages(usize::MAX);
    let env = Env::open(&dir, opts()).unwrap();
    let cap = 4096 - 48;
    // (key, length): 7 pages (too short for a run), exactly 8, 16 + 1 byte, 300 pages.
    let sizes: [(&[u8], usize); 4] =
        [(b"a7", 7 * cap), (b"b8", 8 * cap), (b"c17", 16 * cap + 1), (b"d300", 300 * cap - 5)];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for (i, (k, len)) in sizes.iter().enumerate() {
        tx.put(&t, k, patterned(*len, i as u8)).unwrap();
    }
    tx.commit().unwrap();
    let runs = |env: &Env| env.stats().overflow_run_reads;
    let read_all = |env: &Env| {
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        let mut buf = Vec::new();
        for (i, (k, len)) in sizes.iter().enumerate() {
            assert!(r.get_into(&t, k, &mut buf).unwrap());
            assert!(buf == patterned(*len, i as u8), "value {} differs", String::from_utf8_lossy(k));
        }
    };
    // Just committed, not flushed: the pages are the page table's, so page by page.
    read_all(&env);
    assert_eq!(runs(&env), 0);
    // Flushed: this process wrote them to the file, so they count as verified: one run each for
    // the three values of 8 pages or more.
    env.flush().unwrap();
    read_all(&env);
    assert_eq!(runs(&env), 3);
    // A snapshot taken before an update keeps reading its own version (from the page table's
    // older image or the file); the update's own pages are the page table's until flushed.
    let old = env.read().unwrap();
    let mut tx = env.write().unwrap();
    tx.put(&t, b"d300", patterned(300 * cap - 5, 99)).unwrap();
    tx.commit().unwrap();
    let ot = old.open_tree("t").unwrap().unwrap();
    assert_eq!(old.get(&ot, b"d300").unwrap().unwrap().as_ref(), &patterned(300 * cap - 5, 3)[..]);
    drop(old);
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, b"d300").unwrap().unwrap().as_ref(), &patterned(300 * cap - 5, 99)[..]);
    drop(r);
    env.close().unwrap();
    drop(env);

    // Reopened: no page is verified yet, so the first read goes page by page (verifying each
    // checksum), the second reads each long value as one run.
    let env = Env::open(&dir, opts()).unwrap();
    let check = |env: &Env| {
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        for (i, (k, len)) in sizes.iter().enumerate() {
            let salt = if k == b"d300" { 99 } else { i as u8 };
            assert!(r.get(&t, k).unwrap().unwrap().as_ref() == &patterned(*len, salt)[..]);
        }
    };
    check(&env);
    assert_eq!(runs(&env), 0);
    check(&env);
    assert_eq!(runs(&env), 3);
    env.close().unwrap();
}

/// An overflow value that fits on one page is returned as a view of that page, as an inline value
/// is (two handles to it share the bytes), from the page table before a flush and from the map
/// after it; it stays valid after its transaction ends and the key is overwritten. A longer value
/// is a copy (each handle its own bytes).
#[test]
fn one_page_overflow_values_are_read_without_a_copy() {
    let dir = TestDb::dir("overflow_view");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let cap = 4096 - 48;
    let sizes: [(&[u8], usize); 4] = [(b"inline", 100), (b"one", 2000), (b"full", cap), (b"two", cap + 1)];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for (i, (k, len)) in sizes.iter().enumerate() {
        tx.put(&t, k, patterned(*len, i as u8)).unwrap();
    }
    tx.commit().unwrap();
    let shared = |r: &jackdaw::ReadTxn, k: &[u8], len: usize, salt: u8| {
        let a = r.get(&t, k).unwrap().unwrap();
        let b = r.get(&t, k).unwrap().unwrap();
        assert!(a.as_ref() == &patterned(len, salt)[..], "value {} differs", String::from_utf8_lossy(k));
        assert!(b.as_ref() == a.as_ref());
        a.as_ptr() == b.as_ptr()
    };
    for round in ["page table", "mapped"] {
        let r = env.read().unwrap();
        for (i, (k, len)) in sizes.iter().enumerate() {
            assert_eq!(shared(&r, k, *len, i as u8), *len <= cap, "{round}: {}", String::from_utf8_lossy(k));
        }
        env.flush().unwrap();
    }
    // A view outlives its transaction and an overwrite of its key (it holds its snapshot).
    let r = env.read().unwrap();
    let v = r.get(&t, b"one").unwrap().unwrap();
    drop(r);
    let mut tx = env.write().unwrap();
    tx.put(&t, b"one", patterned(2000, 77)).unwrap();
    tx.commit().unwrap();
    env.flush().unwrap();
    assert!(v.as_ref() == &patterned(2000, 1)[..]);
    drop(v);
    assert!(env.read().unwrap().get(&t, b"one").unwrap().unwrap().as_ref() == &patterned(2000, 77)[..]);
    env.close().unwrap();
}

/// A transaction bigger than `max_dirty_pages` spills the pages it appended to the data file and
/// reads back (and writes again) those it changes after: sequential and random bulk loads, an
/// aborted one, and spilling turned off all leave exactly the model, also after reopen.
#[test]
fn big_transactions_spill_and_read_back_their_pages() {
    let dir = TestDb::dir("spill");
    let seed = seed();
    let mut rng = Rng::new(seed);
    let opts = |max: usize| test_opts().flusher(FlusherMode::Manual).max_dirty_pages(max);
    let env = Env::open(&dir, opts(64)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let value = |k: u64| format!("value of {k} ").repeat(1 + (k % 7) as usize).into_bytes();

    // Sequential: leaves left behind are never changed again.
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in 0..20_000u64 {
        let key = format!("{k:012}").into_bytes();
        tx.put(&t, &key, value(k)).unwrap();
        model.insert(key, value(k));
    }
    let st = tx.commit().unwrap();
    assert!(st.spilled_pages > 64, "{st:?}");
    assert!(st.written_once_pages >= st.pages_by_kind.leaf as usize / 2, "{st:?}");

    // Random order, overwriting and deleting too: spilled leaves keep changing (read back).
    let mut tx = env.write().unwrap();
    for _ in 0..20_000 {
        let k = rng.below(40_000);
        let key = format!("{k:012}").into_bytes();
        if rng.below(5) == 0 {
            tx.delete(&t, &key).unwrap();
            model.remove(&key);
        } else {
            tx.put(&t, &key, value(k + 1)).unwrap();
            model.insert(key, value(k + 1));
        }
    }
    // A value of 100 overflow pages, in memory, then streamed: both written once.
    tx.put(&t, b"big", vec![5u8; 400_000]).unwrap();
    model.insert(b"big".to_vec(), vec![5u8; 400_000]);
    tx.put_reader(&t, b"streamed", 300_000, &vec![6u8; 300_000][..]).unwrap();
    model.insert(b"streamed".to_vec(), vec![6u8; 300_000]);
    let st = tx.commit().unwrap();
    assert!(st.spilled_pages > 0, "{st:?}");

    // Aborted after spilling: nothing of it is seen, and the next transaction reuses its pages.
    let mut tx = env.write().unwrap();
    for k in 100_000..120_000u64 {
        tx.put(&t, format!("{k:012}"), value(k)).unwrap();
    }
    drop(tx);
    let same = |env: &Env, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = r
            .range::<[u8], _>(&t, ..)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            got.len() == model.len() && got.iter().zip(model).all(|(a, b)| a.0 == *b.0 && a.1 == *b.1),
            "seed {seed}: contents differ from the model"
        );
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    };
    same(&env, &model);
    env.flush().unwrap();
    env.close().unwrap();
    drop(env);

    // Reopened with spilling off: the same contents, and a big transaction spills nothing.
    let env = Env::open(&dir, opts(0)).unwrap();
    same(&env, &model);
    let mut tx = env.write().unwrap();
    for k in 200_000..210_000u64 {
        tx.put(&t, format!("{k:012}"), value(k)).unwrap();
        model.insert(format!("{k:012}").into_bytes(), value(k));
    }
    assert_eq!(tx.commit().unwrap().spilled_pages, 0);
    same(&env, &model);
    env.close().unwrap();
}

/// Tree `t` holding keys `0..n` (big-endian u32) with 100-byte values of 1s, committed.
fn numbered_tree(env: &Env, n: u32) -> jackdaw::Tree {
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..n {
        tx.put(&t, i.to_be_bytes(), [1u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    t
}

/// An overwrite that leaves the tree's descriptor as it was (same entries, same pages) journals
/// its leaf alone: the catalog entry is rewritten only when the descriptor changed. Reopened,
/// the tree has the new value and its descriptor still matches its pages (`check`).
#[test]
fn an_overwrite_of_the_same_length_journals_only_its_leaf() {
    let dir = TestDb::dir("overwrite-catalog");
    let env = Env::open(&dir, test_opts()).unwrap();
    let t = numbered_tree(&env, 1_000);
    let mut tx = env.write().unwrap();
    tx.put(&t, 500u32.to_be_bytes(), [2u8; 100]).unwrap();
    let st = tx.commit().unwrap();
    assert_eq!(st.pages, 1, "an overwrite journaled {} pages", st.pages);
    // A new key changes the entry count: the catalog's leaf is journaled too.
    let mut tx = env.write().unwrap();
    tx.put(&t, 5_000u32.to_be_bytes(), [3u8; 100]).unwrap();
    let st = tx.commit().unwrap();
    assert!(st.pages >= 2, "an insert journaled {} pages", st.pages);
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.get(&t, 500u32.to_be_bytes()).unwrap().unwrap().as_ref(), [2u8; 100]);
    assert_eq!(r.tree_stats(&t).unwrap().entries, 1_001);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A read transaction takes its trees' descriptors from the memo of its state when an earlier
/// one resolved them there. A commit that created, deleted or renamed no tree hands that memo on
/// to its new state, with the descriptors it changed put in (an overwrite of the same length
/// changes none; an insert or a delete changes the entry count): the first read after it looks
/// nothing up in the catalog and sees the new descriptor.
#[test]
fn a_commit_that_changes_only_descriptors_hands_the_readers_memo_on() {
    let dir = TestDb::dir("carry-memo");
    let env = Env::open(&dir, test_opts()).unwrap();
    let t = numbered_tree(&env, 10_000);
    let depth = {
        let r = env.read().unwrap();
        r.get(&t, 7u32.to_be_bytes()).unwrap().unwrap(); // resolves `t`, publishes the memo
        r.tree_stats(&t).unwrap().depth as u64
    };
    let get_pages = |k: u32| {
        let r = env.read().unwrap();
        let before = r.pages_touched();
        let v = r.get(&t, k.to_be_bytes()).unwrap().map(|v| v.to_vec());
        (r.pages_touched() - before, v, r.tree_stats(&t).unwrap().entries)
    };
    // Served from the memo at the same state: the tree's pages only.
    assert_eq!(get_pages(7).0, depth);
    let mut tx = env.write().unwrap();
    tx.put(&t, 7u32.to_be_bytes(), [2u8; 100]).unwrap();
    tx.commit().unwrap();
    let (pages, v, entries) = get_pages(7);
    assert_eq!(pages, depth, "the read after an overwrite looked the tree up in the catalog");
    assert_eq!((v.unwrap(), entries), (vec![2u8; 100], 10_000));
    // An insert changes the tree's descriptor (its entry count): the memo is handed on with the
    // new descriptor, so the read still skips the catalog and sees the new count.
    let mut tx = env.write().unwrap();
    tx.put(&t, 20_000u32.to_be_bytes(), [3u8; 100]).unwrap();
    tx.commit().unwrap();
    let (pages, v, entries) = get_pages(20_000);
    assert_eq!(pages, depth, "the read after an insert looked the tree up in the catalog");
    assert_eq!((v.unwrap(), entries), (vec![3u8; 100], 10_001), "the memo kept the old descriptor");
    // So does a delete, and a commit changing two trees (one of them not in the memo yet).
    let u = {
        let mut tx = env.write().unwrap();
        let u = tx.create_tree("u").unwrap();
        tx.put(&u, b"a", b"1").unwrap();
        tx.commit().unwrap();
        u
    };
    let _ = get_pages(7); // resolves `t` at the state that created `u` (a new name: no memo)
    let mut tx = env.write().unwrap();
    tx.delete(&t, 7u32.to_be_bytes()).unwrap();
    tx.put(&u, b"b", b"2").unwrap();
    tx.commit().unwrap();
    let (pages, v, entries) = get_pages(7);
    assert_eq!((pages, v, entries), (depth, None, 10_000));
    let r = env.read().unwrap();
    assert_eq!(r.tree_stats(&u).unwrap().entries, 2);
    assert_eq!(r.get(&u, b"b").unwrap().unwrap().as_ref(), b"2");
}

#[test]
fn a_read_transaction_switching_between_trees_resolves_each_once() {
    let dir = TestDb::dir("switch-trees");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let trees: Vec<_> = (0..6).map(|i| tx.create_tree(&format!("t{i}")).unwrap()).collect();
    for (i, t) in trees.iter().enumerate() {
        tx.put(t, b"k", [i as u8; 10]).unwrap();
    }
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let get = |i: usize| {
        let before = r.pages_touched();
        let v = r.get(&trees[i], b"k").unwrap().unwrap().to_vec();
        assert_eq!(v, vec![i as u8; 10], "tree {i}");
        r.pages_touched() - before
    };
    // First use of each tree: looked up in the catalog (more pages than its one leaf).
    for i in 0..trees.len() {
        assert!(get(i) > 1, "tree {i} was not looked up");
    }
    // Then in any order, runs of one tree included: each from the descriptor this transaction
    // kept, one page (the tree's only leaf), never the catalog again.
    let orders =
        [vec![0, 1, 2, 3, 4, 5], vec![5, 4, 3, 2, 1, 0], vec![3, 3, 0, 5, 5, 5, 1, 4, 2, 0], vec![2, 0, 4, 1, 5, 3]];
    for order in orders {
        for i in order {
            assert_eq!(get(i), 1, "tree {i} was looked up again");
        }
    }
}

/// The bytes of an overflow value past its last full page stay in the leaf when they are at
/// most a quarter of a page (and the entry fits): a 64 KiB value takes 16 pages, not 17. Every
/// read path (get, get_into, get_reader, ranges, the write transaction's get) gives back the
/// whole value, written through the journal or once to the data file, put from a slice or a
/// reader; overwrites and deletes free exactly the chain's pages; `check()` agrees throughout,
/// also after a reopen. The expected page counts are worked out here, not read from the engine.
#[test]
fn overflow_values_keep_their_last_bytes_in_the_leaf() {
    let cap = 4096 - 48;
    let quarter = cap / 4;
    let long_key = vec![b'k'; 1900];
    // (key, length, pages of its chain).
    let sizes: Vec<(Vec<u8>, usize, u64)> = vec![
        (b"full".to_vec(), cap, 1),                    // one full page, no tail
        (b"plus1".to_vec(), cap + 1, 1),               // one page and a 1-byte tail
        (b"k64".to_vec(), 64 << 10, 16),               // 16 pages and a 768-byte tail
        (b"atq".to_vec(), 2 * cap + quarter, 2),       // the largest tail
        (b"overq".to_vec(), 2 * cap + quarter + 1, 3), // one byte more: all in pages
        (b"m8".to_vec(), 8 << 20, 2073),               // a 1,152-byte remainder: all in pages
        (long_key, 64 << 10, 17),                      // the entry would not fit: all in pages
        (b"small".to_vec(), 3000, 1),                  // less than a page: one page
    ];
    // After the overwrite below: each value half a page shorter.
    let shorter = |len: usize| len - cap / 2;
    let short_pages: u64 = [1, 1, 16, 2, 2, 2072, 16, 0].iter().sum(); // "small" goes inline
    let total_pages: u64 = sizes.iter().map(|s| s.2).sum();
    let live: u64 = sizes.iter().map(|(k, l, _)| (k.len() + l) as u64).sum();
    let clean = |env: &Env, ctx: &str| {
        let r = env.check().unwrap();
        assert!(r.is_clean(), "{ctx}: {:?}", r.problems);
        r
    };
    for write_once in [usize::MAX, 1] {
        let dir = TestDb::dir("overflow_tail");
        let opts = || test_opts().flusher(FlusherMode::Manual).write_once_min_pages(write_once);
        let env = Env::open(&dir, opts()).unwrap();
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for (i, (k, len, _)) in sizes.iter().enumerate() {
            let v = patterned(*len, i as u8);
            if i % 2 == 0 {
                tx.put(&t, k, &v).unwrap();
            } else {
                tx.put_reader(&t, k, *len as u64, &v[..]).unwrap();
            }
            assert!(tx.get(&t, k).unwrap().unwrap().as_ref() == &v[..], "write txn get of {len} bytes");
        }
        assert_eq!(tx.tree_stats(&t).unwrap().overflow_pages, total_pages);
        tx.commit().unwrap();
        let read_all = |env: &Env, ctx: &str| {
            let r = env.read().unwrap();
            let t = r.open_tree("t").unwrap().unwrap();
            assert_eq!(r.tree_stats(&t).unwrap().overflow_pages, total_pages, "{ctx}");
            let mut buf = Vec::new();
            for (i, (k, len, _)) in sizes.iter().enumerate() {
                let want = patterned(*len, i as u8);
                let what = format!("{ctx}, write_once_min_pages {write_once}: {len} bytes");
                assert!(r.get(&t, k).unwrap().unwrap().as_ref() == &want[..], "{what}: get");
                assert!(r.get_into(&t, k, &mut buf).unwrap());
                assert!(buf == want, "{what}: get_into");
                let mut rd = r.get_reader(&t, k).unwrap().unwrap();
                assert_eq!(rd.remaining(), *len as u64, "{what}: reader length");
                let mut streamed = Vec::new();
                // Small reads, so that the step from the chain to the tail falls mid-buffer.
                let mut chunk = [0u8; 1000];
                loop {
                    let n = std::io::Read::read(&mut rd, &mut chunk).unwrap();
                    if n == 0 {
                        break;
                    }
                    streamed.extend_from_slice(&chunk[..n]);
                }
                assert!(streamed == want, "{what}: get_reader");
            }
            let mut seen = 0;
            for e in r.range(&t, ..).unwrap() {
                let (k, v) = e.unwrap();
                let (i, (_, len, _)) = sizes.iter().enumerate().find(|(_, s)| s.0[..] == k[..]).unwrap();
                assert!(v.as_ref() == &patterned(*len, i as u8)[..], "{ctx}: range");
                seen += 1;
            }
            assert_eq!(seen, sizes.len());
            assert_eq!(clean(env, ctx).live_bytes, live, "{ctx}: live bytes count each value whole");
        };
        read_all(&env, "committed");
        env.flush().unwrap();
        read_all(&env, "flushed");
        env.close().unwrap();
        drop(env);
        let env = Env::open(&dir, opts()).unwrap();
        read_all(&env, "reopened");
        let in_use = clean(&env, "reopened").pages_in_use;
        // Overwrite each value by one half a page shorter (another tail, or none, or a page
        // fewer), then delete them all: the chains' pages are freed.
        let mut tx = env.write().unwrap();
        let t = tx.open_tree("t").unwrap().unwrap();
        for (i, (k, len, _)) in sizes.iter().enumerate() {
            tx.put(&t, k, patterned(shorter(*len), i as u8 ^ 0x55)).unwrap();
        }
        assert_eq!(tx.tree_stats(&t).unwrap().overflow_pages, short_pages);
        for (i, (k, len, _)) in sizes.iter().enumerate() {
            assert!(tx.get(&t, k).unwrap().unwrap().as_ref() == &patterned(shorter(*len), i as u8 ^ 0x55)[..]);
        }
        tx.commit().unwrap();
        clean(&env, "overwritten");
        let mut tx = env.write().unwrap();
        for (k, _, _) in &sizes {
            assert!(tx.delete(&t, k).unwrap());
        }
        assert_eq!(tx.tree_stats(&t).unwrap().overflow_pages, 0);
        tx.commit().unwrap();
        let after = clean(&env, "deleted").pages_in_use;
        assert!(in_use - after >= total_pages, "deleting freed {} pages of {total_pages}", in_use - after);
        env.close().unwrap();
    }
}

/// An overflow page holds its link, its part of the value and zeros after it, never bytes of
/// an older image: the writer's page buffers are recycled (the pool), and an overflow page is
/// made without a zeroing pass first (`PageTxn::alloc_page_with`).
#[test]
fn overflow_pages_hold_their_bytes_and_zeros_only() {
    use jackdaw::internals::{tree_layout, PAGE_HEADER};
    let cap = 4096 - 48;
    let data_at = PAGE_HEADER + 16;
    let dir = TestDb::dir("overflow_zeros");
    let opts = test_opts().flusher(FlusherMode::Manual).write_once_min_pages(usize::MAX);
    let env = Env::open(&dir, opts).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    // Page images full of 0xEE, superseded and flushed: their buffers go back to the pool.
    for _ in 0..3 {
        let mut tx = env.write().unwrap();
        for i in 0..40u32 {
            tx.put(&t, i.to_be_bytes(), vec![0xEE; 3 * cap]).unwrap();
        }
        tx.commit().unwrap();
        env.flush().unwrap();
    }
    // Values whose last page is partly filled: less than a page, and full pages with a
    // remainder one byte too long for a tail.
    let lens = [3000usize, 2 * cap + cap / 4 + 1, cap + 1000];
    let mut tx = env.write().unwrap();
    for i in 0..40u32 {
        tx.delete(&t, i.to_be_bytes()).unwrap();
    }
    for (i, len) in lens.iter().enumerate() {
        tx.put(&t, format!("v{i}"), patterned(*len, i as u8)).unwrap();
    }
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let layout = tree_layout(&r, &t).unwrap();
    assert_eq!(layout.overflow.len(), 3);
    for chain in &layout.overflow {
        let i = lens.iter().position(|l| *l as u64 == chain.len).expect("a value written above");
        let want = patterned(lens[i], i as u8);
        let (mut pgno, mut at) = (chain.first, 0usize);
        for n in 0..chain.pages {
            let p = r.page(pgno).unwrap();
            let next = u64::from_le_bytes(p[PAGE_HEADER..PAGE_HEADER + 8].try_into().unwrap());
            let len = u32::from_le_bytes(p[PAGE_HEADER + 8..PAGE_HEADER + 12].try_into().unwrap()) as usize;
            assert_eq!(&p[PAGE_HEADER + 12..data_at], &[0u8; 4], "value {i}, page {n}: the link's padding");
            assert!(p[data_at..data_at + len] == want[at..at + len], "value {i}, page {n}: its bytes");
            assert!(p[data_at + len..].iter().all(|b| *b == 0), "value {i}, page {n}: zeros after its bytes");
            at += len;
            pgno = next;
        }
        // The value of cap + 1000 bytes keeps its last 1,000 in the leaf (a tail).
        let tail = if lens[i] == cap + 1000 { 1000 } else { 0 };
        assert_eq!(at + tail, want.len(), "value {i}: the chain holds it, but for its tail");
        assert_eq!(r.get(&t, format!("v{i}")).unwrap().unwrap().as_ref(), &want[..]);
    }
    drop(r);
    assert!(env.check().unwrap().is_clean());
    env.close().unwrap();
}
