//! YCSB at CI size: 1,000 records and 1,000 operations per workload, one client thread, on
//! Jackdaw, LMDB, redb and SQLite (RocksDB excluded: its C++ build is too heavy for CI). Checks
//! that every engine read back exactly what was loaded (every record by key, and a full scan's
//! byte count), that no operation missed its record, and that each workload's operation mix
//! matches YCSB's proportions within 5 standard deviations. Also the command line's contract:
//! `--print-keys` prints YCSB's keys, `--trace-ops` is repeatable from its seed, unknown
//! properties are reported, a bad workload name is an error. No timing assertions.

use jackdaw_bench::engine::Mode;
use jackdaw_bench::engines::Kind;
use jackdaw_bench::ycsb::workload::{OpKind, Spec, RUN_ORDER};
use jackdaw_bench::ycsb::{run, YcsbConfig};
use std::path::PathBuf;
use std::process::Command;

fn seed() -> u64 {
    let s = std::env::var("JACKDAW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20_261_125);
    eprintln!("seed {s} (set JACKDAW_SEED to repeat)");
    s
}

/// An empty directory `name` under the tests' temporary directory, and the built-in workloads
/// `letters` at `n` records and `n` operations.
fn fresh(name: &str, letters: &[&str], n: u32) -> (PathBuf, Vec<Spec>) {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let overrides = vec![format!("recordcount={n}"), format!("operationcount={n}")];
    (base, letters.iter().map(|l| Spec::builtin(l, &overrides).unwrap()).collect())
}

/// A one-thread `buff` run of `specs` on `engines` under `base`, in `repeat` rounds, printing
/// nothing and writing no report.
fn tiny(base: &std::path::Path, engines: Vec<Kind>, specs: Vec<Spec>, repeat: usize) -> YcsbConfig {
    YcsbConfig {
        engines,
        workloads: specs,
        threads: vec![1],
        modes: vec![Mode::Buff],
        seed: seed(),
        dir: base.join("db"),
        json: None,
        report: None,
        verbose: true,
        drop_caches: false,
        progress: false,
        print: false,
        keep: false,
        scale: "smoke".into(),
        sync_operation_count: None,
        repeat,
    }
}

#[test]
fn ycsb_tiny_reads_back_the_load_and_keeps_the_mix() {
    let (base, specs) = fresh("jackdaw-bench-ycsb-smoke", &RUN_ORDER, 1000);
    let engines = vec![Kind::Jackdaw, Kind::Lmdb, Kind::Redb, Kind::Sqlite];
    let cfg = YcsbConfig {
        json: Some(base.join("ycsb.json")),
        report: Some(base.join("report")),
        ..tiny(&base, engines.clone(), specs.clone(), 1)
    };
    let rep = run(&cfg).expect("ycsb run");
    assert!(rep.runs.iter().all(|r| r.rounds_ops_per_sec.is_empty()), "one round: no list of rounds");
    assert!(rep.failures.is_empty(), "failures: {:?}", rep.failures);
    for e in &engines {
        let l = rep.loads.iter().find(|l| l.engine == e.name()).expect("a load row per engine");
        assert_eq!((l.records, l.verified), (1000, 1000), "{}: every loaded record read back equal", e.name());
        assert!(l.live_bytes >= 1000 * 1000, "{}: live bytes {}", e.name(), l.live_bytes);
        for s in &specs {
            let r = rep
                .runs
                .iter()
                .find(|r| r.workload == s.name && r.engine == e.name())
                .unwrap_or_else(|| panic!("no row for {} on {}", s.name, e.name()));
            assert_eq!(r.ops, 1000, "{} on {}", s.name, e.name());
            assert_eq!(
                r.not_found(),
                0,
                "{} on {}: every operation found its record: {:?}",
                s.name,
                e.name(),
                r.latency
            );
            let n = r.ops as f64;
            let sum: f64 = s.proportions.iter().sum();
            for k in OpKind::ALL {
                let p = s.proportions[k.index()] / sum;
                let got = r.count(k) as f64;
                let tol = 5.0 * (n * p * (1.0 - p)).sqrt() + 1.0;
                assert!(
                    (got - n * p).abs() <= tol,
                    "{} on {}: {} {} of {n}, YCSB's proportion {p} (± {tol})",
                    s.name,
                    e.name(),
                    got,
                    k.name()
                );
            }
            let all = r.latency.iter().find(|o| o.op == "ALL").expect("ALL latency");
            assert_eq!(all.count, 1000);
            assert!(all.p50_us > 0.0 && all.p50_us <= all.p99_us && all.p99_us <= all.max_us, "{all:?}");
            if s.name == "e" {
                // Scans of 1..=100 records from a start key: on average ~50 (fewer near the end).
                let scans = r.count(OpKind::Scan);
                assert!(r.scanned_records > scans * 20, "{}: {} records in {scans} scans", e.name(), r.scanned_records);
            }
            if r.write_ops > 0 {
                assert!(r.live_bytes >= 1000 * 1000 && r.db_bytes > 0);
            }
        }
    }
    assert!(base.join("ycsb.json").exists());
    let md = std::fs::read_to_string(base.join("report/report.md")).unwrap();
    assert!(md.contains("## Summary") && md.contains("READMODIFYWRITE"));
    // The summary fits in 100 columns.
    let summary = jackdaw_bench::ycsb::report::summary(&rep);
    for line in summary.lines() {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// `--repeat 3`: every engine runs every pass three times from its loaded files, and each row is
/// that engine's median round, with all three rounds listed (in the JSON and `--verbose`).
#[test]
fn ycsb_repeat_reports_each_engines_median_round() {
    let (base, specs) = fresh("jackdaw-bench-ycsb-repeat", &["a", "d"], 500);
    let cfg = tiny(&base, vec![Kind::Jackdaw, Kind::Lmdb], specs, 3);
    let rep = run(&cfg).expect("ycsb run");
    assert!(rep.failures.is_empty(), "failures: {:?}", rep.failures);
    assert_eq!(rep.rounds, 3);
    assert_eq!(rep.runs.len(), 4, "one row per workload and engine: {:?}", rep.runs);
    for r in &rep.runs {
        let rounds = &r.rounds_ops_per_sec;
        assert_eq!(rounds.len(), 3, "{} on {}: {rounds:?}", r.workload, r.engine);
        let mut sorted = rounds.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(r.ops_per_sec, sorted[1], "{} on {}: the median of {rounds:?}", r.workload, r.engine);
        // The median round is a whole one: every operation ran and found its record.
        assert_eq!((r.ops, r.not_found()), (500, 0), "{} on {}", r.workload, r.engine);
    }
    let summary = jackdaw_bench::ycsb::report::summary(&rep);
    assert!(summary.contains("median of 3 rounds"), "{summary}");
    let detail = jackdaw_bench::ycsb::report::detail(&rep);
    assert!(detail.contains("jackdaw: median of 3 rounds (ops/s: "), "{detail}");
    let _ = std::fs::remove_dir_all(&base);
}

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jackdaw-bench")).args(args).output().expect("run jackdaw-bench")
}

#[test]
fn print_keys_and_trace_ops_are_ycsbs_and_repeatable() {
    let out = bench(&["ycsb", "--print-keys", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // CoreWorkload.buildKeyName(0..3), hashed (computed with YCSB 0.17.0).
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "user6284781860667377211\nuser8517097267634966620\nuser1820151046732198393\n"
    );
    let seed = seed().to_string();
    let args = ["ycsb", "--workloads", "e", "--trace-ops", "200", "--seed", &seed, "-p", "recordcount=1000"];
    let a = bench(&args);
    let b = bench(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout, "the same seed gives the same operations");
    let text = String::from_utf8_lossy(&a.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    let mut inserts = 0;
    for l in &lines {
        let f: Vec<&str> = l.split(' ').collect();
        match f[0] {
            "SCAN" => {
                assert_eq!(f.len(), 3, "{l}");
                let len: u32 = f[2].parse().unwrap();
                assert!((1..=100).contains(&len), "{l}");
            }
            "INSERT" => {
                // Inserts take key numbers 1000, 1001, ... in order.
                let want = Spec::builtin("e", &["recordcount=1000".into()]).unwrap().key(1000 + inserts);
                assert_eq!(f[1], want);
                inserts += 1;
            }
            o => panic!("workload E has no {o}: {l}"),
        }
        assert!(f[1].starts_with("user"));
    }
    let out = bench(&["ycsb", "-p", "bogusname=1", "--print-keys", "1"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown YCSB property bogusname"));
    let out = bench(&["ycsb", "--repeat", "0", "--print-keys", "1"]);
    assert_eq!(out.status.code(), Some(2), "clap refuses --repeat 0");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--repeat"));
    let out = bench(&["ycsb", "--workloads", "g", "--print-keys", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload \"g\""));
    let out = Command::new(env!("CARGO_BIN_EXE_jackdaw-bench"))
        .args(["ycsb", "--workload-file", "/nonexistent/workloadz", "--print-keys", "1"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // One line with its cause, never a backtrace (even with RUST_BACKTRACE set).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("jackdaw-bench: error: read workload file /nonexistent/workloadz: "), "{err}");
    assert!(!err.contains("backtrace") && err.trim().lines().count() == 1, "{err}");
}

#[test]
fn the_committed_property_files_are_read_unchanged() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ycsb");
    for l in ["a", "b", "c", "d", "e", "f"] {
        let path = dir.join(format!("workload{l}"));
        let out = bench(&["ycsb", "--workload-file", path.to_str().unwrap(), "--trace-ops", "50", "--seed", "3"]);
        assert!(out.status.success(), "{l}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("unknown"), "{l}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 50);
        // The built-in copy is the same file.
        let text = std::fs::read_to_string(&path).unwrap();
        let builtin = jackdaw_bench::ycsb::workload::BUILTIN.iter().find(|(n, _)| *n == l).unwrap().1;
        assert_eq!(text, builtin);
    }
}

/// Bad input that used to cost a whole run or more, refused before anything runs: an
/// `insertstart` at `recordcount` (nothing loaded; the run phase then never ended), a thread
/// count past 1,024 (100,000 threads took the machine's 24 GB), an empty `-p` name, `--json`
/// naming a directory and `--report` naming a file (found after the run, its figures lost). A
/// closed output pipe ends `--print-keys`, `--trace-ops` and `--list` quietly (they panicked).
#[test]
fn bad_input_is_refused_before_the_run() {
    let (dir, _) = fresh("ycsb-bad-input", &[], 1);
    let d = dir.to_str().unwrap();
    let base = ["ycsb", "--engines", "jackdaw", "--durability", "buff", "--no-progress", "--threads", "1", "--dir", d];
    let refused = |extra: &[&str], needle: &str| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let o = bench(&args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.code() == Some(1) && err.contains(needle), "{extra:?}: {:?} {err}", o.status);
    };
    let file = dir.join("afile");
    std::fs::write(&file, "x").unwrap();
    refused(&["-p", "recordcount=100", "-p", "insertstart=100", "--workloads", "a"], "must lie within recordcount");
    refused(&["-p", "recordcount=100", "--threads", "100000", "--workloads", "c"], "from 1 to 1024");
    refused(&["-p", "=5", "--workloads", "c"], "expected name=value");
    refused(&["-p", "recordcount=100", "--workloads", "c", "--json", d], "a directory; give a file name");
    refused(
        &["-p", "recordcount=100", "--workloads", "c", "--report", file.to_str().unwrap()],
        "a file; give a directory",
    );
    let o = bench(&["ycsb", "--engines", "jackdaw", "--workloads", "c", "--dir", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(1) && err.contains("a file; give the directory"), "{err}");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["afile"], "a refused run left files");
    for args in [
        &["ycsb", "--print-keys", "100000", "-p", "recordcount=100000"][..],
        &["ycsb", "--trace-ops", "100000", "--workloads", "a", "-p", "recordcount=1000"],
        &["--list"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_jackdaw-bench")).args(args).stdout(writer).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success() && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A bench stopped with Ctrl-C removes its working directory (a full YCSB run keeps gigabytes of
/// loaded copies there) and exits 130; one killed outright leaves its directory, which the next
/// bench in the same `--dir` removes (its process is gone), keeping what `--keep` kept.
#[test]
fn a_stopped_bench_leaves_no_files() {
    let (base, _) = fresh("ycsb-stopped", &[], 1);
    let db = base.join("db");
    let dead = db.join("run-4294967295");
    let kept = db.join("ycsb-4294967294");
    let users = db.join("run-2");
    std::fs::create_dir_all(dead.join("jackdaw")).unwrap();
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::create_dir_all(&users).unwrap();
    for d in [&dead, &kept] {
        std::fs::write(d.join(".jackdaw-bench-workdir"), "").unwrap();
    }
    std::fs::write(kept.join("KEPT"), "").unwrap();
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jackdaw-bench"));
    cmd.args(["ycsb", "--engines", "jackdaw", "--workloads", "a", "--threads", "1", "--durability", "buff"])
        .args(["-p", "recordcount=2000000", "--no-drop-caches", "--no-progress", "--dir"])
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SIGINT at its default action, as from a terminal, whatever this test runs under (a shell
    // starts background jobs with it ignored, and the bench keeps an ignored signal ignored).
    // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut c = cmd.spawn().unwrap();
    let work = db.join(format!("ycsb-{}", c.id()));
    let start = std::time::Instant::now();
    // Loading: the directory holds a database.
    while !work.join("loaded").exists() {
        assert!(start.elapsed().as_secs() < 60, "the bench did not start loading");
        assert!(c.try_wait().unwrap().is_none(), "the bench ended before it was stopped");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!dead.exists(), "the directory of a bench that is gone stayed");
    assert!(kept.exists(), "a directory kept by --keep went");
    assert!(users.exists(), "a directory no bench made went");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(Command::new("kill").args(["-INT", &c.id().to_string()]).status().unwrap().success());
    while c.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() > 120 {
            let _ = c.kill();
            panic!("the bench did not stop on SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted; removing"), "{err}");
    assert!(!work.exists(), "a bench stopped with Ctrl-C left {}", work.display());
}
