//! The storage core at work (raw pages, no trees): creates a database on the real disk, commits, reads, reopens, and
//! prints what it did and how fast, next to the raw latency of the same disk.
//!
//! `cargo run --release -p jackdaw --example demo [-- DIR]`

use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{Durability, Env, FlusherMode, Options};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

/// Raw disk: 4 KiB write + fdatasync, and 4 KiB O_DIRECT|O_DSYNC write, medians of `n`.
fn disk_latency(dir: &Path, n: usize) -> (Duration, Option<Duration>) {
    let p = dir.join("disk-probe");
    let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
    f.set_len(4096 * 64).unwrap();
    f.sync_all().unwrap();
    let buf = vec![7u8; 4096];
    let mut t = Vec::new();
    for i in 0..n {
        let s = Instant::now();
        f.write_all_at(&buf, (i % 64) as u64 * 4096).unwrap();
        f.sync_data().unwrap();
        t.push(s.elapsed());
    }
    let fsync = median(t);
    let direct = OpenOptions::new().write(true).custom_flags(libc_flags()).open(&p).ok().map(|d| {
        // An aligned buffer for O_DIRECT.
        let mut raw = vec![7u8; 8192];
        let off = (4096 - raw.as_ptr() as usize % 4096) % 4096;
        let b = &mut raw[off..off + 4096];
        let mut t = Vec::new();
        for i in 0..n {
            let s = Instant::now();
            d.write_all_at(b, (i % 64) as u64 * 4096).unwrap();
            t.push(s.elapsed());
        }
        median(t)
    });
    let _ = std::fs::remove_file(&p);
    (fsync, direct)
}

fn libc_flags() -> i32 {
    // O_DIRECT | O_DSYNC on Linux x86_64/aarch64.
    0o40000 | 0o10000
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        std::env::current_dir().unwrap().join("target").join(format!("jackdaw-demo-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let (fsync, direct) = disk_latency(&dir, 200);
    println!("database: {}", dir.display());
    println!(
        "disk: 4 KiB write + fdatasync p50 {}; 4 KiB O_DIRECT|O_DSYNC write p50 {}",
        us(fsync),
        direct.map_or("refused".into(), us)
    );

    let env = Env::open(&dir, Options::default().durability(Durability::Sync))?;
    // Empty commit (writes nothing) and 1-page / 100-page durable commits.
    let mut pages = Vec::new();
    let mut tx = env.write()?;
    for _ in 0..100 {
        pages.push(tx.alloc_page(PageKind::Raw)?);
    }
    tx.commit()?;
    let mut empty = Vec::new();
    let mut one = Vec::new();
    let mut hundred = Vec::new();
    let mut hundred_bytes = 0;
    for round in 0..200u64 {
        let s = Instant::now();
        env.write()?.commit()?;
        empty.push(s.elapsed());

        let mut tx = env.write()?;
        tx.page_mut(pages[(round % 100) as usize])?[PAGE_HEADER..PAGE_HEADER + 8].copy_from_slice(&round.to_le_bytes());
        let s = Instant::now();
        tx.commit()?;
        one.push(s.elapsed());

        let mut tx = env.write()?;
        for (i, p) in pages.iter().enumerate() {
            let page = tx.page_mut(*p)?;
            // 100 bytes changed per page, like an insert into a leaf.
            let at = PAGE_HEADER + ((round as usize * 131 + i * 17) % 3900);
            for b in &mut page[at..at + 100] {
                *b = (round as u8).wrapping_mul(31).wrapping_add(i as u8);
            }
        }
        let s = Instant::now();
        let st = tx.commit()?;
        hundred.push(s.elapsed());
        hundred_bytes = st.journal_bytes_written;
    }
    println!("empty commit (writes nothing): p50 {}", us(median(empty)));
    println!("1-page durable commit: p50 {}", us(median(one)));
    println!("100-page durable commit: p50 {} ({} journal bytes after diff + LZ4)", us(median(hundred)), hundred_bytes);

    // Bulk: 20,000 fresh pages in one transaction (written once), then read back.
    let s = Instant::now();
    let mut tx = env.write()?;
    let mut bulk = Vec::new();
    for i in 0..20_000u64 {
        let p = tx.alloc_page(PageKind::Raw)?;
        tx.page_mut(p)?[PAGE_HEADER..PAGE_HEADER + 8].copy_from_slice(&i.to_le_bytes());
        bulk.push(p);
    }
    let st = tx.commit()?;
    let el = s.elapsed();
    println!(
        "bulk: 20,000 pages in one transaction in {:.1} ms ({:.0} MB/s), {} written once, {} journal bytes",
        el.as_secs_f64() * 1e3,
        20_000.0 * 4096.0 / el.as_secs_f64() / 1e6,
        st.written_once_pages,
        st.journal_bytes_written
    );
    let r = env.read()?;
    let s = Instant::now();
    for (i, p) in bulk.iter().enumerate() {
        let page = r.page(*p)?;
        assert_eq!(&page[PAGE_HEADER..PAGE_HEADER + 8], &(i as u64).to_le_bytes());
    }
    println!("read back 20,000 pages: {:.0} pages/s", 20_000.0 / s.elapsed().as_secs_f64());
    drop(r);
    let live: Vec<u64> = pages.iter().chain(bulk.iter()).copied().collect();
    let l2 = live.clone();
    env.check_with(move |_| Ok(l2)).and_then(jackdaw::CheckReport::into_result)?;
    let stats = env.stats();
    env.close()?;
    drop(env);

    let s = Instant::now();
    let env = Env::open(&dir, Options::default().flusher(FlusherMode::Manual))?;
    let r = env.read()?;
    assert_eq!(&r.page(bulk[777])?[PAGE_HEADER..PAGE_HEADER + 8], &777u64.to_le_bytes());
    println!("reopened in {} at transaction {}", us(s.elapsed()), r.txid().get());
    drop(r);
    env.check_with(move |_| Ok(live)).and_then(jackdaw::CheckReport::into_result)?;
    println!("check: ok");
    println!(
        "stats: {} commits, {} journal writes ({} O_DIRECT), journal I/O {}, bytes full/diffed/written {}/{}/{}, flushes {}, syncs {:?}",
        stats.commits,
        stats.journal_writes,
        stats.journal_direct_writes,
        stats.journal_io,
        stats.journal_bytes_full,
        stats.journal_bytes_raw,
        stats.journal_bytes_written,
        stats.flushes,
        stats.syncs.iter().filter(|(_, n)| *n > 0).collect::<Vec<_>>()
    );
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    std::io::stdout().flush()?;
    Ok(())
}
