//! The typed layer: key encodings (order, round trip, prefixes, damaged bytes) as property tests,
//! values, and `TypedTree` against a model (get/put/delete, typed ranges and prefixes, both
//! directions, multi-value trees, typed batches, reads in the write transaction).
//!
//! Property tests use proptest with a fixed configuration and a seeded RNG: the seed is printed
//! and `JACKDAW_SEED` replays it.
mod common;
use common::*;
use common::{seed_or, Rng};
use jackdaw::{AsKey, Env, Error, Key, KeyPrefix, TypedTree, Value, WriteBatch};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// A runner seeded from `JACKDAW_SEED` (or a fixed default), `cases` cases.
fn runner(test: &str, cases: u32) -> TestRunner {
    let seed = seed_or(test, 0x7e57_0001);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Bytes rich in the values the escaping cares about (0x00, 0x01, 0xff).
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> + Clone {
    prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xffu8), Just(0xfeu8), any::<u8>()], 0..10)
}

fn tricky_string() -> impl Strategy<Value = String> + Clone {
    prop::collection::vec(
        prop_oneof![Just('\0'), Just('\u{1}'), Just('a'), Just('ÿ'), Just('\u{10ffff}'), any::<char>()],
        0..8,
    )
    .prop_map(|v| v.into_iter().collect())
}

