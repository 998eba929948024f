//! Large values one per durable transaction (the shape of WORKLOADS.md `large-values`, 8 MiB part):
//! prints put and commit time per value. `cargo run --release -p jackdaw --example bigput -- [count] [KiB]
//! [values per transaction]` (default 10 values of 8192 KiB, one per transaction; `1000 64 10` is the
//! 64 KiB part).
use jackdaw::{Env, Options};
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let kib: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(8192);
    let per: usize = std::env::args().nth(3).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let dir = std::path::PathBuf::from("target/bigput");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default()).unwrap();
    let mut tx = env.write().unwrap();
    let tree = tx.create_tree("v").unwrap();
    tx.commit().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let val: Vec<u8> = (0..kib << 10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let (mut put, mut commit) = (Duration::ZERO, Duration::ZERO);
    let t = Instant::now();
    for t in 0..n.div_ceil(per) {
        let mut tx = env.write().unwrap();
        let p = Instant::now();
        for i in t * per..((t + 1) * per).min(n) {
            tx.put(&tree, format!("{i:016}"), &val).unwrap();
        }
        put += p.elapsed();
        let c = Instant::now();
        tx.commit().unwrap();
        commit += c.elapsed();
    }
    let el = t.elapsed();
    println!(
        "{n} x {kib} KiB, {per} a transaction: {:.0} MB/s; put {:?}/value, commit {:?}/transaction",
        (n * (kib << 10)) as f64 / el.as_secs_f64() / 1e6,
        put / n as u32,
        commit / n.div_ceil(per) as u32
    );
}
