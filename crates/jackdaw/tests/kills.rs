//! Real process crashes (stage 4 of the fault tests): SIGKILL in a loop on one database.
//!
//! The test binary re-executes itself as a child (`kills_child`, `#[ignore]`d so that a normal run
//! never starts it alone). The child opens the database on the real disk (target/tmp), reports
//! what it recovered (the transaction counter `n` stored in tree `meta`, a digest of every tree,
//! and the result of `check()`), then commits transaction `n+1`, `n+2`, ... and prints an
//! acknowledgement after each `commit` returns. Transaction `i` is a pure function of
//! `(seed, i)`: puts of values from 0 bytes to 40 KB (inline and overflow) and deletes over four
//! trees, sometimes a whole tree deleted, in `Sync` (60%), `Buffered` (25%) or `None` (15%)
//! durability; half the children run the background flusher with a tiny threshold, the others
//! flush by hand now and then. So the parent can rebuild the exact expected contents after any
//! `i` without talking to the child.
//!
//! The parent kills each child with SIGKILL after a seeded number of acknowledgements (0-10; 0
//! kills it while it starts or recovers) plus a seeded delay of 0-3 ms, and starts the next child
//! on the same database, which recovers the crash. Each recovery must give the state after a
//! transaction `n` with `written <= n <= acked + 1` (`written`: the last acknowledged `Sync` or
//! `Buffered` commit, which the OS has even if the process dies; the child may have committed one
//! more transaction before printing), contents equal to the model's for `n`, and `check()` Ok.
//!
//! `KILLS` kills per run (400; `JACKDAW_KILLS` overrides). Seeded: prints the seed,
//! `JACKDAW_SEED` replays the schedule (where exactly SIGKILL lands is up to the scheduler).

mod common;
mod fault;
use common::TestDb;

use fault::*;
use jackdaw::{Durability, Env, FlusherMode, Options};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const ENV_DIR: &str = "JACKDAW_KILLS_DIR";
const ENV_SEED: &str = "JACKDAW_KILLS_SEED";
const ENV_FLUSHER: &str = "JACKDAW_KILLS_FLUSHER";
const MARK: &str = "@@kills@@ ";
const TREES: [&str; 4] = ["t0", "t1", "t2", "t3"];
const META: &str = "meta";
const KILLS: u64 = 400;

