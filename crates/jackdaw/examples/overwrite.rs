//! One large value overwritten again and again, a durable transaction each, with the background
//! flusher: prints the data file's size and high-water mark, and the pages written in place of
//! free pages (`Stats::written_once_reused_pages`).
//! `cargo run --release -p jackdaw --example overwrite -- [count] [MiB]` (default 20 × 20 MiB).
use jackdaw::{Env, Options};
fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    let mib: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = std::path::PathBuf::from("target/overwrite");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("v").unwrap();
    tx.commit().unwrap();
    let t0 = std::time::Instant::now();
    for i in 0..n {
        let v = vec![i as u8; mib << 20];
        let mut tx = env.write().unwrap();
        tx.put(&t, b"blob", &v).unwrap();
        tx.commit().unwrap();
    }
    let s = env.stats();
    println!(
        "{n} overwrites of {mib} MiB in {:?}: data file {} MiB, high-water {} MiB, reused pages {}, flushes {}",
        t0.elapsed(),
        s.data_file_bytes >> 20,
        (s.next_page * s.page_size as u64) >> 20,
        s.written_once_reused_pages,
        s.flushes
    );
}
