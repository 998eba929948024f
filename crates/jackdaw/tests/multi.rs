//! Multi-value trees against a model, the nested list <-> nested tree transitions, a million values
//! under one key.
mod common;
use common::*;
use jackdaw::{Env, Error};
use std::collections::{BTreeMap, BTreeSet};

type Model = BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>;

fn verify(env: &Env, t: &jackdaw::Tree, model: &Model, rng: &mut Rng, s: u64) {
    let r = env.read().unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> =
        r.range(t, ..).unwrap().map(|x| x.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect();
    assert_eq!(all, want, "seed {s}");
    let rev: Vec<(Vec<u8>, Vec<u8>)> =
        r.range(t, ..).unwrap().rev().map(|x| x.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    assert_eq!(rev, want.iter().rev().cloned().collect::<Vec<_>>(), "seed {s}");
    // Alternating ends.
    let mut it = r.range(t, ..).unwrap();
    let mut both = Vec::new();
    let mut flip = false;
    while let Some(x) = if flip { it.next_back() } else { it.next() } {
        flip = !flip;
        let (k, v) = x.unwrap();
        both.push((k.to_vec(), v.to_vec()));
    }
    drop(it);
    both.sort();
    assert_eq!(both, want, "seed {s}");
    for (k, vs) in model {
        assert_eq!(r.multi_count(t, k).unwrap(), vs.len() as u64, "seed {s}");
        let got: Vec<Vec<u8>> = r.multi_get(t, k).unwrap().map(|v| v.unwrap().to_vec()).collect();
        assert_eq!(got, vs.iter().cloned().collect::<Vec<_>>(), "seed {s}");
        let got: Vec<Vec<u8>> = r.multi_get(t, k).unwrap().rev().map(|v| v.unwrap().to_vec()).collect();
        assert_eq!(got, vs.iter().rev().cloned().collect::<Vec<_>>(), "seed {s}");
        let probe = vec![(rng.below(256)) as u8; 1];
        let mut vals = r.multi_get(t, k).unwrap();
        vals.seek(&probe);
        let got: Vec<Vec<u8>> = vals.map(|v| v.unwrap().to_vec()).collect();
        assert_eq!(got, vs.range(probe.clone()..).cloned().collect::<Vec<_>>(), "seed {s}");
        // One key's values from both ends alternately (a step forward after a step back too),
        // each value once; then a seek after those steps starts over from the probe.
        let mut vals = r.multi_get(t, k).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        for i in 0.. {
            let x = if i % 3 == 1 { vals.next_back() } else { vals.next() };
            match (x, i % 3 == 1) {
                (Some(v), true) => back.push(v.unwrap().to_vec()),
                (Some(v), false) => front.push(v.unwrap().to_vec()),
                (None, _) => break,
            }
        }
        front.extend(back.into_iter().rev());
        assert_eq!(front, vs.iter().cloned().collect::<Vec<_>>(), "seed {s}");
        vals.seek(&probe);
        let got: Vec<Vec<u8>> = vals.map(|v| v.unwrap().to_vec()).collect();
        assert_eq!(got, vs.range(probe..).cloned().collect::<Vec<_>>(), "seed {s}");
    }
    assert_eq!(r.tree_stats(t).unwrap().entries, want.len() as u64, "seed {s}");
}

#[test]
fn multi_values_match_the_model_across_transitions_and_reopens() {
    let s = seed();
    let mut rng = Rng::new(s);
    let dir = TestDb::dir("multi-model");
    let mut env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_multi_tree("ix").unwrap();
    tx.commit().unwrap();
    let mut model = Model::new();
    for round in 0..40 {
        let mut tx = env.write().unwrap();
        let mut staged = model.clone();
        // Grow some keys far past the nested list limit, shrink others back.
        let grow = round % 4 != 3;
        for _ in 0..rng.below(600) {
            let k = format!("key{}", rng.below(6)).into_bytes();
            let vlen = match rng.below(6) {
                0 => 0,
                1 => 300,
                _ => 1 + rng.below(24) as usize,
            };
            let v: Vec<u8> = (0..vlen).map(|i| (rng.next_u64() as u8).wrapping_add(i as u8)).collect();
            let op = rng.below(10);
            if op < 6 && grow || op < 2 {
                let added = tx.multi_put(&t, &k, &v).unwrap();
                assert_eq!(added, staged.entry(k.clone()).or_default().insert(v), "seed {s}");
            } else if op < 9 {
                // Delete an existing value when there is one.
                let target = staged
                    .get(&k)
                    .and_then(|vs| vs.iter().nth(rng.below(vs.len() as u64 + 1) as usize).cloned())
                    .unwrap_or(v);
                let removed = tx.multi_delete(&t, &k, &target).unwrap();
                let was = staged.get_mut(&k).is_some_and(|vs| vs.remove(&target));
                assert_eq!(removed, was, "seed {s}");
            } else {
                let n = tx.multi_delete_all(&t, &k).unwrap();
                assert_eq!(n, staged.get(&k).map_or(0, |vs| vs.len() as u64), "seed {s}");
                staged.remove(&k);
            }
            staged.retain(|_, vs| !vs.is_empty());
        }
        for (k, vs) in &staged {
            assert_eq!(tx.multi_count(&t, k).unwrap(), vs.len() as u64, "seed {s}");
        }
        if rng.below(6) == 0 {
            drop(tx);
        } else {
            tx.commit().unwrap();
            model = staged;
        }
        if let Err(e) = env.check().and_then(jackdaw::CheckReport::into_result) {
            panic!("seed {s} round {round}: {e}");
        }
        verify(&env, &t, &model, &mut rng, s);
        if round % 8 == 7 {
            drop(env);
            env = Env::open(&dir, test_opts()).unwrap();
        }
    }
    // Plain calls on a multi tree and the reverse are typed errors.
    let mut tx = env.write().unwrap();
    assert!(matches!(tx.put(&t, b"k", b"v"), Err(Error::WrongTreeKind(_))));
    assert!(matches!(tx.create_tree("ix"), Err(Error::WrongTreeKind(_))));
    let plain = tx.create_tree("plain").unwrap();
    assert!(matches!(tx.multi_put(&plain, b"k", b"v"), Err(Error::WrongTreeKind(_))));
    assert!(matches!(tx.multi_put(&t, b"k", vec![0u8; 3000]), Err(Error::ValueTooLarge { .. })));
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn a_million_values_under_one_key() {
    let dir = TestDb::dir("multi-million");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_multi_tree("artist").unwrap();
    for i in 0..1_000_000u32 {
        tx.multi_put(&t, b"pearl jam", i.to_be_bytes()).unwrap();
    }
    tx.multi_put(&t, b"pearl jam", 5u32.to_be_bytes()).unwrap();
    tx.commit().unwrap();
    let r = env.read().unwrap();
    // Warm the leaf cache, then a count touches at most one page.
    assert_eq!(r.multi_count(&t, b"pearl jam").unwrap(), 1_000_000);
    let before = r.pages_touched();
    assert_eq!(r.multi_count(&t, b"pearl jam").unwrap(), 1_000_000);
    assert!(r.pages_touched() - before <= 1);
    let mut vals = r.multi_get(&t, b"pearl jam").unwrap();
    vals.seek(999_990u32.to_be_bytes());
    assert_eq!(vals.count(), 10);
    let last = r.multi_get(&t, b"pearl jam").unwrap().next_back().unwrap().unwrap();
    assert_eq!(last.as_ref(), 999_999u32.to_be_bytes());
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    let mut tx = env.write().unwrap();
    assert_eq!(tx.multi_delete_all(&t, b"pearl jam").unwrap(), 1_000_000);
    let st = tx.tree_stats(&t).unwrap();
    assert_eq!((st.entries, st.leaf_pages, st.branch_pages), (0, 0, 0));
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
