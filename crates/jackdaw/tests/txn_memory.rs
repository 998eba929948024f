//! Memory of huge transactions (faults issue §5), and the streamed journal records that bound it.
//!
//! - `huge_rewrite_stays_within_the_memory_bound`: a 256 MiB rewrite in one transaction (about
//!   350 MiB of dirty pages), in a child process (this test binary re-executed with
//!   `JACKDAW_TXN_MEMORY_CHILD_DIR` set, running only `rewrite_child`), whose peak **anonymous**
//!   memory must stay within 1.5 × the dirty bytes + 64 MiB.
//!
//!   Why anonymous memory and not `VmHWM`: the rewrite reads every leaf of the tree through the
//!   data file's mapping, so about as much again of the *mapped file* becomes resident (353 MiB
//!   here). Those are page-cache pages shared with the kernel's cache, clean, which the kernel
//!   drops under pressure and which any reader of the same data pays for: they are the cost of
//!   reading the database, not of holding the transaction. `VmHWM` counts them with the rest
//!   (740 MiB after the fix, 1,003 MiB before), so it cannot tell whether the transaction keeps
//!   a second copy of its pages. `RssAnon` (heap: the dirty pages, payloads, buffers) can, but
//!   has no high-water mark of its own, so a thread of the child samples it every 2 ms from the
//!   start of the rewrite to the end of the commit and keeps the largest value. The copies the
//!   bound is about live for seconds (the whole payload used to be built, compressed, framed and
//!   written), so the sampling does not miss them. Before the streamed record the peak was about
//!   650 MiB against a bound of 588 MiB (the whole payload, 262 MiB, beside the dirty pages).
//! - `streamed_records_round_trip_in_every_mode`: records streamed into the journal (the
//!   threshold lowered to 16 KiB) are read back by recovery from a crash image, in every
//!   durability mode, and are what a commit writes (stored uncompressed where the in-memory path
//!   compresses). The power-loss sweep (`powerloss.rs`) streams the records of half its seeds,
//!   so crash images between the payload's chunks and the header are recovered too.

mod common;

use common::*;
use jackdaw::internals::MemStorage;
use jackdaw::{Durability, Env, FlusherMode, Options};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

const CHILD_DIR: &str = "JACKDAW_TXN_MEMORY_CHILD_DIR";
const MARK: &str = "@@jackdaw-txn-memory@@ ";
const MIB: u64 = 1 << 20;

fn status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

fn noise(x: &mut u64, out: &mut [u8]) {
    for b in out {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *b = *x as u8;
    }
}

/// The child: load 256 MiB of 1,000-byte random values, rewrite all of them in one transaction,
/// commit, and print the dirty bytes and the sampled peak of anonymous memory. Started by
/// `huge_rewrite_stays_within_the_memory_bound`; without the variable it does nothing.
#[test]
#[ignore = "child process of huge_rewrite_stays_within_the_memory_bound, started by it"]
fn rewrite_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let env = Env::open(&dir, Options::default().durability(Durability::Sync)).unwrap();
    let n = (256 * MIB) / 1000;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut v = vec![0u8; 1000];
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..n {
        noise(&mut x, &mut v);
        tx.put(&t, i.to_be_bytes(), &v).unwrap();
        if i % 8192 == 8191 {
            tx.commit().unwrap();
            tx = env.write().unwrap();
        }
    }
    tx.commit().unwrap();
    env.close().unwrap();
    // The rewrite with the manual flusher: nothing flushes its record before the abort below, so
    // the recovery child replays all of it.
    let env = Env::open(&dir, Options::default().durability(Durability::Sync).flusher(FlusherMode::Manual)).unwrap();
    let t = env.read().unwrap().open_tree("t").unwrap().unwrap();
    let sampler = AnonSampler::start();
    let mut tx = env.write().unwrap();
    let mut last = Vec::new();
    for i in 0..n {
        noise(&mut x, &mut v);
        tx.put(&t, i.to_be_bytes(), &v).unwrap();
        if i == n - 1 {
            last = v.clone();
        }
    }
    let stats = tx.commit().unwrap();
    let anon_peak = sampler.stop();
    let dirty = stats.pages as u64 * env.stats().page_size as u64;
    // The commit is what it says: the last value reads back.
    let r = env.read().unwrap();
    assert_eq!(r.get(&t, (n - 1).to_be_bytes()).unwrap().unwrap().as_ref(), last.as_slice());
    drop(r);
    println!(
        "{MARK}dirty={dirty} anon_peak={anon_peak} hwm={} file={} raw={} written={} last={}",
        status("VmHWM:"),
        status("RssFile:"),
        stats.journal_bytes_raw,
        stats.journal_bytes_written,
        hex(&last)
    );
    // A crash with the record durable and unflushed: `recover_child` replays it.
    std::process::abort();
}

