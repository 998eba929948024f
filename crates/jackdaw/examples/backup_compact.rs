//! The figures of the backup issue, printed (not a timed test):
//!
//! - `compact`: fill N random keys (16 B keys, 100 B values; N = 1,000,000 by default), delete
//!   90%, back up with `.compact(true)`; prints the source's data file, the compacted copy
//!   (data file + journal, after close) and a sequential load of the same survivors in one
//!   transaction (data file + journal, after close), and the ratio copy / sequential load.
//! - `hot`: fill a database of about SIZE_MB (default 1024) MiB, start a writer thread that
//!   commits continuously, take `backup_to` (then a compacted one); prints the writer's commits and
//!   errors during each backup, the page-table bytes pinned at the peak, and the times.
//!
//! `cargo run --release -p jackdaw --example backup_compact -- compact [N]`
//! `cargo run --release -p jackdaw --example backup_compact -- hot [SIZE_MB]`
//! Runs in `target/backup-example` (removed at the end).
use jackdaw::{BackupOptions, Env, Options};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn dir_bytes(dir: &Path) -> u64 {
    let mut n = std::fs::metadata(dir.join("data.jdb")).map(|m| m.len()).unwrap_or(0);
    if let Ok(rd) = std::fs::read_dir(dir.join("journal")) {
        for e in rd.flatten() {
            n += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    n
}

fn rng(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn compact(root: &Path, n: u64) {
    let mut next = rng(0x9E37_79B9_7F4A_7C15);
    let keys: Vec<[u8; 16]> = (0..n)
        .map(|_| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&next().to_be_bytes());
            k[8..].copy_from_slice(&next().to_be_bytes());
            k
        })
        .collect();
    let value = [7u8; 100];
    let env = Env::open(root.join("src"), Options::default()).unwrap();
    for chunk in keys.chunks(50_000) {
        let mut tx = env.write().unwrap();
        let t = match tx.open_tree("t").unwrap() {
            Some(t) => t,
            None => tx.create_tree("t").unwrap(),
        };
        for k in chunk {
            tx.put(&t, k, value).unwrap();
        }
        tx.commit().unwrap();
    }
    for chunk in keys.chunks(50_000).enumerate() {
        let mut tx = env.write().unwrap();
        let t = tx.open_tree("t").unwrap().unwrap();
        for (i, k) in chunk.1.iter().enumerate() {
            if (chunk.0 * 50_000 + i) % 10 != 0 {
                tx.delete(&t, k).unwrap();
            }
        }
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    let src = env.stats();
    let t0 = Instant::now();
    let st = env.backup_to_with(root.join("copy"), BackupOptions::default().compact(true)).unwrap();
    let took = t0.elapsed();
    let copy = dir_bytes(&root.join("copy"));
    let mut survivors: Vec<[u8; 16]> = keys.iter().step_by(10).copied().collect();
    survivors.sort();
    survivors.dedup();
    let seq = Env::open(root.join("seq"), Options::default()).unwrap();
    let mut tx = seq.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in &survivors {
        tx.put(&t, k, value).unwrap();
    }
    tx.commit().unwrap();
    let seq_pages = seq.stats().pages_in_use;
    seq.close().unwrap();
    drop(seq);
    let seq_bytes = dir_bytes(&root.join("seq"));
    let c = Env::open(root.join("copy"), Options::default()).unwrap();
    let copy_pages = c.stats().pages_in_use;
    c.check().unwrap().into_result().unwrap();
    println!("compact: {n} random keys (16 B / 100 B), 90% deleted, {} survivors", survivors.len());
    println!(
        "  source data file          {:>12} B ({} pages in use, {} free)",
        src.data_file_bytes, src.pages_in_use, src.free_pages
    );
    println!("  compacted copy            {copy:>12} B ({copy_pages} pages in use; data file + journal after close; took {took:.2?}, txid {})", st.txid);
    println!(
        "  sequential load, one txn  {seq_bytes:>12} B ({seq_pages} pages in use; data file + journal after close)"
    );
    println!("  copy / sequential load    {:.3} (target <= 1.05)", copy as f64 / seq_bytes as f64);
}

fn hot(root: &Path, size_mb: u64) {
    let env = Env::open(root.join("src"), Options::default()).unwrap();
    let value = vec![5u8; 1000];
    let n = size_mb * 1024 * 1024 / 1100;
    let mut next = rng(42);
    let t0 = Instant::now();
    let mut done = 0;
    while done < n {
        let mut tx = env.write().unwrap();
        let t = match tx.open_tree("bulk").unwrap() {
            Some(t) => t,
            None => tx.create_tree("bulk").unwrap(),
        };
        for _ in 0..100_000.min(n - done) {
            tx.put(&t, next().to_be_bytes(), &value).unwrap();
            done += 1;
        }
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    println!("hot: filled {} MiB ({n} values of 1000 B) in {:.1?}", env.stats().data_file_bytes >> 20, t0.elapsed());
    // None: the same writer for 3 s without a backup (the control: how many page versions it
    // keeps in memory anyway, before the flusher writes them out).
    for mode in [None, Some(false), Some(true)] {
        let compact = mode == Some(true);
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let peak = Arc::new(AtomicU64::new(0));
        let writer = {
            let (env, stop, commits, peak) = (env.clone(), stop.clone(), commits.clone(), peak.clone());
            std::thread::spawn(move || {
                let mut next = rng(7);
                let mut errors = 0u64;
                let mut first_error = None;
                while !stop.load(Ordering::Relaxed) {
                    let r = (|| {
                        let mut tx = env.write()?;
                        let t = tx.open_tree("bulk")?.unwrap();
                        for _ in 0..10 {
                            tx.put(&t, next().to_be_bytes(), [9u8; 100])?;
                        }
                        tx.commit()
                    })();
                    match r {
                        Ok(_) => {
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert(e.to_string());
                        }
                    }
                    peak.fetch_max(env.stats().scratch_bytes, Ordering::Relaxed);
                }
                (errors, first_error)
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let dest = root.join(if compact { "hot-packed" } else { "hot-copy" });
        let t0 = Instant::now();
        let c0 = commits.load(Ordering::Relaxed);
        if mode.is_none() {
            peak.store(0, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_secs(3));
            let during = commits.load(Ordering::Relaxed) - c0;
            stop.store(true, Ordering::Relaxed);
            let (errors, _) = writer.join().unwrap();
            println!(
                "  no backup (3 s): writer committed {during} transactions, {errors} errors; peak pinned page-table bytes {} MiB",
                peak.load(Ordering::Relaxed) >> 20
            );
            continue;
        }
        peak.store(0, Ordering::Relaxed);
        let r = env.backup_to_with(&dest, BackupOptions::default().compact(compact));
        let took = t0.elapsed();
        let during = commits.load(Ordering::Relaxed) - c0;
        stop.store(true, Ordering::Relaxed);
        let (errors, first) = writer.join().unwrap();
        println!(
            "  backup{}: {:?} in {took:.2?}; writer committed {during} transactions during it, {errors} errors{}; peak pinned page-table bytes {} MiB",
            if compact { " --compact" } else { "" },
            r.as_ref().map(|s| (s.txid.get(), s.bytes)),
            first.map(|e| format!(" (first: {e})")).unwrap_or_default(),
            peak.load(Ordering::Relaxed) >> 20
        );
        let c = Env::open(&dest, Options::default()).unwrap();
        let clean = c.check().unwrap().is_clean();
        println!("    copy opens, check clean: {clean}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = std::path::PathBuf::from("target/backup-example");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    match args.get(1).map(String::as_str) {
        Some("hot") => hot(&root, args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1024)),
        _ => compact(&root, args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000)),
    }
    let _ = std::fs::remove_dir_all(&root);
}
