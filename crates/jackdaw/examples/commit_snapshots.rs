//! Commit cost against the number of open snapshots (faults issue §6): the p50 of small commits
//! with no reader, then with N read transactions held open (default 10,000; try 1000000).
//! `cargo run --release -p jackdaw --example commit_snapshots [-- N [COMMITS]]`
//!
//! Commits use `Durability::None`, so the figure is the engine's own work per commit, not the
//! device's latency; the background flusher is off (`Manual`) so nothing else runs.

use jackdaw::{Durability, Env, FlusherMode, Options};
use std::time::Instant;

fn p50_commit(env: &Env, tree: &jackdaw::Tree, commits: u32, base: u32) -> f64 {
    let mut t = Vec::with_capacity(commits as usize);
    for i in 0..commits {
        let mut tx = env.write().unwrap();
        for j in 0..10u32 {
            tx.put(tree, (base + i * 10 + j).to_be_bytes(), [7u8; 100]).unwrap();
        }
        let t0 = Instant::now();
        tx.commit().unwrap();
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let commits: u32 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let dir = std::env::temp_dir().join(format!("jackdaw-commit-snapshots-{}", std::process::id()));
    let opts = Options::default().durability(Durability::None).flusher(FlusherMode::Manual);
    let env = Env::open(&dir, opts)?;
    let mut tx = env.write()?;
    let tree = tx.create_tree("t")?;
    tx.commit()?;
    let none = p50_commit(&env, &tree, commits, 0);
    let snaps: Vec<_> = (0..n).map(|_| env.read()).collect::<Result<_, _>>()?;
    let held = p50_commit(&env, &tree, commits, commits * 10);
    println!(
        "commit p50: {none:.1} us with 0 snapshots, {held:.1} us with {} open snapshots: {:.2}x",
        snaps.len(),
        held / none
    );
    drop(snaps);
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
