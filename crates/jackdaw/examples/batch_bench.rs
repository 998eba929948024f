//! Durable throughput of write batches from 1, 2, 4, 8 and 16 threads, each submitting batches of
//! 100 puts (16-byte keys, 100-byte values), with journal writes per second: group commit at
//! work. `cargo run --release -p jackdaw --example batch_bench [-- SECONDS_PER_ROW]`
use jackdaw::{Env, Options, WriteBatch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let dir = std::env::current_dir()?.join("target").join(format!("jackdaw-batch-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default())?;
    let mut tx = env.write()?;
    let t = tx.create_tree("t")?;
    tx.commit()?;
    println!("durable (Sync) write batches of 100 puts, {secs} s per row, journal I/O {}", env.stats().journal_io);
    println!(
        "{:>7} {:>12} {:>12} {:>16} {:>16}",
        "threads", "batches/s", "puts/s", "journal writes/s", "batches/write"
    );
    for threads in [1u64, 2, 4, 8, 16] {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let w0 = env.stats().journal_writes;
        let t0 = Instant::now();
        let hs: Vec<_> = (0..threads)
            .map(|th| {
                let (env, stop, count, t) = (env.clone(), stop.clone(), count.clone(), t.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    let val = [7u8; 100];
                    while !stop.load(Ordering::Relaxed) {
                        let mut b = WriteBatch::new();
                        for i in 0..100u64 {
                            b.put(&t, format!("{:04}{:012}", threads * 100 + th, n * 100 + i), val);
                        }
                        env.write_batch(b).expect("batch");
                        n += 1;
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            h.join().expect("thread");
        }
        let el = t0.elapsed().as_secs_f64();
        let b = count.load(Ordering::Relaxed) as f64;
        let w = (env.stats().journal_writes - w0) as f64;
        println!("{threads:>7} {:>12.0} {:>12.0} {:>16.0} {:>16.1}", b / el, b * 100.0 / el, w / el, b / w);
    }
    env.check().and_then(jackdaw::CheckReport::into_result)?;
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
