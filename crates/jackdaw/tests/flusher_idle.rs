//! The background flusher does not spin: with `flush_idle(0)` (flush as soon as the writer is
//! idle) it flushed, then looped without waiting, taking a whole core for as long as the
//! environment stayed open. A test binary of its own, so that the process's CPU time is this
//! test's alone.

mod common;

use jackdaw::{Env, Options};
use std::time::Duration;

/// User plus system CPU time of this process so far (`/proc/self/stat`, in clock ticks of
/// 10 ms on Linux).
fn cpu_ms() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = s.rsplit_once(')').unwrap().1;
    let f: Vec<u64> = after.split_whitespace().skip(11).take(2).map(|x| x.parse().unwrap()).collect();
    (f[0] + f[1]) * 10
}

#[test]
fn an_idle_flusher_waits_even_with_a_zero_idle_time() {
    let dir = common::tmpdir("flusher-idle");
    let env = Env::open(&*dir, Options::default().flush_idle(Duration::ZERO)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    // The idle flush comes at once.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while env.stats().last_flushed_txid != env.stats().last_committed_txid {
        assert!(std::time::Instant::now() < deadline, "no idle flush in 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = cpu_ms();
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ms() - before;
    println!("CPU time over 1 s with nothing to do: {used} ms");
    assert!(used < 300, "the flusher spun: {used} ms of CPU in 1 s");
    env.close().unwrap();
}
