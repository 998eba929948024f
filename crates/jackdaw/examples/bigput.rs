//! Large values one per durable transaction (the shape of WORKLOADS.md `large-values`, 8 MiB part):
//! prints put and commit time per value. `cargo run --release -p jackdaw --example bigput -- [count] [MiB]`
use jackdaw::{Env, Options};
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mib: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let dir = std::path::PathBuf::from("target/bigput");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default()).unwrap();
    let mut tx = env.write().unwrap();
    let tree = tx.create_tree("v").unwrap();
    tx.commit().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let val: Vec<u8> = (0..mib << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let (mut put, mut commit) = (Duration::ZERO, Duration::ZERO);
    let t = Instant::now();
    for i in 0..n {
        let mut tx = env.write().unwrap();
        let p = Instant::now();
        tx.put(&tree, format!("{i:016}"), &val).unwrap();
        put += p.elapsed();
        let c = Instant::now();
        tx.commit().unwrap();
        commit += c.elapsed();
    }
    let el = t.elapsed();
    println!(
        "{n} x {mib} MiB: {:.0} MB/s; put {:?}/value, commit {:?}/value",
        (n * (mib << 20)) as f64 / el.as_secs_f64() / 1e6,
        put / n as u32,
        commit / n as u32
    );
}