fn opts(flusher: &str) -> Options {
    let o = Options::default()
        .journal_file_bytes(64 << 10)
        .journal_files_kept(2)
        .write_once_min_pages(8)
        .max_dirty_pages(32);
    match flusher {
        "background" => {
            o.flusher(FlusherMode::Background).flush_threshold_bytes(96 << 10).flush_idle(Duration::from_millis(3))
        }
        _ => o.flusher(FlusherMode::Manual),
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put { tree: &'static str, key: Vec<u8>, len: usize, salt: u64 },
    Del { tree: &'static str, key: Vec<u8> },
    DropTree { tree: &'static str },
}

/// Transaction `i` of the workload of `seed`: its operations and durability.
fn txn_ops(seed: u64, i: u64) -> (Vec<Op>, Durability) {
    let mut r = Rng::new(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let dur = match r.below(20) {
        0..=11 => Durability::Sync,
        12..=16 => Durability::Buffered,
        _ => Durability::None,
    };
    let mut ops = Vec::new();
    if r.chance(1, 40) {
        let tree = *r.pick(&TREES);
        ops.push(Op::DropTree { tree });
    }
    for _ in 0..r.range(1, 4) {
        let tree = *r.pick(&TREES);
        let key = format!("k{:03}", r.below(120)).into_bytes();
        if r.chance(1, 4) {
            ops.push(Op::Del { tree, key });
        } else {
            let len = value_len(&mut r);
            ops.push(Op::Put { tree, key, len, salt: r.next_u64() });
        }
    }
    (ops, dur)
}

/// Apply transaction `i` to the model.
fn model_apply(seed: u64, i: u64, m: &mut Model) {
    for op in txn_ops(seed, i).0 {
        match op {
            Op::Put { tree, key, len, salt } => {
                m.entry(tree.to_string()).or_default().insert(key, value(seed, salt, len));
            }
            Op::Del { tree, key } => {
                if let Some(t) = m.get_mut(tree) {
                    t.remove(&key);
                }
            }
            Op::DropTree { tree } => {
                m.remove(tree);
            }
        }
    }
    m.entry(META.to_string()).or_default().insert(b"n".to_vec(), i.to_le_bytes().to_vec());
}

// ---------------------------------------------------------------------------------------------
// The child.

#[test]
#[ignore = "child process of sigkill_loop, started by it"]
fn kills_child() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let seed: u64 = std::env::var(ENV_SEED).unwrap().parse().unwrap();
    let flusher = std::env::var(ENV_FLUSHER).unwrap();
    let out = std::io::stdout();
    let say = |line: String| {
        let mut o = out.lock();
        if writeln!(o, "{MARK}{line}").and_then(|_| o.flush()).is_err() {
            std::process::exit(3);
        }
    };
    say("START".into());
    let env = match Env::open(&dir, opts(&flusher)) {
        Ok(e) => e,
        Err(e) => {
            say(format!("OPENERR {e}"));
            std::process::exit(2);
        }
    };
    let (txid, m) = match read_db(&env) {
        Ok(x) => x,
        Err(e) => {
            say(format!("READERR {e}"));
            std::process::exit(2);
        }
    };
    let mut n = m
        .get(META)
        .and_then(|t| t.get(b"n".as_slice()))
        .map(|v| u64::from_le_bytes(v[..8].try_into().unwrap()))
        .unwrap_or(0);
    match env.check().and_then(jackdaw::CheckReport::into_result) {
        Ok(_) => {}
        Err(e) => say(format!("CHECKERR {}", e.to_string().replace('\n', " | "))),
    }
    say(format!("OPENED {n} {txid} {:032x}", digest(&m)));
    let mut rng = Rng::new(seed ^ 0xc41d);
    loop {
        n += 1;
        let (ops, dur) = txn_ops(seed, n);
        let mut tx = env.write().unwrap();
        tx.set_durability(dur);
        for op in ops {
            match op {
                Op::Put { tree, key, len, salt } => {
                    let t = match tx.open_tree(tree).unwrap() {
                        Some(t) => t,
                        None => tx.create_tree(tree).unwrap(),
                    };
                    tx.put(&t, &key, value(seed, salt, len)).unwrap();
                }
                Op::Del { tree, key } => {
                    if let Some(t) = tx.open_tree(tree).unwrap() {
                        tx.delete(&t, &key).unwrap();
                    }
                }
                Op::DropTree { tree } => {
                    tx.delete_tree(tree).unwrap();
                }
            }
        }
        let t = match tx.open_tree(META).unwrap() {
            Some(t) => t,
            None => tx.create_tree(META).unwrap(),
        };
        tx.put(&t, "n", n.to_le_bytes()).unwrap();
        tx.commit().unwrap();
        say(format!("ACK {n} {}", if dur == Durability::None { "none" } else { "written" }));
        if flusher == "manual" && rng.chance(1, 10) {
            env.flush().unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parent.

struct ChildProc {
    child: Child,
    out: BufReader<ChildStdout>,
    err: Option<std::thread::JoinHandle<String>>,
}

impl ChildProc {
    fn spawn(dir: &Path, seed: u64, flusher: &str) -> ChildProc {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--exact", "kills_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, dir)
            .env(ENV_SEED, seed.to_string())
            .env(ENV_FLUSHER, flusher)
            .env_remove("JACKDAW_SEED")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut e = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        });
        ChildProc { child, out, err: Some(err) }
    }
    fn line(&mut self) -> Option<String> {
        loop {
            let mut l = String::new();
            if self.out.read_line(&mut l).ok()? == 0 {
                return None;
            }
            if let Some(i) = l.find(MARK) {
                return Some(l[i + MARK.len()..].trim_end().to_string());
            }
        }
    }
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let st = self.child.wait().unwrap();
        let err = self.err.take().unwrap().join().unwrap();
        (st, err)
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the parent knows.
struct Parent {
    seed: u64,
    /// The model at `at`, the last recovered (verified) state.
    model: Model,
    at: u64,
    /// The last acknowledged commit that was handed to the OS, and the last acknowledged one.
    written: u64,
    acked: u64,
}

impl Parent {
    /// A recovery reported `n` with `digest`: check the bounds and the contents, move the model.
    fn recovered(&mut self, n: u64, d: &str, what: &str) {
        assert!(
            n >= self.written && n <= self.acked + 1,
            "{what}: recovered transaction counter {n}, but {} was written (last acknowledged {})",
            self.written,
            self.acked
        );
        assert!(n >= self.at, "{what}: recovered {n}, older than the previously recovered {}", self.at);
        for i in self.at + 1..=n {
            model_apply(self.seed, i, &mut self.model);
        }
        self.at = n;
        assert_eq!(
            format!("{:032x}", digest(&self.model)),
            d,
            "{what}: recovered counter {n} with other contents (hole or mixture)"
        );
        self.written = n;
        self.acked = n;
    }
}

#[test]
fn sigkill_loop() {
    let t0 = Instant::now();
    let seed = seed_or("sigkill_loop", 0x6b11_1500);
    let _g = OnPanic(format!("sigkill_loop: replay with JACKDAW_SEED={seed}"));
    let kills = env_num("JACKDAW_KILLS", KILLS);
    let mut rng = Rng::new(seed);
    let mut db = TestDb::unopened(&format!("kills-{seed}"), opts("manual"));
    let mut p = Parent { seed, model: Model::new(), at: 0, written: 0, acked: 0 };
    let mut stats: BTreeMap<&str, u64> = BTreeMap::new();
    for round in 0..kills {
        let flusher = if rng.chance(1, 2) { "background" } else { "manual" };
        let kill_after = if rng.chance(1, 8) { 0 } else { rng.range(1, 10) };
        let delay_us = rng.below(3000);
        let what = format!("round {round} ({flusher} flusher, kill after {kill_after} acks + {delay_us} us)");
        let _r = OnPanic(format!("sigkill_loop {what}; written {}, acked {}", p.written, p.acked));
        let mut c = ChildProc::spawn(db.path(), seed, flusher);
        let mut acks = 0u64;
        let mut opened = false;
        loop {
            let Some(l) = c.line() else {
                let (st, err) = c.finish();
                panic!("{what}: child ended before the kill ({st}); stderr:\n{err}");
            };
            if l == "START" {
                if kill_after == 0 {
                    break;
                }
            } else if let Some(rest) = l.strip_prefix("OPENED ") {
                let v: Vec<&str> = rest.split_whitespace().collect();
                p.recovered(v[0].parse().unwrap(), v[2], &what);
                opened = true;
            } else if let Some(rest) = l.strip_prefix("ACK ") {
                assert!(opened, "{what}: ack before open");
                let v: Vec<&str> = rest.split_whitespace().collect();
                let n: u64 = v[0].parse().unwrap();
                assert_eq!(n, p.acked + 1, "{what}: acknowledgements out of order");
                p.acked = n;
                if v[1] == "written" {
                    p.written = n;
                }
                acks += 1;
                *stats.entry("acknowledged commits").or_default() += 1;
                if acks == kill_after {
                    break;
                }
            } else {
                let (st, err) = c.finish();
                panic!("{what}: child says {l:?} ({st}); stderr:\n{err}");
            }
        }
        if delay_us > 0 {
            std::thread::sleep(Duration::from_micros(delay_us));
        }
        c.child.kill().unwrap();
        // Lines printed before the kill landed count.
        while let Some(l) = c.line() {
            if let Some(rest) = l.strip_prefix("OPENED ") {
                let v: Vec<&str> = rest.split_whitespace().collect();
                p.recovered(v[0].parse().unwrap(), v[2], &what);
                opened = true;
            } else if let Some(rest) = l.strip_prefix("ACK ") {
                let v: Vec<&str> = rest.split_whitespace().collect();
                let n: u64 = v[0].parse().unwrap();
                assert_eq!(n, p.acked + 1, "{what}: acknowledgements out of order");
                p.acked = n;
                if v[1] == "written" {
                    p.written = n;
                }
                *stats.entry("acknowledged commits").or_default() += 1;
            } else if l.starts_with("CHECKERR") || l.starts_with("OPENERR") || l.starts_with("READERR") {
                panic!("{what}: {l}");
            }
        }
        let (st, _) = c.finish();
        assert!(!st.success(), "{what}: the child was killed: {st}");
        *stats.entry("kills").or_default() += 1;
        if !opened {
            *stats.entry("kills before the child reported its recovery").or_default() += 1;
        }
        *stats
            .entry(if flusher == "background" {
                "children with the background flusher"
            } else {
                "children with manual flushes"
            })
            .or_default() += 1;
    }
    // The last crash, recovered here.
    let (pw, pa) = (p.written, p.acked);
    let env = db.try_open(opts("manual")).unwrap_or_else(|e| panic!("final recovery failed: {e}"));
    let (_, m) = read_db(env).unwrap();
    let n = m
        .get(META)
        .and_then(|t| t.get(b"n".as_slice()))
        .map(|v| u64::from_le_bytes(v[..8].try_into().unwrap()))
        .unwrap_or(0);
    p.recovered(n, &format!("{:032x}", digest(&m)), "final recovery");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    let s = env.stats();
    if n > pw {
        *stats.entry("final: an unacknowledged or unwritten commit survived").or_default() += 1;
    }
    let _ = pa;
    print_tally("sigkill_loop", &stats);
    println!(
        "sigkill_loop: {} kills, {} acknowledged commits verified, final counter {n} (txid {}), data file {} KiB, {} journal files; {:.1}s",
        stats["kills"],
        stats.get("acknowledged commits").copied().unwrap_or(0),
        s.last_committed_txid.get(),
        s.data_file_bytes >> 10,
        s.journal_files,
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(stats["kills"], kills);
}
