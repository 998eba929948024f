//! The bench's `large-values` read: `cargo run --release -p jackdaw --example largeread [-- ROUNDS]`
//!
//! Writes 1,000 values of 64 KiB (transactions of 10) and 10 values of 8 MiB (one per
//! transaction), `Durability::Sync`, then reads every value back `ROUNDS` times (default 3) in key
//! order in one read transaction, copying each into a reused buffer with `get_into` (8 MiB,
//! touched before the first round, as the bench's is: otherwise round 0 counts a page fault per
//! 4 KiB of the buffer). `LARGEREAD_SMALL=100 LARGEREAD_BIG=1` gives the bench's `--quick` sizes. The first
//! round is what the bench measures (pages read through the map for the first time); with
//! `ROUNDS = 0` only the writes run, so that `valgrind --tool=callgrind` can take the difference.
//! To profile round 0 alone: `mkfifo /tmp/ctl && LARGEREAD_PERF_CTL=/tmp/ctl perf record -D -1
//! --control fifo:/tmp/ctl -- target/release/examples/largeread 1`.
use jackdaw::{Durability, Env, Options};
use std::time::Instant;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = std::path::PathBuf::from("target/largeread");
    let _ = std::fs::remove_dir_all(&dir);
    let env = Env::open(&dir, Options::default().durability(Durability::Sync)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("kv").unwrap();
    tx.commit().unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut value = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    // The bench's `--quick` sizes are LARGEREAD_SMALL=100 LARGEREAD_BIG=1.
    let count = |name: &str, default: u64| std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let (ns, nb) = (count("LARGEREAD_SMALL", 1_000), count("LARGEREAD_BIG", 10));
    let mut bytes = 0usize;
    for b in 0..ns / 10 {
        let mut tx = env.write().unwrap();
        for i in b * 10..b * 10 + 10 {
            let v = value(64 << 10);
            bytes += v.len();
            tx.put(&t, format!("{i:016}"), &v).unwrap();
        }
        tx.commit().unwrap();
    }
    for i in ns..ns + nb {
        let v = value(8 << 20);
        bytes += v.len();
        let mut tx = env.write().unwrap();
        tx.put(&t, format!("{i:016}"), &v).unwrap();
        tx.commit().unwrap();
    }
    let keys: Vec<String> = (0..ns + nb).map(|i| format!("{i:016}")).collect();
    if std::env::var_os("LARGEREAD_FLUSH").is_some() {
        env.flush().unwrap();
    }
    let st = env.stats();
    println!(
        "page table: {} bytes; flushed txid {} of {}",
        st.scratch_bytes,
        st.last_flushed_txid.get(),
        st.last_committed_txid.get()
    );
    // Like the bench: one buffer of the largest value's size, already touched.
    let mut buf = vec![1u8; 8 << 20];
    buf.clear();
    println!("{} minor faults before reading", minflt());
    for round in 0..rounds {
        let r = env.read().unwrap();
        perf_ctl(round == 0, "enable");
        let s = Instant::now();
        let mut sum = 0u64;
        let mut small = s.elapsed();
        for (i, k) in keys.iter().enumerate() {
            if i as u64 == ns {
                small = s.elapsed();
            }
            assert!(r.get_into(&t, k, &mut buf).unwrap());
            sum = sum.wrapping_add(buf.len() as u64 + buf[buf.len() / 2] as u64);
        }
        let el = s.elapsed();
        println!(
            "  64 KiB values {:.1} ms, 8 MiB values {:.1} ms",
            small.as_secs_f64() * 1e3,
            (el - small).as_secs_f64() * 1e3
        );
        perf_ctl(round == 0, "disable");
        println!(
            "large-values-read round {round}: {:.0} MB/s ({sum}; {} minor faults so far)",
            bytes as f64 / el.as_secs_f64() / 1e6,
            minflt()
        );
    }
    env.close().unwrap();
}

/// Minor page faults of this process so far (Linux; 0 elsewhere).
fn minflt() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |x| x.1);
    after.split_whitespace().nth(7).and_then(|x| x.parse().ok()).unwrap_or(0)
}

/// Tell `perf record --control fifo:PATH` (path in `LARGEREAD_PERF_CTL`) to enable or disable.
fn perf_ctl(when: bool, what: &str) {
    if let (true, Some(p)) = (when, std::env::var_os("LARGEREAD_PERF_CTL")) {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(p) {
            let _ = writeln!(f, "{what}");
        }
    }
}
