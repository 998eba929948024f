use jackdaw::{Durability, Env, Options};
use std::time::Instant;
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let d = match std::env::args().nth(2).as_deref() {
        Some("none") => Durability::None,
        Some("buff") => Durability::Buffered,
        _ => Durability::Sync,
    };
    let dir = std::path::PathBuf::from("target/seqfill");
    let _ = std::fs::remove_dir_all(&dir);
    let val = vec![7u8; 100];
    let t = Instant::now();
    let mut o = Options::default().durability(d);
    if let Some(n) = std::env::var("MAX_DIRTY").ok().and_then(|s| s.parse::<usize>().ok()) {
        o = o.max_dirty_pages(n);
    }
    let env = Env::open(&dir, o).unwrap();
    let mut tx = env.write().unwrap();
    let tree = tx.create_tree("t").unwrap();
    // ORDER=rnd: the same keys in a random order (a big random transaction: spilled leaves are
    // changed again).
    let rnd = std::env::var("ORDER").is_ok_and(|o| o == "rnd");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        let k = if rnd {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        } else {
            i
        };
        tx.put(&tree, format!("{k:016}"), &val).unwrap();
    }
    let puts = t.elapsed();
    let st = tx.commit().unwrap();
    let committed = t.elapsed();
    env.close().unwrap();
    drop(env);
    let el = t.elapsed();
    println!(
        "fill-seq {n} {d:?}: {:.0} ops/s ({el:?}: puts {puts:?}, commit {:?}, close {:?}); commit {st:?}",
        n as f64 / el.as_secs_f64(),
        committed - puts,
        el - committed
    );
    let env = Env::open(&dir, Options::default()).unwrap();
    let r = env.read().unwrap();
    let tree = r.open_tree("t").unwrap().unwrap();
    println!("{:?}", r.tree_stats(&tree).unwrap());
    let t = Instant::now();
    let mut sum = 0usize;
    for i in 0..n {
        if let Some(v) = r.get(&tree, format!("{i:016}")).unwrap() {
            sum += v.len();
        }
    }
    let el = t.elapsed();
    println!("read-seq {n}: {:.0} ops/s, touched {} pages", n as f64 / el.as_secs_f64(), r.pages_touched());
    assert!(rnd || sum == n as usize * 100);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
