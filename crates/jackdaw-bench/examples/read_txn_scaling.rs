//! Read transactions per second on 1..N threads, Jackdaw and LMDB side by side in one process:
//! `cargo run --release -p jackdaw-bench --example read_txn_scaling [-- TXNS_PER_THREAD [MAX_THREADS]]`
//!
//! Each transaction is YCSB's read shape without its record decoding: begin a read transaction,
//! copy one 100-byte value out of a 1,000-key tree (cache-resident, flushed to the data file),
//! end it. What it isolates is what a read transaction's begin and end cost when threads run
//! them at once: a registry or a reference count that every thread writes moves cache lines
//! between cores at every transaction, and the throughput stops growing with the threads (one
//! readers mutex made Jackdaw ~3 M/s at one thread and at two; LMDB, whose readers write only
//! their own slot, doubled). Figures are whole-process on a shared machine: compare the ratio of
//! the two engines in the same run, not runs with each other.
use anyhow::{bail, ensure, Context, Result};
use std::time::Instant;

/// The `n`th argument as a number, `default` when absent; an error naming it when not a number.
fn arg(n: usize, name: &str, default: u64) -> Result<u64> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(s) => s.parse().with_context(|| format!("{name} must be a whole number, not {s:?}")),
    }
}

/// One client thread's transactions: `one(i, thread, buffer)` for `i` in `0..per_thread`.
type Txn<'a> = dyn Fn(u64, usize, &mut Vec<u8>) -> Result<()> + Sync + 'a;

/// Transactions per second of `n` threads running `per_thread` transactions each.
fn run(n: usize, per_thread: u64, one: &Txn<'_>) -> Result<f64> {
    let s = Instant::now();
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .map(|j| {
                sc.spawn(move || -> Result<()> {
                    let mut out = Vec::with_capacity(128);
                    for i in 0..per_thread {
                        one(i, j, &mut out)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| match h.join() {
            Ok(r) => r,
            Err(_) => bail!("a client thread panicked"),
        })
    })?;
    Ok((per_thread * n as u64) as f64 / s.elapsed().as_secs_f64())
}

fn main() -> Result<()> {
    let per_thread = arg(1, "TXNS_PER_THREAD", 2_000_000)?;
    let max_threads = arg(2, "MAX_THREADS", 2)? as usize;
    ensure!(per_thread > 0 && max_threads > 0, "TXNS_PER_THREAD and MAX_THREADS must be at least 1");
    let threads: Vec<usize> =
        std::iter::successors(Some(1usize), |t| Some(t * 2)).take_while(|t| *t <= max_threads).collect();
    let dir = std::env::temp_dir().join(format!("jackdaw-read-txn-scaling-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["jackdaw", "lmdb"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("create {}", dir.join(sub).display()))?;
    }
    let r = measure(&dir, per_thread, &threads);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn measure(dir: &std::path::Path, per_thread: u64, threads: &[usize]) -> Result<()> {
    let keys: Vec<[u8; 8]> = (0..1000u64).map(u64::to_be_bytes).collect();
    let key = |i: u64, j: usize| &keys[((i * 7 + j as u64) % keys.len() as u64) as usize];

    let env = jackdaw::Env::open(dir.join("jackdaw"), jackdaw::Options::default())?;
    let mut tx = env.write()?;
    let t = tx.create_tree("t")?;
    for k in &keys {
        tx.put(&t, k, [3u8; 100])?;
    }
    tx.commit()?;
    env.flush()?;

    let mut o = heed::EnvOpenOptions::new();
    o.map_size(1 << 30).max_readers(256);
    // SAFETY: the directory is this process's alone; NO_SYNC trades durability only.
    let lmdb = unsafe {
        o.flags(heed::EnvFlags::NO_SYNC);
        o.open(dir.join("lmdb"))
    }?;
    let mut w = lmdb.write_txn()?;
    let db: heed::Database<heed::types::Bytes, heed::types::Bytes> = lmdb.create_database(&mut w, None)?;
    for k in &keys {
        db.put(&mut w, k, &[3u8; 100])?;
    }
    w.commit()?;

    println!("{:>7}  {:>14}  {:>14}  {:>8}", "threads", "jackdaw txn/s", "lmdb txn/s", "ratio");
    for &n in threads {
        let j = run(n, per_thread, &|i, th, out| {
            let r = env.read()?;
            ensure!(r.get_into(&t, key(i, th), out)?, "jackdaw: a key written is missing");
            Ok(())
        })?;
        let l = run(n, per_thread, &|i, th, out| {
            let r = lmdb.read_txn()?;
            let v = db.get(&r, key(i, th))?.context("lmdb: a key written is missing")?;
            out.clear();
            out.extend_from_slice(v);
            Ok(())
        })?;
        println!("{n:>7}  {:>12.0} k  {:>12.0} k  {:>7.2}×", j / 1e3, l / 1e3, j / l);
    }
    env.close()?;
    Ok(())
}
