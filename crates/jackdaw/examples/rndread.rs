//! Random point reads of a 16-byte-key tree: `cargo run --release -p jackdaw --example rndread [-- N]`
//!
//! Like the bench's `read-rnd`: the tree is filled in one transaction, the environment is closed
//! and reopened (so reads come from the mapped data file, not the page table), then every key is
//! read once in random order. With a second argument `R`, only the first `R` keys of that order
//! are read (so that `valgrind --tool=callgrind` can attribute a known number of gets). With a
//! third argument `into`, values are copied out with `get_into` (as the bench does) instead of
//! `get`; with `txn`, each get runs in a read transaction of its own (YCSB's shape: the begin and
//! end of a read transaction are part of each operation). The words after `R` may come in any
//! order; with `hot` among them, the environment is not closed and reopened and its flusher is
//! manual and the fill is not written once, so every page read is a version held in the page table
//! (reads right after writes); with `flushed` as well, the pages are flushed before the reads, so
//! the same process reads them from its mapping (the page table empty): `hot` against
//! `hot flushed` is the cost of serving reads from the page table. With `partly=K` as well (after
//! `hot flushed`), one transaction then rewrites every K-th key of the read order, so the table
//! holds the leaves of those keys and the other reads come from the mapping (a database read
//! soon after its last commits, where most pages are not held).
use jackdaw::{Env, FlusherMode, Options};
use std::time::Instant;
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from("target/rndread");
    let _ = std::fs::remove_dir_all(&dir);
    let words: Vec<String> = std::env::args().skip(3).collect();
    let word = |w: &str| words.iter().any(|a| a == w);
    let hot = word("hot");
    let opts =
        if hot { Options::default().flusher(FlusherMode::Manual).write_once_min_pages(0) } else { Options::default() };
    let env = Env::open(&dir, opts).unwrap();
    let keys: Vec<[u8; 16]> = (0..n)
        .map(|i| {
            let mut k = [0u8; 16];
            k.copy_from_slice(format!("{i:016}").as_bytes());
            k
        })
        .collect();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in &keys {
        tx.put(&t, k, [3u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    let env = if hot {
        if word("flushed") {
            env.flush().unwrap();
        }
        env
    } else {
        env.close().unwrap();
        drop(env);
        Env::open(&dir, Options::default()).unwrap()
    };
    let t = env.read().unwrap().open_tree("t").unwrap().unwrap();
    let mut order: Vec<usize> = (0..n as usize).collect();
    let mut x = 88172645463325252u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let partly = words.iter().find_map(|w| w.strip_prefix("partly=")).and_then(|k| k.parse::<usize>().ok());
    if let Some(k) = partly {
        let mut tx = env.write().unwrap();
        for &i in order.iter().step_by(k.max(1)) {
            tx.put(&t, keys[i], [4u8; 100]).unwrap();
        }
        tx.commit().unwrap();
        let st = env.stats();
        println!("held: {} MiB of page images, {} pages in the file", st.scratch_bytes >> 20, st.next_page);
    }
    let reads: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(order.len());
    let order = &order[..reads.min(order.len())];
    let n = order.len() as u64;
    let r = env.read().unwrap();
    let into = word("into");
    let per_txn = word("txn");
    let mut buf = [0u8; 100];
    let mut out = Vec::with_capacity(256);
    // Values rewritten by `partly` read back (each rewritten key is read once, at its place).
    let mut rewritten = 0usize;
    let s = Instant::now();
    for &i in order {
        if per_txn {
            let r = env.read().unwrap();
            let v = r.get(&t, keys[i]).unwrap().unwrap();
            buf.copy_from_slice(&v);
        } else if into {
            assert!(r.get_into(&t, keys[i], &mut out).unwrap());
            buf.copy_from_slice(&out);
        } else {
            let v = r.get(&t, keys[i]).unwrap().unwrap();
            buf.copy_from_slice(&v);
        }
        rewritten += usize::from(buf[0] == 4);
    }
    let el = s.elapsed();
    if let Some(k) = partly {
        assert_eq!(rewritten, order.len().div_ceil(k.max(1)), "values rewritten by `partly` read back");
    }
    println!("read-rnd {n}: {:.0} ops/s ({:.0} ns/get)", n as f64 / el.as_secs_f64(), el.as_nanos() as f64 / n as f64);
}