/// Order, round trip and damaged bytes for one key type.
fn check_key<K: Key + Debug + Clone>(name: &str, strategy: impl Strategy<Value = K> + Clone) {
    let mut r = runner(&format!("key_{name}"), 2000);
    r.run(&(strategy.clone(), strategy), |(a, b)| {
        let (ea, eb) = (a.to_key_bytes(), b.to_key_bytes());
        prop_assert_eq!(a.cmp(&b), ea.cmp(&eb), "{:?} {:?} -> {:?} {:?}", a, b, ea, eb);
        prop_assert_eq!(&K::from_key_bytes(&ea).unwrap(), &a);
        // decode_key consumes exactly the encoding, whatever follows it.
        let mut both = ea.clone();
        both.extend_from_slice(&eb);
        let mut input = &both[..];
        prop_assert_eq!(&K::decode_key(&mut input).unwrap(), &a);
        prop_assert_eq!(input, &eb[..]);
        // Every proper truncation fails with a typed error; extra bytes fail too.
        for n in 0..ea.len() {
            let refused = matches!(K::from_key_bytes(&ea[..n]), Err(Error::Corrupted { .. }));
            prop_assert!(refused, "{:?} accepted", &ea[..n]);
        }
        let mut longer = ea.clone();
        longer.push(0);
        let refused = matches!(K::from_key_bytes(&longer), Err(Error::Corrupted { .. }));
        prop_assert!(refused, "{:?} accepted", longer);
        Ok(())
    })
    .unwrap();
    // Damaged bytes (flips of a valid encoding, and random bytes) never panic; what decodes
    // re-encodes to the same bytes (the encoding is canonical).
    let mut r = runner(&format!("damaged_{name}"), 2000);
    r.run(&(any::<u64>(), tricky_bytes()), |(flip, junk)| {
        for bytes in [junk.clone(), {
            let mut e = K::from_key_bytes(&junk).map(|k| k.to_key_bytes()).unwrap_or_else(|_| junk.clone());
            if !e.is_empty() {
                let i = (flip % e.len() as u64) as usize;
                e[i] ^= 1 << (flip % 8);
            }
            e
        }] {
            if let Ok(k) = K::from_key_bytes(&bytes) {
                prop_assert_eq!(k.to_key_bytes(), bytes);
            }
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn every_key_type_preserves_order_round_trips_and_rejects_damaged_bytes() {
    check_key("u8", any::<u8>());
    check_key("u16", any::<u16>());
    check_key("u32", any::<u32>());
    check_key("u64", any::<u64>());
    check_key("u128", any::<u128>());
    check_key("i8", any::<i8>());
    check_key("i16", any::<i16>());
    check_key("i32", any::<i32>());
    check_key("i64", any::<i64>());
    check_key("i128", any::<i128>());
    check_key("bool", any::<bool>());
    check_key("string", tricky_string());
    check_key("bytes", tricky_bytes());
    check_key("array", any::<[u8; 3]>());
    check_key("t1", (tricky_string(),).prop_map(|x| x));
    check_key("t2_str_u8", (tricky_string(), any::<u8>()));
    check_key("t2_bytes_bytes", (tricky_bytes(), tricky_bytes()));
    check_key("t3", (any::<i16>(), tricky_bytes(), any::<u8>()));
    check_key("t4", (tricky_string(), any::<u8>(), tricky_bytes(), any::<i64>()));
    check_key("t4_fixed", (any::<bool>(), any::<[u8; 2]>(), any::<i8>(), tricky_string()));
}

#[test]
fn leading_components_encode_as_byte_prefixes() {
    let mut r = runner("prefixes", 3000);
    r.run(&(tricky_string(), any::<u64>(), tricky_bytes(), any::<i8>()), |(s, n, b, i)| {
        let whole = (s.clone(), n, b.clone(), i).to_key_bytes();
        let mut p1 = Vec::new();
        KeyPrefix::<(String, u64, Vec<u8>, i8)>::encode_prefix(&(s.as_str(),), &mut p1);
        prop_assert_eq!(&p1, &s.to_key_bytes());
        prop_assert!(whole.starts_with(&p1));
        let mut p2 = Vec::new();
        KeyPrefix::<(String, u64, Vec<u8>, i8)>::encode_prefix(&(&s, n), &mut p2);
        prop_assert!(whole.starts_with(&p2) && p2.len() > p1.len());
        let mut p3 = Vec::new();
        KeyPrefix::<(String, u64, Vec<u8>, i8)>::encode_prefix(&(&s, n, b.as_slice()), &mut p3);
        prop_assert!(whole.starts_with(&p3) && p3.len() + 1 == whole.len());
        // A 2-tuple's first component too.
        let two = (b.clone(), s.clone()).to_key_bytes();
        prop_assert!(two.starts_with(&b.to_key_bytes()));
        // A borrowed form encodes as the owned one.
        let mut q = Vec::new();
        AsKey::<(String, u64, Vec<u8>, i8)>::encode_key(&(s.as_str(), n, &b[..], i), &mut q);
        prop_assert_eq!(q, whole);
        Ok(())
    })
    .unwrap();
}

fn check_value<V: Value + Debug + PartialEq>(name: &str, strategy: impl Strategy<Value = V>) {
    let mut r = runner(&format!("value_{name}"), 500);
    r.run(&(strategy, tricky_bytes()), |(v, junk)| {
        prop_assert_eq!(&V::decode_value(&v.to_value_bytes().unwrap()).unwrap(), &v);
        if let Ok(w) = V::decode_value(&junk) {
            // Raw encodings are canonical too.
            prop_assert_eq!(w.to_value_bytes().unwrap(), junk);
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn values_round_trip_and_damaged_values_are_errors() {
    check_value("bytes", tricky_bytes());
    check_value("string", tricky_string());
    check_value("u32", any::<u32>());
    check_value("i64", any::<i64>());
    check_value("bool", any::<bool>());
    check_value("array", any::<[u8; 4]>());
    assert!(matches!(String::decode_value(&[0xff]), Err(Error::Corrupted { .. })));
    assert!(matches!(u32::decode_value(&[1, 2, 3]), Err(Error::Corrupted { .. })));
    assert!(matches!(<()>::decode_value(&[1]), Err(Error::Corrupted { .. })));
    assert!(matches!(<[u8; 2]>::decode_value(&[1]), Err(Error::Corrupted { .. })));
    // Integers are stored like keys: big-endian, sign flipped.
    assert_eq!((-2i16).to_value_bytes().unwrap(), [0x7f, 0xfe]);
}

#[test]
fn typed_tree_matches_a_model_in_both_directions() {
    let seed = seed_or("typed_tree_model", 0x7e57_0002);
    let _guard = common::OnPanic(format!("typed_tree_model: replay with JACKDAW_SEED={seed}"));
    let mut rng = Rng::new(seed);
    let dir = TestDb::dir("typed-model");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut model: BTreeMap<(String, i32), Vec<u8>> = BTreeMap::new();
    let artists = ["", "a", "a\0", "a\0b", "ab", "b\u{ff}", "Pearl", "Pearl Jam", "Pearl\0Jam"];
    let mut tx = env.write().unwrap();
    let t: TypedTree<(String, i32), Vec<u8>> = tx.create_typed("model").unwrap();
    for round in 0..30 {
        for _ in 0..100 {
            let k = (rng.pick(&artists).to_string(), rng.range(0, 40) as i32 - 20);
            if rng.chance(1, 4) {
                assert_eq!(t.delete(&mut tx, &k).unwrap(), model.remove(&k).is_some());
            } else {
                let v = vec![rng.below(256) as u8; rng.below(5) as usize];
                t.put(&mut tx, &k, &v).unwrap();
                model.insert(k, v);
            }
        }
        // The write transaction sees its own changes.
        let k = (rng.pick(&artists).to_string(), 3);
        assert_eq!(t.get(&mut tx, &k).unwrap(), model.get(&k).cloned());
        if round % 3 == 2 {
            tx.commit().unwrap();
            let r = env.read().unwrap();
            let all: Vec<_> = t.range(&r, ..).unwrap().map(|x| x.unwrap()).collect();
            assert_eq!(all, model.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
            let rev: Vec<_> = t.iter(&r).unwrap().rev().map(|x| x.unwrap().0).collect();
            assert_eq!(rev, model.keys().rev().cloned().collect::<Vec<_>>());
            assert_eq!(t.len(&r).unwrap(), model.len() as u64);
            for _ in 0..20 {
                let lo = (rng.pick(&artists).to_string(), rng.range(0, 40) as i32 - 20);
                let hi = (rng.pick(&artists).to_string(), rng.range(0, 40) as i32 - 20);
                if lo > hi {
                    continue;
                }
                let got: Vec<_> = t.range(&r, lo.clone()..=hi.clone()).unwrap().map(|x| x.unwrap().0).collect();
                let want: Vec<_> = model.range(lo.clone()..=hi.clone()).map(|(k, _)| k.clone()).collect();
                assert_eq!(got, want, "{lo:?}..={hi:?}");
                let got: Vec<_> = t.range(&r, ..hi.clone()).unwrap().rev().map(|x| x.unwrap().0).collect();
                let want: Vec<_> = model.range(..hi.clone()).rev().map(|(k, _)| k.clone()).collect();
                assert_eq!(got, want, "..{hi:?}");
                // Typed prefix: every key whose artist is exactly `a`.
                let a = rng.pick(&artists);
                let got: Vec<_> = t.prefix(&r, &(*a,)).unwrap().map(|x| x.unwrap().0).collect();
                let want: Vec<_> = model.keys().filter(|k| k.0 == *a).cloned().collect();
                assert_eq!(got, want, "prefix ({a:?},)");
                // Raw string prefix of the first component, backwards.
                let cut = rng.below(a.len() as u64 + 1) as usize;
                if a.is_char_boundary(cut) {
                    let p = &a[..cut];
                    let got: Vec<_> = t.prefix_str(&r, p).unwrap().rev().map(|x| x.unwrap().0).collect();
                    let want: Vec<_> = model.keys().rev().filter(|k| k.0.starts_with(p)).cloned().collect();
                    assert_eq!(got, want, "prefix_str {p:?}");
                }
            }
            tx = env.write().unwrap();
        }
    }
    drop(tx);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn string_keys_borrowed_arguments_and_the_bytes_api_interoperate() {
    let dir = TestDb::dir("typed-str");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let bands: TypedTree<String, u64> = TypedTree::create(&mut tx, "bands").unwrap();
    for (i, b) in ["Pearl Jam", "Pearl", "Pearls", "Nirvana", "Pea"].iter().enumerate() {
        bands.put(&mut tx, *b, &(i as u64)).unwrap();
    }
    let owned = "Soundgarden".to_string();
    bands.put(&mut tx, &owned, &9).unwrap();
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let got: Vec<String> = bands.prefix_str(&r, "Pearl").unwrap().map(|x| x.unwrap().0).collect();
    assert_eq!(got, ["Pearl", "Pearl Jam", "Pearls"]);
    assert_eq!(bands.get(&r, "Pea").unwrap(), Some(4));
    assert_eq!(bands.get(&r, &owned).unwrap(), Some(9));
    assert_eq!(bands.get(&r, "Pe").unwrap(), None);
    // Typed bounds come from the tree: no annotations.
    assert_eq!(bands.range(&r, ..).unwrap().count(), 6);
    assert_eq!(bands.range(&r, "Pearl".to_string()..).unwrap().count(), 4);
    // The bytes API: `..` needs no annotation either, and sees the encoded keys.
    let raw: Vec<_> = r.range(bands.tree(), ..).unwrap().map(|x| x.unwrap().0.to_vec()).collect();
    assert_eq!(raw[0], b"Nirvana\x00\x01");
    assert_eq!(r.get(bands.tree(), b"Pea\x00\x01").unwrap().unwrap().as_ref(), 4u64.to_be_bytes());
    // A handle made from a bytes handle, and one opened by name.
    let again: TypedTree<String, u64> = TypedTree::from(r.open_tree("bands").unwrap().unwrap());
    assert_eq!(again.get(&r, "Pearl Jam").unwrap(), Some(0));
    let opened: TypedTree<String, u64> = r.open_typed("bands").unwrap().unwrap();
    assert_eq!(opened.len(&r).unwrap(), 6);
    assert!(r.open_typed::<String, u64>("none").unwrap().is_none());
    // The wrong types: a typed error from each item, not a panic.
    let wrong: TypedTree<u32, String> = TypedTree::from(bands.tree().clone());
    assert!(wrong.range(&r, ..).unwrap().all(|x| matches!(x, Err(Error::Corrupted { .. }))));
    let wrong: TypedTree<String, [u8; 3]> = TypedTree::from(bands.tree().clone());
    assert!(matches!(wrong.get(&r, "Pea"), Err(Error::Corrupted { .. })));
    drop(r);
    // Integer keys sort numerically, negatives first.
    let mut tx = env.write().unwrap();
    let ints: TypedTree<i64, ()> = tx.create_typed("ints").unwrap();
    for i in [5i64, -1, i64::MIN, 0, i64::MAX, -300, 300] {
        ints.put(&mut tx, &i, &()).unwrap();
    }
    let got: Vec<i64> = ints.range(&mut tx, -300..=5).unwrap().map(|x| x.unwrap().0).collect();
    assert_eq!(got, [-300, -1, 0, 5]);
    let got: Vec<i64> = ints.iter(&mut tx).unwrap().rev().map(|x| x.unwrap().0).collect();
    assert_eq!(got, [i64::MAX, 300, 5, 0, -1, -300, i64::MIN]);
    assert!(ints.delete(&mut tx, &-1).unwrap());
    assert!(!ints.delete(&mut tx, &-1).unwrap());
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn typed_multi_value_trees() {
    let dir = TestDb::dir("typed-multi");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let by_year: TypedTree<u16, i32> = tx.create_typed_multi("by-year").unwrap();
    // Enough values under 1991 to turn the nested list into a nested tree.
    for v in (-500..500).rev() {
        assert!(by_year.multi_put(&mut tx, &1991, &v).unwrap());
    }
    assert!(!by_year.multi_put(&mut tx, &1991, &0).unwrap());
    for v in [3, -3, 30] {
        by_year.multi_put(&mut tx, &1993, &v).unwrap();
    }
    // Values come out in numeric order (big-endian, sign flipped), in the write txn too.
    let got: Vec<i32> = by_year.multi_get(&mut tx, &1993).unwrap().map(|x| x.unwrap()).collect();
    assert_eq!(got, [-3, 3, 30]);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert_eq!(by_year.multi_count(&r, &1991).unwrap(), 1000);
    let got: Vec<i32> = by_year.multi_get(&r, &1991).unwrap().rev().take(2).map(|x| x.unwrap()).collect();
    assert_eq!(got, [499, 498]);
    let all: Vec<(u16, i32)> = by_year.range(&r, 1992..).unwrap().map(|x| x.unwrap()).collect();
    assert_eq!(all, [(1993, -3), (1993, 3), (1993, 30)]);
    assert_eq!(by_year.len(&r).unwrap(), 1003);
    // Plain operations on a multi-value tree are refused.
    let mut tx = env.write().unwrap();
    assert!(matches!(by_year.put(&mut tx, &1, &1), Err(Error::WrongTreeKind(_))));
    drop(tx);
    let mut tx = env.write().unwrap();
    assert!(by_year.multi_delete(&mut tx, &1993, &3).unwrap());
    assert!(!by_year.multi_delete(&mut tx, &1993, &3).unwrap());
    assert_eq!(by_year.multi_delete_all(&mut tx, &1991).unwrap(), 1000);
    assert_eq!(by_year.multi_count(&mut tx, &1991).unwrap(), 0);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert_eq!(by_year.iter(&r).unwrap().map(|x| x.unwrap().1).collect::<Vec<_>>(), [-3, 30]);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn typed_batches_beside_bytes_batches() {
    let dir = TestDb::dir("typed-batch");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let albums: TypedTree<(String, u16), String> = tx.create_typed("albums").unwrap();
    let tags: TypedTree<String, String> = tx.create_typed_multi("tags").unwrap();
    let raw = tx.create_tree("raw").unwrap();
    albums.put(&mut tx, &("Nirvana", 1989), "Bleach").unwrap();
    tx.commit().unwrap();
    let mut b = WriteBatch::new();
    b.put(&albums, &("Pearl Jam", 1991), "Ten");
    b.put(&albums, &("Pearl Jam".to_string(), 1993u16), &"Vs.".to_string());
    b.delete(&albums, &("Nirvana", 1989));
    b.multi_put(&tags, "grunge", "Ten");
    b.multi_put(&tags, "grunge", "Vs.");
    b.multi_delete(&tags, "grunge", "Vs.");
    b.put(&raw, b"k", b"v");
    assert_eq!(b.len(), 7);
    env.write_batch(b).unwrap();
    let r = env.read().unwrap();
    let got: Vec<_> = albums.prefix(&r, &("Pearl Jam",)).unwrap().map(|x| x.unwrap()).collect();
    assert_eq!(got, [(("Pearl Jam".into(), 1991), "Ten".into()), (("Pearl Jam".into(), 1993), "Vs.".into())]);
    assert_eq!(albums.get(&r, &("Nirvana", 1989)).unwrap(), None);
    assert_eq!(tags.multi_get(&r, "grunge").unwrap().map(|x| x.unwrap()).collect::<Vec<_>>(), ["Ten"]);
    assert_eq!(r.get(&raw, b"k").unwrap().unwrap().as_ref(), b"v");
    drop(r);
    // A batch on a deleted tree's handle fails alone with NoSuchTree; a handle of another
    // environment with Invalid; nothing of either is applied.
    let mut tx = env.write().unwrap();
    assert!(tx.delete_tree("raw").unwrap());
    tx.commit().unwrap();
    let mut b = WriteBatch::new();
    b.put(&albums, &("Alice in Chains", 1992), "Dirt");
    b.put(&raw, b"k2", b"v");
    assert!(matches!(env.write_batch(b), Err(Error::NoSuchTree(_))));
    let dir2 = TestDb::dir("typed-batch-2");
    let env2 = Env::open(&dir2, test_opts()).unwrap();
    let mut tx2 = env2.write().unwrap();
    let other: TypedTree<u8, u8> = tx2.create_typed("other").unwrap();
    tx2.commit().unwrap();
    let mut b = WriteBatch::new();
    b.put(&albums, &("Alice in Chains", 1992), "Dirt");
    b.put(&other, &1, &1);
    assert!(matches!(env.write_batch(b), Err(Error::Invalid(_))));
    let r = env.read().unwrap();
    assert_eq!(albums.len(&r).unwrap(), 2);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn typed_keys_over_the_size_limit_are_refused() {
    let dir = TestDb::dir("typed-big");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t: TypedTree<Vec<u8>, u8> = tx.create_typed("t").unwrap();
    // 0x00 bytes double in the encoding: the limit applies to the encoded key.
    let max = jackdaw::max_key_size(4096);
    let k = vec![0u8; max / 2];
    assert!(matches!(t.put(&mut tx, &k, &1), Err(Error::KeyTooLarge { .. })));
}

#[cfg(feature = "serde")]
mod with_serde {
    use super::*;
    use jackdaw::Serde;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    struct Album {
        title: String,
        year: u16,
        tracks: Vec<(u8, String)>,
        rating: Option<f32>,
    }

    struct Unserializable;
    impl Serialize for Unserializable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("refused"))
        }
    }
    impl<'de> Deserialize<'de> for Unserializable {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Ok(Unserializable)
        }
    }

    #[test]
    fn serde_values_through_postcard() {
        let dir = TestDb::dir("typed-serde");
        let env = Env::open(&dir, test_opts()).unwrap();
        let mut tx = env.write().unwrap();
        let albums: TypedTree<u64, Serde<Album>> = tx.create_typed("albums").unwrap();
        let ten = Album { title: "Ten".into(), year: 1991, tracks: vec![(1, "Once".into())], rating: Some(4.5) };
        albums.put(&mut tx, &1, &Serde(ten.clone())).unwrap();
        tx.commit().unwrap();
        let r = env.read().unwrap();
        assert_eq!(albums.get(&r, &1).unwrap().unwrap().0, ten);
        // Compact: no field names (title 1+3, year varint 2, tracks 1+1+1+4, Some 1+4).
        let raw = r.get(albums.tree(), 1u64.to_be_bytes()).unwrap().unwrap();
        assert_eq!(raw.len(), 18);
        // Damaged or foreign bytes: a typed error.
        for bad in [&raw[..raw.len() - 1], &[0xff, 0xff, 0xff][..]] {
            assert!(matches!(Serde::<Album>::decode_value(bad), Err(Error::Corrupted { .. })));
        }
        let mut longer = raw.to_vec();
        longer.push(0);
        assert!(matches!(Serde::<Album>::decode_value(&longer), Err(Error::Corrupted { .. })));
        drop(r);
        // A value that fails to serialize: an error from put, and a batch that fails alone.
        let mut tx = env.write().unwrap();
        let bad: TypedTree<u8, Serde<Unserializable>> = tx.create_typed("bad").unwrap();
        assert!(matches!(bad.put(&mut tx, &1, &Serde(Unserializable)), Err(Error::Invalid(_))));
        tx.commit().unwrap();
        let mut b = WriteBatch::new();
        b.put(&albums, &2, &Serde(ten.clone()));
        b.put(&bad, &1, &Serde(Unserializable));
        assert!(matches!(env.write_batch(b), Err(Error::Invalid(_))));
        let r = env.read().unwrap();
        assert_eq!(albums.get(&r, &2).unwrap(), None);
    }

    #[test]
    fn serde_values_round_trip() {
        let mut r = runner("serde_values", 500);
        let s = (tricky_string(), any::<u16>(), prop::collection::vec((any::<u8>(), tricky_string()), 0..4));
        r.run(&s, |(title, year, tracks)| {
            let a = Serde(Album { title, year, tracks, rating: None });
            prop_assert_eq!(Serde::<Album>::decode_value(&a.to_value_bytes().unwrap()).unwrap(), a);
            Ok(())
        })
        .unwrap();
    }
}
