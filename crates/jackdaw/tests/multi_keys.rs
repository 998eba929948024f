//! Multi-value trees: `keys` (distinct keys, double-ended) and `multi_count_range` against a
//! BTreeMap<key, BTreeSet<value>> model, in read and write transactions; keys with a few values
//! (nested list) and with hundreds (nested tree); plain trees; the cursor's refusal.
mod common;
use common::*;
use common::{seed_or, Rng};
use jackdaw::{Env, Error};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

type Model = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

/// A random bound over the key space, also between and past the stored keys.
fn bound(rng: &mut Rng) -> Bound<Vec<u8>> {
    let mut k = key(rng.below(70));
    if rng.chance(1, 3) {
        k.push(b'5'); // between two keys
    }
    match rng.below(5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

fn model_keys(m: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> (Vec<Vec<u8>>, u64) {
    // BTreeMap::range panics on start > end or equal excluded bounds: filter instead.
    let inside = |k: &Vec<u8>| {
        (match lo {
            Bound::Included(a) => k >= a,
            Bound::Excluded(a) => k > a,
            Bound::Unbounded => true,
        }) && (match hi {
            Bound::Included(b) => k <= b,
            Bound::Excluded(b) => k < b,
            Bound::Unbounded => true,
        })
    };
    let keys: Vec<Vec<u8>> = m.keys().filter(|k| inside(k)).cloned().collect();
    let n = m.iter().filter(|(k, _)| inside(k)).map(|(_, vs)| vs.len() as u64).sum();
    (keys, n)
}

/// Checks `keys` and `multi_count_range` of `$t` in transaction `$tx` (a `ReadTxn` or a
/// `WriteTxn`) against `$m`.
macro_rules! verify {
    ($tx:expr, $t:expr, $m:expr, $rng:expr, $s:expr) => {{
        let (tx, t, m, rng, s) = ($tx, $t, $m, $rng, $s);
        let all: Vec<Vec<u8>> = tx.keys(t, ..).unwrap().map(|k| k.unwrap().to_vec()).collect();
        let want: Vec<Vec<u8>> = m.keys().cloned().collect();
        assert_eq!(all, want, "seed {s}");
        let rev: Vec<Vec<u8>> = tx.keys(t, ..).unwrap().rev().map(|k| k.unwrap().to_vec()).collect();
        assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>(), "seed {s}");
        let total: u64 = m.values().map(|vs| vs.len() as u64).sum();
        assert_eq!(tx.multi_count_range(t, ..).unwrap(), total, "seed {s}");
        // Alternating ends meet once, each key exactly once.
        let mut it = tx.keys(t, ..).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut flip = false;
        while let Some(k) = if flip { it.next_back() } else { it.next() } {
            let k = k.unwrap().to_vec();
            if flip {
                back.push(k)
            } else {
                front.push(k)
            }
            flip = !flip;
        }
        drop(it);
        front.extend(back.into_iter().rev());
        assert_eq!(front, want, "seed {s}");
        for _ in 0..60 {
            let (lo, hi) = (bound(rng), bound(rng));
            let (wk, wn) = model_keys(m, &lo, &hi);
            let got: Vec<Vec<u8>> =
                tx.keys(t, (lo.clone(), hi.clone())).unwrap().map(|k| k.unwrap().to_vec()).collect();
            assert_eq!(got, wk, "seed {s} {lo:?}..{hi:?}");
            let got: Vec<Vec<u8>> =
                tx.keys(t, (lo.clone(), hi.clone())).unwrap().rev().map(|k| k.unwrap().to_vec()).collect();
            assert_eq!(got, wk.iter().rev().cloned().collect::<Vec<_>>(), "seed {s} {lo:?}..{hi:?}");
            assert_eq!(tx.multi_count_range(t, (lo.clone(), hi.clone())).unwrap(), wn, "seed {s} {lo:?}..{hi:?}");
        }
        // The range spellings compile without annotations.
        let (a, b) = (key(10), key(30));
        assert_eq!(
            tx.keys(t, a.clone()..b.clone()).unwrap().count(),
            model_keys(m, &Bound::Included(a.clone()), &Bound::Excluded(b.clone())).0.len()
        );
        assert_eq!(
            tx.keys(t, a.as_slice()..=b.as_slice()).unwrap().count(),
            model_keys(m, &Bound::Included(a.clone()), &Bound::Included(b.clone())).0.len()
        );
        assert_eq!(
            tx.multi_count_range(t, ..b.clone()).unwrap(),
            model_keys(m, &Bound::Unbounded, &Bound::Excluded(b.clone())).1
        );
        assert_eq!(
            tx.multi_count_range(t, a.clone()..).unwrap(),
            model_keys(m, &Bound::Included(a.clone()), &Bound::Unbounded).1
        );
        // Empty ranges: reversed bounds, a gap between keys, past the end.
        assert_eq!(tx.keys(t, b.clone()..a.clone()).unwrap().count(), 0, "seed {s}");
        assert!(tx.keys(t, b.clone()..a.clone()).unwrap().next_back().is_none());
        assert_eq!(tx.multi_count_range(t, b.clone()..a.clone()).unwrap(), 0, "seed {s}");
        assert_eq!(tx.keys(t, "k0105".."k0106").unwrap().count(), 0);
        assert_eq!(tx.keys(t, "z"..).unwrap().count(), 0);
        assert_eq!(tx.multi_count_range(t, "z"..).unwrap(), 0);
        assert_eq!(tx.keys(t, (Bound::Excluded(a.clone()), Bound::Excluded(a.clone()))).unwrap().count(), 0);
    }};
}

fn mutate(tx: &mut jackdaw::WriteTxn, t: &jackdaw::Tree, m: &mut Model, rng: &mut Rng, s: u64) {
    for _ in 0..rng.range(20, 200) {
        let k = key(rng.below(60));
        let many = rng.chance(1, 8);
        match rng.below(10) {
            0 => {
                let n = tx.multi_delete_all(t, &k).unwrap();
                assert_eq!(n, m.remove(&k).map_or(0, |vs| vs.len() as u64), "seed {s}");
            }
            1 => {
                if let Some(v) = m.get(&k).and_then(|vs| vs.iter().next().cloned()) {
                    assert!(tx.multi_delete(t, &k, &v).unwrap(), "seed {s}");
                    m.get_mut(&k).unwrap().remove(&v);
                }
            }
            _ => {
                // Few values, or (sometimes) hundreds: a nested tree.
                let n = if many { rng.range(100, 400) } else { rng.range(1, 4) };
                for _ in 0..n {
                    let mut v = vec![0u8; rng.range(1, 12) as usize];
                    rng.fill_bytes(&mut v);
                    let added = tx.multi_put(t, &k, &v).unwrap();
                    assert_eq!(added, m.entry(k.clone()).or_default().insert(v), "seed {s}");
                }
            }
        }
        m.retain(|_, vs| !vs.is_empty());
    }
}

#[test]
fn keys_and_count_range_match_the_model() {
    let s = seed_or("keys_and_count_range_match_the_model", 0x6b65_7973);
    let mut rng = Rng::new(s);
    let dir = TestDb::dir("multi-keys");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_multi_tree("ix").unwrap();
    tx.commit().unwrap();
    let mut model = Model::new();
    let mut saw_big = false;
    for _round in 0..12 {
        let mut tx = env.write().unwrap();
        let mut staged = model.clone();
        mutate(&mut tx, &t, &mut staged, &mut rng, s);
        // The write transaction sees its own uncommitted changes.
        verify!(&tx, &t, &staged, &mut rng, s);
        if rng.chance(1, 5) {
            tx.abort();
        } else {
            tx.commit().unwrap();
            model = staged;
        }
        saw_big |= model.values().any(|vs| vs.len() > 100);
        let r = env.read().unwrap();
        verify!(&r, &t, &model, &mut rng, s);
        // A `Keys` owns what it needs: it outlives the transaction's borrow.
        let keys = r.keys(&t, ..).unwrap();
        drop(r);
        assert_eq!(keys.count(), model.len(), "seed {s}");
    }
    assert!(saw_big, "seed {s}: no key reached the nested tree form");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn keys_and_count_range_of_a_plain_tree() {
    let s = seed_or("keys_and_count_range_of_a_plain_tree", 0x0070_6c61);
    let mut rng = Rng::new(s);
    let dir = TestDb::dir("multi-keys-plain");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("plain").unwrap();
    // The model of a plain tree: one value per key.
    let mut m = Model::new();
    for _ in 0..50 {
        let k = key(rng.below(60));
        tx.put(&t, &k, b"v").unwrap();
        m.insert(k, [b"v".to_vec()].into());
    }
    verify!(&tx, &t, &m, &mut rng, s);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    verify!(&r, &t, &m, &mut rng, s);
}

#[test]
fn the_cursor_refuses_a_multi_value_tree_with_a_pointer_to_keys() {
    let dir = TestDb::dir("multi-keys-cursor");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_multi_tree("ix").unwrap();
    tx.multi_put(&t, b"a", b"1").unwrap();
    match tx.cursor(&t) {
        Err(e @ Error::WrongTreeKind(_)) => assert!(e.to_string().contains("keys"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a cursor over a multi-value tree"),
    }
    // The iterator types are nameable.
    let keys: jackdaw::WriteKeys<'_> = tx.keys(&t, ..).unwrap();
    assert_eq!(keys.count(), 1);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let keys: jackdaw::Keys = r.keys(&t, ..).unwrap();
    assert_eq!(keys.count(), 1);
    assert!(matches!(r.cursor(&t), Err(Error::WrongTreeKind(_))));
    assert_eq!(r.keys(&t, ..).unwrap().map(|k| k.unwrap().to_vec()).collect::<Vec<_>>(), vec![b"a".to_vec()]);
}
