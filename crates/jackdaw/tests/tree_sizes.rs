//! Page fill factors and the leaf cache.
mod common;
use common::*;
use jackdaw::Env;

fn fill_factor(env: &Env, name: &str, n: u64, entry: u64) -> f64 {
    let r = env.read().unwrap();
    let t = r.open_tree(name).unwrap().unwrap();
    let st = r.tree_stats(&t).unwrap();
    assert_eq!(st.entries, n);
    (n * (entry + 2)) as f64 / (st.leaf_pages * (4096 - 48)) as f64
}

#[test]
fn sequential_inserts_fill_leaves_and_random_ones_half() {
    let dir = TestDb::dir("fill");
    let env = Env::open(&dir, test_opts()).unwrap();
    let n = 250_000u64;
    let val = [5u8; 100];
    let mut tx = env.write().unwrap();
    let seq = tx.create_tree("seq").unwrap();
    let rnd = tx.create_tree("rnd").unwrap();
    for i in 0..n {
        tx.put(&seq, format!("{i:016}"), val).unwrap();
    }
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut keys = std::collections::HashSet::new();
    while keys.len() < n as usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = format!("{:016}", x % 10_000_000_000_000_000);
        if keys.insert(k.clone()) {
            tx.put(&rnd, k, val).unwrap();
        }
    }
    tx.commit().unwrap();
    let entry = 5 + 16 + 100;
    let fs = fill_factor(&env, "seq", n, entry);
    let fr = fill_factor(&env, "rnd", n, entry);
    println!("leaf fill factor: sequential {:.1}%, random {:.1}%", fs * 100.0, fr * 100.0);
    assert!(fs > 0.90, "sequential fill {fs}");
    assert!(fr > 0.50, "random fill {fr}");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn a_get_served_by_the_leaf_cache_touches_one_page() {
    let dir = TestDb::dir("cache");
    let env = Env::open(&dir, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..100_000u32 {
        tx.put(&t, format!("{i:08}"), [1u8; 50]).unwrap();
    }
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert!(r.tree_stats(&t).unwrap().depth >= 3);
    r.get(&t, b"00050000").unwrap().unwrap();
    let before = r.pages_touched();
    assert!(before >= 3, "a cold get descends from the root ({before})");
    let depth = r.tree_stats(&t).unwrap().depth as u64;
    // A neighbour in the same leaf: a second descent to that leaf shows locality and fills a
    // cache slot; the third get in the leaf is served by the cache.
    r.get(&t, b"00050001").unwrap().unwrap();
    assert_eq!(r.pages_touched() - before, depth);
    let b1 = r.pages_touched();
    r.get(&t, b"00050002").unwrap().unwrap();
    assert_eq!(r.pages_touched() - b1, 1);
    // Far away: a full descent again.
    let b2 = r.pages_touched();
    r.get(&t, b"00000007").unwrap().unwrap();
    assert!(r.pages_touched() - b2 >= 3);
    // Random gets (each descent to another leaf, after a miss) fill no slot: the neighbour of
    // the last one descends again; the one after it, in the same leaf once more, is cached.
    r.get(&t, b"00070000").unwrap().unwrap();
    r.get(&t, b"00030000").unwrap().unwrap();
    let b4 = r.pages_touched();
    r.get(&t, b"00030001").unwrap().unwrap();
    assert_eq!(r.pages_touched() - b4, depth, "a random get filled a cache slot");
    let b5 = r.pages_touched();
    r.get(&t, b"00030002").unwrap().unwrap();
    assert_eq!(r.pages_touched() - b5, 1);
    // After a hit, the next miss fills: gets in key order across a leaf boundary keep hitting.
    let mut descents = 0;
    for i in 30_003..31_000u32 {
        let b = r.pages_touched();
        r.get(&t, format!("{i:08}")).unwrap().unwrap();
        descents += u64::from(r.pages_touched() - b > 1);
    }
    // One descent per leaf entered (not two: the miss after a hit fills).
    let st = r.tree_stats(&t).unwrap();
    let leaves = 1_000 / (st.entries / st.leaf_pages) + 2;
    assert!(descents <= leaves, "{descents} descents for gets in key order over ~{leaves} leaves");
    // A descent reads each page of its path once: the leaf it ends on is searched as read, not
    // looked up again. (A fresh transaction: its first descent fills no cache slot, so the
    // second one, far from the first, descends again.)
    let r2 = env.read().unwrap();
    r2.get(&t, b"00000007").unwrap().unwrap();
    let b3 = r2.pages_touched();
    r2.get(&t, b"00099999").unwrap().unwrap();
    assert_eq!(r2.pages_touched() - b3, depth);
}
