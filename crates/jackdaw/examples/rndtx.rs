use jackdaw::{Durability, Env, Options};
use std::time::Instant;
fn main() {
    let txs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let mode = std::env::args().nth(2).unwrap_or("sync".into());
    let d = match mode.as_str() {
        "buff" => Durability::Buffered,
        "none" => Durability::None,
        _ => Durability::Sync,
    };
    let dir = std::path::PathBuf::from("target/rndtx");
    let _ = std::fs::remove_dir_all(&dir);
    let mut o = Options::default().durability(d);
    if let Some(mb) = std::env::var("FLUSH_MB").ok().and_then(|s| s.parse::<u64>().ok()) {
        o = o.flush_threshold_bytes(mb << 20);
    }
    if let Some(n) = std::env::var("JOURNAL_KEPT").ok().and_then(|s| s.parse::<usize>().ok()) {
        o = o.journal_files_kept(n);
    }
    let env = Env::open(&dir, o).unwrap();
    let mut tx = env.write().unwrap();
    let tree = tx.create_tree("t").unwrap();
    tx.commit().unwrap();
    let mut x = 0x1234_5678_9abc_def1u64;
    let val = vec![7u8; 100];
    let mut lat = Vec::new();
    let t = Instant::now();
    let mut pages = 0;
    let mut bytes = 0;
    let mut putt = std::time::Duration::ZERO;
    let mut begint = std::time::Duration::ZERO;
    for _ in 0..txs {
        let b0 = Instant::now();
        let mut tx = env.write().unwrap();
        begint += b0.elapsed();
        let p0 = Instant::now();
        for _ in 0..100 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            tx.put(&tree, format!("{:016}", x % 10_000_000_000_000_000), &val).unwrap();
        }
        putt += p0.elapsed();
        let c = Instant::now();
        let st = tx.commit().unwrap();
        lat.push(c.elapsed());
        pages += st.pages;
        bytes += st.journal_bytes_written;
    }
    let el = t.elapsed();
    let total: std::time::Duration = lat.iter().sum();
    let stalls: Vec<_> = lat.iter().filter(|l| l.as_millis() >= 2).collect();
    println!(
        "commit time total {:?}; {} commits of 2 ms or more, {:?} in all",
        total,
        stalls.len(),
        stalls.iter().copied().sum::<std::time::Duration>()
    );
    lat.sort();
    println!("fill-rnd-tx {mode} {txs}x100: {:.0} ops/s; commit p50 {:?} p99 {:?} max {:?}; {:.1} pages/tx, {:.0} journal bytes/tx; {:?}", (txs*100) as f64 / el.as_secs_f64(), lat[lat.len()/2], lat[lat.len()*99/100], lat[lat.len()-1], pages as f64 / txs as f64, bytes as f64 / txs as f64, env.stats().syncs);
    println!(
        "flushes before explicit: {}; journal files created {} ({} prepared ahead), recycled {}",
        env.stats().flushes,
        env.stats().journal_files_created,
        env.stats().journal_files_prepared,
        env.stats().journal_files_recycled
    );
    println!("flush: {:?}", env.flush());
    let st = env.stats();
    println!(
        "engine writes per op: journal {:.0} B + data {:.0} B (flushed pages {}, written once {}), flushes {}",
        st.journal_bytes_written as f64 / (txs * 100) as f64,
        (st.flushed_pages + st.written_once_pages) as f64 * 4096.0 / (txs * 100) as f64,
        st.flushed_pages,
        st.written_once_pages,
        st.flushes
    );
    println!("begin total {:?}, put phase total {:?} ({:?}/put)", begint, putt, putt / (txs as u32 * 100));
}