/// Samples `RssAnon` every 2 ms on a thread of its own until `stop`, which returns the peak.
struct AnonSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl AnonSampler {
    fn start() -> AnonSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Relaxed) {
                p.fetch_max(status("RssAnon:"), Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        AnonSampler { stop, peak, thread }
    }
    fn stop(self) -> u64 {
        self.stop.store(true, Relaxed);
        self.thread.join().unwrap();
        self.peak.load(Relaxed)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().take(16).map(|x| format!("{x:02x}")).collect()
}

/// The second child: open the database `rewrite_child` left (replaying its 262 MiB record),
/// sampling anonymous memory during the open, and print it with the last value's first bytes.
#[test]
#[ignore = "child process of huge_rewrite_stays_within_the_memory_bound, started by it"]
fn recover_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let sampler = AnonSampler::start();
    let env = Env::open(&dir, Options::default()).unwrap();
    let anon_peak = sampler.stop();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    let n = (256 * MIB) / 1000;
    let last = hex(&r.get(&t, (n - 1).to_be_bytes()).unwrap().unwrap());
    println!("{MARK}anon_peak={anon_peak} hwm={} last={last}", status("VmHWM:"));
    drop(r);
    env.close().unwrap();
}

fn run_child(name: &str, dir: &std::path::Path, must_succeed: bool) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.find(MARK).map(|i| l[i + MARK.len()..].to_string()));
    match line {
        Some(l) if out.status.success() || !must_succeed => l,
        _ => panic!("child {name} failed: {}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr)),
    }
}

fn field(line: &str, name: &str) -> String {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .to_string()
}

fn num(line: &str, name: &str) -> u64 {
    field(line, name).parse().unwrap_or_else(|_| panic!("{name} in {line}"))
}

/// A 256 MiB rewrite in one transaction: peak anonymous memory within 1.5 × dirty + 64 MiB (see
/// the module comment for why anonymous memory). Failed before commit records were streamed:
/// the payload (262 MiB) was built whole beside the dirty pages (349 MiB).
#[test]
fn huge_rewrite_stays_within_the_memory_bound() {
    let dir = TestDb::dir("txn-memory");
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = std::time::Instant::now();
    let line = run_child("rewrite_child", dir.path(), false);
    let (dirty, anon) = (num(&line, "dirty"), num(&line, "anon_peak"));
    let bound = dirty + dirty / 2 + 64 * MIB;
    println!(
        "256 MiB rewrite: {} MiB dirty, peak anonymous {} MiB, bound {} MiB ({:.2}x); VmHWM {} MiB, mapped file {} MiB; \
         payload {} MiB, {} MiB written; {:.1} s",
        dirty / MIB,
        anon / MIB,
        bound / MIB,
        anon as f64 / bound as f64,
        num(&line, "hwm") / MIB,
        num(&line, "file") / MIB,
        num(&line, "raw") / MIB,
        num(&line, "written") / MIB,
        t0.elapsed().as_secs_f64()
    );
    // The workload is what the bound is about: hundreds of MiB dirty, sampled at all.
    assert!(dirty > 300 * MIB, "only {} MiB dirty", dirty / MIB);
    assert!(anon > dirty, "the sampler saw {} MiB, less than the dirty pages", anon / MIB);
    assert!(
        anon <= bound,
        "peak anonymous memory {} MiB passes 1.5 x dirty + 64 MiB = {} MiB",
        anon / MIB,
        bound / MIB
    );
    // Recovery replays the record (the writer aborted right after the commit).
    let t1 = std::time::Instant::now();
    let rec = run_child("recover_child", dir.path(), true);
    let ranon = num(&rec, "anon_peak");
    let rbound = dirty + 64 * MIB;
    println!(
        "recovery of it: peak anonymous {} MiB, bound dirty + 64 MiB = {} MiB; VmHWM {} MiB; {:.1} s",
        ranon / MIB,
        rbound / MIB,
        num(&rec, "hwm") / MIB,
        t1.elapsed().as_secs_f64()
    );
    assert_eq!(field(&rec, "last"), field(&line, "last"), "the rewrite was recovered");
    assert!(
        ranon <= rbound,
        "recovery held {} MiB of anonymous memory, more than the rebuilt pages + 64 MiB = {} MiB",
        ranon / MIB,
        rbound / MIB
    );
}

