//! The benchmark: replicated durable writes per second and commit latency (p50/p99) with 1, 16
//! and 64 concurrent clients on a 3-process loopback cluster, beside one Jackdaw environment's
//! durable `write_batch` throughput with as many threads, in the same run.

use crate::cluster::Cluster;
use crate::Request;
use jackdaw::{Env, Options, WriteBatch};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Row {
    ops: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// One environment, `threads` threads each committing one-put `write_batch`es (durable: the
/// default `Durability::Sync`) for `secs`.
fn single_node(dir: &std::path::Path, threads: usize, secs: u64) -> anyhow::Result<Row> {
    let env = Env::open(dir, Options::default())?;
    let mut tx = env.write()?;
    let t = tx.create_tree("kv")?;
    tx.commit()?;
    let stop = Arc::new(AtomicBool::new(false));
    let lats = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut hs = Vec::new();
    for th in 0..threads {
        let (env, t, stop, lats, count) = (env.clone(), t.clone(), stop.clone(), lats.clone(), count.clone());
        hs.push(std::thread::spawn(move || -> jackdaw::Result<()> {
            let mut mine = Vec::new();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut b = WriteBatch::new();
                b.put(&t, format!("t{th:03}-{i:010}").into_bytes(), format!("value-{i}").into_bytes());
                let s = Instant::now();
                env.write_batch(b)?;
                mine.push(s.elapsed());
                i += 1;
            }
            count.fetch_add(i, Ordering::Relaxed);
            lats.lock().unwrap_or_else(|p| p.into_inner()).extend(mine);
            Ok(())
        }));
    }
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().map_err(|_| anyhow::anyhow!("bench thread panicked"))??;
    }
    let el = start.elapsed().as_secs_f64();
    env.close()?;
    let mut l = std::mem::take(&mut *lats.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(Row { ops: count.load(Ordering::Relaxed) as f64 / el, p50_ms: pct(&mut l, 0.5), p99_ms: pct(&mut l, 0.99) })
}

async fn replicated(c: &Cluster, clients: usize, secs: u64, round: usize) -> anyhow::Result<Row> {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut hs = Vec::new();
    for w in 0..clients {
        let (client, stop) = (c.client.clone(), stop.clone());
        hs.push(tokio::spawn(async move {
            let mut lats = Vec::new();
            let mut errors = 0u64;
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let req = Request::Put { key: format!("r{round}-c{w:03}-{i:010}"), value: format!("value-{i}") };
                let s = Instant::now();
                match client.write(&req, Duration::from_secs(10)).await {
                    Ok(_) => lats.push(s.elapsed()),
                    Err(_) => errors += 1,
                }
                i += 1;
            }
            (lats, errors)
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut errors = 0;
    for h in hs {
        let (l, e) = h.await?;
        all.extend(l);
        errors += e;
    }
    anyhow::ensure!(errors == 0, "{errors} replicated writes failed");
    let el = start.elapsed().as_secs_f64();
    Ok(Row { ops: all.len() as f64 / el, p50_ms: pct(&mut all, 0.5), p99_ms: pct(&mut all, 0.99) })
}

/// Run the benchmark and print its table.
pub async fn run(secs: u64, clients: &[usize], dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(secs >= 1 && !clients.is_empty() && clients.iter().all(|c| *c >= 1), "bad --seconds or --clients");
    let (_tmp, dir) = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            (None, d)
        }
        None => {
            let t = tempfile::Builder::new().prefix("jackdaw-raft-bench").tempdir()?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    let exe = std::env::current_exe()?;
    let mut c = Cluster::start(&exe, &dir.join("cluster"), 3, 100_000).await.map_err(anyhow::Error::msg)?;
    // Warm up (connections, first leader entries).
    replicated(&c, 4, 1, 0).await?;
    let mut rep = Vec::new();
    for (round, &n) in clients.iter().enumerate() {
        let r = replicated(&c, n, secs, round + 1).await?;
        eprintln!("replicated, {n} clients: {:.0} writes/s", r.ops);
        for (i, st) in c.statuses().await {
            eprintln!(
                "  node{}: {} appends, {} syncs, last log {:?}",
                i + 1,
                st.log_appends,
                st.log_syncs,
                st.last_log_index
            );
        }
        rep.push((n, r));
    }
    c.stop();
    drop(c);
    let mut single = Vec::new();
    for (i, &n) in clients.iter().enumerate() {
        let d = dir.join(format!("single-{i}"));
        let r = tokio::task::spawn_blocking(move || single_node(&d, n, secs)).await??;
        eprintln!("single node, {n} threads: {:.0} writes/s", r.ops);
        single.push((n, r));
    }
    println!("| clients | replicated writes/s | p50 ms | p99 ms | single node write_batch/s (same threads) | p50 ms | p99 ms | replicated ÷ single |");
    println!("|---|---|---|---|---|---|---|---|");
    for ((n, r), (_, s)) in rep.iter().zip(&single) {
        println!(
            "| {n} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2} |",
            r.ops,
            r.p50_ms,
            r.p99_ms,
            s.ops,
            s.p50_ms,
            s.p99_ms,
            r.ops / s.ops
        );
    }
    let (lo, hi) = (&rep[0], &rep[rep.len() - 1]);
    let best_single = single.iter().map(|(_, s)| s.ops).fold(0.0, f64::max);
    println!(
        "group commit: {} clients ÷ {} client = {:.1}× (floor 10×); {} clients ÷ best single-node write_batch = {:.2} (floor 0.3)",
        hi.0,
        lo.0,
        hi.1.ops / lo.1.ops,
        hi.0,
        hi.1.ops / best_single
    );
    Ok(ExitCode::SUCCESS)
}
