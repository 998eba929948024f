//! fill-seq-tx shape: transactions of 100 sequential 16-byte keys with 128-byte values, durable.
//! Prints where the time goes. `cargo run --release -p jackdaw --example seqtx [-- TXS]`
use jackdaw::{Env, Options};
use std::time::{Duration, Instant};
fn main() {
    let txs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let dir = std::path::PathBuf::from("target/seqtx");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default()).unwrap();
    let mut tx = env.write().unwrap();
    let tree = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let val = [9u8; 128];
    let (mut put, mut commit) = (Duration::ZERO, Duration::ZERO);
    let mut lat = Vec::with_capacity(txs as usize);
    let t = Instant::now();
    let mut key = [0u8; 16];
    for i in 0..txs {
        let p = Instant::now();
        let mut tx = env.write().unwrap();
        for j in 0..100u64 {
            let n = i * 100 + j;
            let s = format!("{n:016}");
            key.copy_from_slice(s.as_bytes());
            tx.put(&tree, key, val).unwrap();
        }
        put += p.elapsed();
        let c = Instant::now();
        tx.commit().unwrap();
        let e = c.elapsed();
        commit += e;
        lat.push(e);
        if i % 20000 == 19999 {
            println!(
                "{} tx: {:.0} ops/s so far; put {:?} commit {:?}; {:?}",
                i + 1,
                (i + 1) as f64 * 100.0 / t.elapsed().as_secs_f64(),
                put,
                commit,
                env.stats().syncs.iter().filter(|(_, n)| *n > 0).collect::<Vec<_>>()
            );
        }
    }
    lat.sort();
    let el = t.elapsed();
    println!(
        "{txs} tx: {:.0} ops/s; put phase {:?}, commit {:?}; commit p50 {:?} p90 {:?} p99 {:?} max {:?}",
        (txs * 100) as f64 / el.as_secs_f64(),
        put,
        commit,
        lat[lat.len() / 2],
        lat[lat.len() * 9 / 10],
        lat[lat.len() * 99 / 100],
        lat[lat.len() - 1]
    );
}