fn value(i: u32, round: u8) -> Vec<u8> {
    // Compressible (LZ4 saves far more than 1/8), different per key and round.
    let mut v = vec![round.wrapping_mul(37).wrapping_add(1); 700];
    v[..4].copy_from_slice(&i.to_be_bytes());
    v
}

/// Records streamed into the journal (threshold lowered to 16 KiB) recover from a crash image
/// (a `MemStorage` copy: everything written, nothing flushed) in each durability mode, mixed with
/// small framed records; and the streamed path is the one taken: the big commits' records are
/// stored uncompressed, where the same commits with streaming off are LZ4-compressed. The big
/// records (over 4 MiB, uncompressed) are also read back by recovery in chunks from the file.
#[test]
fn streamed_records_round_trip_in_every_mode() {
    for d in [Durability::Sync, Durability::Buffered, Durability::None] {
        for stream in [true, false] {
            let mem = MemStorage::new();
            let opts = |m: &MemStorage| {
                Options::default()
                    .storage(Arc::new(m.clone()))
                    .flusher(FlusherMode::Manual)
                    .durability(d)
                    .journal_file_bytes(256 << 10)
                    .write_once_min_pages(0)
                    .stream_record_bytes(if stream { 16 << 10 } else { 0 })
            };
            let env = Env::open("/db", opts(&mem)).unwrap();
            let mut model = std::collections::BTreeMap::new();
            let mut big = Vec::new();
            for round in 0..4u8 {
                // A big transaction (hundreds of pages: fresh ones first, then rewritten ones).
                let mut tx = env.write().unwrap();
                let t = match tx.open_tree("t").unwrap() {
                    Some(t) => t,
                    None => tx.create_tree("t").unwrap(),
                };
                for i in 0..8000u32 {
                    let k = i * 3 + u32::from(round % 2);
                    tx.put(&t, k.to_be_bytes(), value(k, round)).unwrap();
                    model.insert(k, value(k, round));
                }
                big.push(tx.commit().unwrap());
                // Small ones between (framed in memory whatever the threshold: 1-3 pages).
                for j in 0..3u32 {
                    let mut tx = env.write().unwrap();
                    let t = tx.open_tree("t").unwrap().unwrap();
                    let k = 1_000_000 + u32::from(round) * 10 + j;
                    tx.put(&t, k.to_be_bytes(), value(k, round)).unwrap();
                    model.insert(k, value(k, round));
                    tx.commit().unwrap();
                }
            }
            for s in &big {
                // Over 4 MiB: recovery verifies and applies these records in chunks, from the
                // file (`recovery::STREAM_READ_MIN`), when they are stored uncompressed.
                assert!(s.journal_bytes_raw > 4 << 20, "a big commit: {s:?}");
                if stream {
                    assert!(
                        s.journal_bytes_written >= s.journal_bytes_raw,
                        "streamed records are not compressed: {s:?}"
                    );
                } else {
                    assert!(s.journal_bytes_written < s.journal_bytes_raw / 2, "framed records are compressed: {s:?}");
                }
            }
            // Everything to the OS (an empty Sync commit), then a crash: nothing was flushed.
            let mut tx = env.write().unwrap();
            tx.set_durability(Durability::Sync);
            tx.commit().unwrap();
            let image = mem.deep_clone();
            drop(env);
            let env = Env::open("/db", opts(&image)).unwrap();
            let r = env.read().unwrap();
            let t = r.open_tree("t").unwrap().unwrap();
            let mut n = 0u64;
            for (k, v) in &model {
                assert_eq!(r.get(&t, k.to_be_bytes()).unwrap().as_deref(), Some(v.as_slice()), "{d:?} key {k}");
                n += 1;
            }
            assert_eq!(r.tree_stats(&t).unwrap().entries, n, "{d:?}: no extra keys");
            drop(r);
            env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
        }
    }
}

