//! Median latency of durable commits of 1 and 100 pages next to the raw disk, measured in
//! alternating rounds so that both see the same disk weather.
//! `cargo run --release -p jackdaw --example commit_latency [-- ROUNDS]`
use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{Env, Options};
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(500);
    let dir = std::env::current_dir()?.join("target").join(format!("jackdaw-commit-latency-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let raw_path = dir.join("raw");
    let raw = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&raw_path)?;
    raw.set_len(64 << 20)?;
    raw.write_all_at(&vec![0u8; 64 << 20], 0)?;
    raw.sync_all()?;
    let direct = OpenOptions::new().write(true).custom_flags(0o40000 | 0o10000).open(&raw_path)?;
    let mut abuf = vec![0u8; 4096 * 17];
    let off = (4096 - abuf.as_ptr() as usize % 4096) % 4096;
    let env = Env::open(dir.join("db"), Options::default())?;
    let mut tx = env.write()?;
    let pages: Vec<u64> = (0..100).map(|_| tx.alloc_page(PageKind::Raw)).collect::<Result<_, _>>()?;
    tx.commit()?;
    let (mut t_raw4, mut t_fsync4, mut t_raw16, mut t_empty, mut t_one, mut t_hundred) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut pos = 0u64;
    let mut bytes100 = 0;
    for r in 0..rounds {
        let b = &mut abuf[off..off + 4096];
        b[0] = r as u8;
        let s = Instant::now();
        direct.write_all_at(b, pos)?;
        t_raw4.push(s.elapsed());
        pos = (pos + 4096) % (60 << 20);
        let s = Instant::now();
        raw.write_all_at(&abuf[off..off + 4096], pos)?;
        raw.sync_data()?;
        t_fsync4.push(s.elapsed());
        pos = (pos + 4096) % (60 << 20);
        let s = Instant::now();
        direct.write_all_at(&abuf[off..off + 16384], pos)?;
        t_raw16.push(s.elapsed());
        pos = (pos + 16384) % (60 << 20);

        let tx = env.write()?;
        let s = Instant::now();
        tx.commit()?;
        t_empty.push(s.elapsed());

        let mut tx = env.write()?;
        tx.page_mut(pages[r % 100])?[PAGE_HEADER..PAGE_HEADER + 8].copy_from_slice(&(r as u64).to_le_bytes());
        let s = Instant::now();
        tx.commit()?;
        t_one.push(s.elapsed());

        let mut tx = env.write()?;
        for (i, p) in pages.iter().enumerate() {
            let at = PAGE_HEADER + ((r * 131 + i * 17) % 3900);
            tx.page_mut(*p)?[at..at + 100].fill((r + i) as u8);
        }
        let s = Instant::now();
        bytes100 = tx.commit()?.journal_bytes_written;
        t_hundred.push(s.elapsed());
    }
    println!("medians of {rounds} alternating rounds, journal I/O {}", env.stats().journal_io);
    println!("raw disk: 4 KiB O_DIRECT|O_DSYNC write {:.0} µs, 4 KiB write + fdatasync {:.0} µs, 16 KiB O_DIRECT|O_DSYNC write {:.0} µs", median(t_raw4), median(t_fsync4), median(t_raw16));
    println!("empty commit (writes nothing) {:.1} µs", median(t_empty));
    println!("1-page durable commit {:.0} µs (4096 journal bytes)", median(t_one));
    println!("100-page durable commit {:.0} µs ({bytes100} journal bytes)", median(t_hundred));
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
