//! Peak memory of one huge rewrite transaction (faults issue §5): loads `MiB` of 1,000-byte random
//! values in transactions of 8 MiB, then rewrites every one of them in a single transaction and
//! commits it, and prints the process's peak resident memory (`VmHWM`, reset before the rewrite
//! through `/proc/self/clear_refs`) against the bound of 1.5 × the transaction's dirty
//! bytes + 64 MiB.
//!
//! With `crash` the process aborts right after the commit (the record unflushed); `recover`
//! then opens that directory (replaying the record) and prints the peak memory of the recovery.
//!
//! `cargo run --release -p jackdaw --example rewrite_memory -- [MiB] [dir] [crash|recover]`
use jackdaw::{Durability, Env, Options};

fn status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

fn noise(x: &mut u64, out: &mut [u8]) {
    for b in out {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *b = *x as u8;
    }
}

fn main() {
    let mib: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(256);
    let dir = std::path::PathBuf::from(std::env::args().nth(2).unwrap_or_else(|| "target/rewrite_memory".into()));
    let mode = std::env::args().nth(3).unwrap_or_default();
    if mode == "recover" {
        let t0 = std::time::Instant::now();
        let env = Env::open(&dir, Options::default()).unwrap();
        let s = env.stats();
        println!(
            "recovery of the rewrite: {:.1} s, peak RSS {} MiB ({} MiB anonymous, {} MiB of mapped file after it), data file {} MiB",
            t0.elapsed().as_secs_f64(),
            status("VmHWM:") >> 20,
            status("RssAnon:") >> 20,
            status("RssFile:") >> 20,
            s.data_file_bytes >> 20
        );
        env.close().unwrap();
        return;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default().durability(Durability::Sync)).unwrap();
    let n = (mib << 20) / 1000;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut v = vec![0u8; 1000];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..n {
        noise(&mut x, &mut v);
        tx.put(&t, i.to_be_bytes(), &v).unwrap();
        if i % 8192 == 8191 {
            tx.commit().unwrap();
            tx = env.write().unwrap();
        }
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    let before = status("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    // Anonymous memory (heap: dirty pages, payloads) has no high-water mark of its own: sampled.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let anon_peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let (stop, anon_peak) = (stop.clone(), anon_peak.clone());
        std::thread::spawn(move || {
            use std::sync::atomic::Ordering::Relaxed;
            while !stop.load(Relaxed) {
                anon_peak.fetch_max(status("RssAnon:"), Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let t0 = std::time::Instant::now();
    let mut tx = env.write().unwrap();
    for i in 0..n {
        noise(&mut x, &mut v);
        if let Err(e) = tx.put(&t, i.to_be_bytes(), &v) {
            // Too big for one record (TransactionTooLarge): how much it cost before it failed.
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = sampler.join();
            println!(
                "rewrite of {mib} MiB refused at value {i} of {n} after {:.1} s: {e}; peak RSS {} MiB, peak anonymous (sampled) {} MiB",
                t0.elapsed().as_secs_f64(),
                status("VmHWM:") >> 20,
                anon_peak.load(std::sync::atomic::Ordering::Relaxed) >> 20
            );
            return;
        }
    }
    let stats = tx.commit().unwrap();
    let peak = status("VmHWM:");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = sampler.join();
    let anon_peak = anon_peak.load(std::sync::atomic::Ordering::Relaxed);
    if mode == "crash" {
        println!("committed {} pages; aborting before any flush", stats.pages);
        std::process::abort();
    }
    let (anon, file) = (status("RssAnon:"), status("RssFile:"));
    let dirty = stats.pages as u64 * env.stats().page_size as u64;
    let bound = dirty + dirty / 2 + (64 << 20);
    println!(
        "rewrite of {mib} MiB ({n} values) in one transaction: {} pages dirty ({} MiB), journal {} MiB written, {:.1} s",
        stats.pages,
        dirty >> 20,
        stats.journal_bytes_written >> 20,
        t0.elapsed().as_secs_f64()
    );
    println!(
        "peak RSS {} MiB, peak anonymous (sampled every 2 ms) {} MiB (RSS before the rewrite {} MiB; after the commit {} MiB anonymous, {} MiB of mapped file); \
         bound 1.5 x dirty + 64 MiB = {} MiB: peak RSS {:.2} x the bound, peak anonymous {:.2} x",
        peak >> 20,
        anon_peak >> 20,
        before >> 20,
        anon >> 20,
        file >> 20,
        bound >> 20,
        peak as f64 / bound as f64,
        anon_peak as f64 / bound as f64
    );
    env.close().unwrap();
}
