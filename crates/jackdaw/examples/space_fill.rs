//! Where the bytes of a filled database go (space issue §1): fill a tree as the bench's
//! fill-rnd-tx does (random 16-digit decimal keys, 100-byte values, transactions of 100) or
//! fill-seq (`seq`: ascending keys, one transaction), close, reopen, and print the leaf fill
//! distribution and the data file broken down into live key and value bytes, page and entry
//! headers, unused room in leaves, branch pages, free pages and the rest.
//!
//! `cargo run --release -p jackdaw --example space_fill -- [N] [rnd|seq]` (N: pairs, default
//! 1,000,000). The database is left in `target/space_fill`.

use jackdaw::{Env, Options};

const VALUE_LEN: usize = 100;
const PER_TX: u64 = 100;

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k.copy_from_slice(format!("{i:016}").as_bytes());
    k
}

/// The keys of the run: random ones (xorshift, below 10^16) or ascending.
fn keys(n: u64, rnd: bool) -> Vec<[u8; 16]> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|i| {
            if !rnd {
                return key(i);
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key(x % 10_000_000_000_000_000)
        })
        .collect()
}

fn fill(env: &Env, keys: &[[u8; 16]], per_tx: u64) {
    let val = vec![7u8; VALUE_LEN];
    for chunk in keys.chunks(per_tx as usize) {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for k in chunk {
            tx.put(&t, k, &val).unwrap();
        }
        tx.commit().unwrap();
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let rnd = std::env::args().nth(2).as_deref() != Some("seq");
    let dir = std::path::PathBuf::from("target/space_fill");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default()).unwrap();
    fill(&env, &keys(n, rnd), if rnd { PER_TX } else { n });
    env.close().unwrap();
    let env = Env::open(&dir, Options::default()).unwrap();
    report(&env, if rnd { "random keys, transactions of 100" } else { "ascending keys, one transaction" });
}

fn report(env: &Env, what: &str) {
    let s = env.stats();
    let live = env.check().unwrap().live_bytes;
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    let entries = r.tree_stats(&t).unwrap().entries;
    let l = jackdaw::internals::tree_layout(&r, &t).unwrap();
    let ps = s.page_size as u64;
    let leaves: Vec<_> = l.pages.iter().filter(|p| p.level == 0).collect();
    let branches = l.pages.len() as u64 - leaves.len() as u64;
    let fills: Vec<f64> = leaves.iter().map(|p| p.used as f64 / p.capacity as f64).collect();
    let avg = fills.iter().sum::<f64>() / fills.len().max(1) as f64;
    println!("{what}: {entries} pairs, {} live key+value bytes, page size {ps}", mib(live));
    println!(
        "data file {} = {:.3}x live; {} leaves, {branches} branches, {} overflow pages, {} free pages",
        mib(s.data_file_bytes),
        s.data_file_bytes as f64 / live as f64,
        leaves.len(),
        l.overflow.iter().map(|c| c.pages).sum::<u64>(),
        s.free_pages
    );
    println!("leaf fill: average {:.1}%; by tenths:", avg * 100.0);
    let mut hist = [0u64; 10];
    for f in &fills {
        hist[((f * 10.0) as usize).min(9)] += 1;
    }
    for (i, h) in hist.iter().enumerate().filter(|(_, h)| **h > 0) {
        println!("  {:>3}-{:>3}%  {h:>8} leaves", i * 10, i * 10 + 10);
    }
    // The data file, byte by byte.
    let nl = leaves.len() as u64;
    let hdr = nl * (ps - leaves.first().map_or(0, |p| p.capacity as u64));
    let per_entry = entries * 7;
    let used: u64 = leaves.iter().map(|p| p.used as u64).sum();
    let unused = nl * ps - hdr - used;
    let other = s.data_file_bytes - nl * ps - branches * ps - s.free_pages * ps;
    let rows = [
        ("live keys and values", live),
        ("leaf page+node headers (48 B/leaf)", hdr),
        ("slots + entry headers (2+5 B/entry)", per_entry),
        ("other bytes in leaves (used - above)", used - per_entry - live),
        ("unused room in leaves", unused),
        ("branch pages", branches * ps),
        ("free pages", s.free_pages * ps),
        ("bitmaps, meta, catalog", other),
    ];
    for (name, b) in rows {
        println!("  {name:<40} {:>12}  {:>5.1}%", mib(b), b as f64 * 100.0 / s.data_file_bytes as f64);
    }
    let lmdb_like = nl * 16 + entries * 10;
    println!(
        "headers as LMDB lays them out (16 B/page, 2+8 B/entry) would be {} against {} here",
        mib(lmdb_like),
        mib(hdr + per_entry)
    );
}
