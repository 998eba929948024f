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
use std::time::Instant;

fn main() {
    let per_thread: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
    let max_threads: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let threads: Vec<usize> =
        std::iter::successors(Some(1usize), |t| Some(t * 2)).take_while(|t| *t <= max_threads).collect();
    let dir = std::env::temp_dir().join(format!("jackdaw-read-txn-scaling-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("jackdaw")).unwrap();
    std::fs::create_dir_all(dir.join("lmdb")).unwrap();
    let keys: Vec<[u8; 8]> = (0..1000u64).map(u64::to_be_bytes).collect();
    let key = |i: u64, j: usize| &keys[((i * 7 + j as u64) % keys.len() as u64) as usize];

    let env = jackdaw::Env::open(dir.join("jackdaw"), jackdaw::Options::default()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in &keys {
        tx.put(&t, k, [3u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    env.flush().unwrap();

    let mut o = heed::EnvOpenOptions::new();
    o.map_size(1 << 30).max_readers(256);
    // SAFETY: the directory is this process's alone; NO_SYNC trades durability only.
    let lmdb = unsafe {
        o.flags(heed::EnvFlags::NO_SYNC);
        o.open(dir.join("lmdb"))
    }
    .unwrap();
    let mut w = lmdb.write_txn().unwrap();
    let db: heed::Database<heed::types::Bytes, heed::types::Bytes> = lmdb.create_database(&mut w, None).unwrap();
    for k in &keys {
        db.put(&mut w, k, &[3u8; 100]).unwrap();
    }
    w.commit().unwrap();

    println!("{:>7}  {:>14}  {:>14}  {:>8}", "threads", "jackdaw txn/s", "lmdb txn/s", "ratio");
    for &n in &threads {
        let run = |one: &(dyn Fn(u64, usize, &mut Vec<u8>) + Sync)| {
            let s = Instant::now();
            std::thread::scope(|sc| {
                for j in 0..n {
                    sc.spawn(move || {
                        let mut out = Vec::with_capacity(128);
                        for i in 0..per_thread {
                            one(i, j, &mut out);
                        }
                    });
                }
            });
            (per_thread * n as u64) as f64 / s.elapsed().as_secs_f64()
        };
        let j = run(&|i, th, out| {
            let r = env.read().unwrap();
            assert!(r.get_into(&t, key(i, th), out).unwrap());
        });
        let l = run(&|i, th, out| {
            let r = lmdb.read_txn().unwrap();
            let v = db.get(&r, key(i, th)).unwrap().unwrap();
            out.clear();
            out.extend_from_slice(v);
        });
        println!("{n:>7}  {:>12.0} k  {:>12.0} k  {:>7.2}×", j / 1e3, l / 1e3, j / l);
    }
    env.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
