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
    let b = rng.next() as u8;
    (0..len).map(|i| b.wrapping_add(i as u8)).collect()
}

#[test]
fn random_ops_match_a_btreemap() {
    let s = seed();
    let mut rng = Rng(s);
    let dir = tmpdir("tree-model");
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
        let got: Vec<Vec<u8>> = tx.range::<&[u8], _>(&t, ..).unwrap().map(|r| r.unwrap().0.to_vec()).collect();
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
        let mut it = r.range::<&[u8], _>(&t, ..).unwrap();
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
        if let Err(e) = env.check() {
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
    env.check().unwrap();
}

#[test]
fn named_trees_create_rename_delete_and_handles() {
    let dir = tmpdir("named");
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
    env.check().unwrap();
}

#[test]
fn oversized_keys_and_values_are_rejected() {
    let dir = tmpdir("sizes");
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
    env.check().unwrap();
}

/// `CommitStats::pages_by_kind` counts what each commit wrote (the figures `flush_log` prints per
/// journal write): leaves, branches, overflow chains (built in memory or streamed in), and it
/// always adds up to `pages`.
#[test]
fn commit_stats_count_pages_by_kind() {
    let dir = tmpdir("pages-by-kind");
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