/// A big streamed record (over 4 MiB, so recovery verifies it in chunks without loading it) with
/// one byte changed in the middle of its payload is not replayed: recovery ends the log before it
/// and the database is the state before that commit. The same image untouched replays it.
#[test]
fn a_damaged_big_record_is_not_replayed() {
    use jackdaw::internals::Storage;
    let mem = MemStorage::new();
    let opts = |m: &MemStorage| {
        Options::default()
            .storage(Arc::new(m.clone()))
            .flusher(FlusherMode::Manual)
            .journal_file_bytes(256 << 10)
            .write_once_min_pages(0)
            .stream_record_bytes(16 << 10)
    };
    let env = Env::open("/db", opts(&mem)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "before", "kept").unwrap();
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    let mut x = 7u64;
    let mut v = vec![0u8; 700];
    for i in 0..8000u32 {
        noise(&mut x, &mut v);
        tx.put(&t, i.to_be_bytes(), &v).unwrap();
    }
    let st = tx.commit().unwrap();
    assert!(st.journal_bytes_written > 4 << 20, "{st:?}");
    let image = mem.deep_clone();
    drop(env);
    let open_and_look = |m: &MemStorage| {
        let env = Env::open("/db", opts(m)).unwrap();
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        let found = (r.get(&t, "before").unwrap().is_some(), r.get(&t, 7999u32.to_be_bytes()).unwrap().is_some());
        drop(r);
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
        found
    };
    // Untouched: the big record is replayed.
    assert_eq!(open_and_look(&image.deep_clone()), (true, true));
    // The largest journal file is the one made for the big record: change a byte in its middle.
    let dir = std::path::Path::new("/db/journal");
    let (path, mut bytes) = image
        .list_dir(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".jnl"))
        .map(|n| dir.join(n))
        .map(|p| {
            let b = image.read_file(&p).unwrap();
            (p, b)
        })
        .max_by_key(|(_, b)| b.len())
        .unwrap();
    assert!(bytes.len() > 4 << 20, "{} bytes", bytes.len());
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    image.write_file(&path, &bytes);
    assert_eq!(open_and_look(&image), (true, false), "a damaged record must not be replayed");
}

/// The page-buffer pool keeps as many buffers as the last flush wrote out, so that the commits
/// before the next flush copy into pooled buffers instead of growing the heap again (it kept
/// 4,096 at most, a fifth of `fill-rnd-tx`'s copies came from `malloc`), and gives them back once
/// no commit came for `flush_idle`.
#[test]
fn the_page_buffer_pool_follows_the_last_flush_and_shrinks_when_idle() {
    let dir = tmpdir("pool_follows_flush");
    let opts = Options::default()
        .durability(Durability::Buffered)
        .flush_threshold_bytes(1 << 40)
        .flush_idle(std::time::Duration::from_millis(200));
    let env = Env::open(&dir, opts).unwrap();
    let ps = env.stats().page_size as u64;
    // 20,000 values of 1,000 bytes at random keys: three or four a leaf, so more than 5,000
    // pages change before the flush.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200 {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for _ in 0..100 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            tx.put(&t, x.to_be_bytes(), [7u8; 1000]).unwrap();
        }
        tx.commit().unwrap();
    }
    env.flush().unwrap();
    env.flush().unwrap();
    let pooled = env.stats().pooled_bytes;
    assert!(pooled > 4096 * ps, "pooled after the flush: {pooled} bytes ({} pages)", pooled / ps);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = env.stats().pooled_bytes;
        if now <= 4096 * ps {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {now} bytes pooled 20 s after the last commit");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
