//! Every workload at a tiny size (~1,000 operations) on Jackdaw, LMDB, redb and SQLite, with full
//! verification: each engine must read back exactly what it wrote (ordered scan, a get of every
//! key, deleted keys absent, and the same after close and reopen), so a broken adapter fails here
//! instead of reporting a fast number. Every workload runs in two rounds (`--repeat 2`), and each
//! engine's median round is its row. No timing assertions.

use jackdaw_bench::engines::Kind;
use jackdaw_bench::workloads::{ColdMethod, Sizes, Verify, Workload};
use jackdaw_bench::{run, Config};
use std::path::PathBuf;

#[test]
fn every_workload_tiny_reads_back_what_it_wrote() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jackdaw-bench-smoke");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let strace = std::process::Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success());
    let engines = vec![Kind::Jackdaw, Kind::Lmdb, Kind::Redb, Kind::Sqlite];
    let cfg = Config {
        engines: engines.clone(),
        workloads: Workload::all(),
        sizes: Sizes::tiny(),
        seed: 20260101,
        dir: base.join("db"),
        json: Some(base.join("run.json")),
        report: Some(base.join("report")),
        verify: Verify::Full,
        progress: false,
        // Leave the machine's page cache alone in tests: fadvise on the database files only.
        cold: ColdMethod::Fadvise,
        strace_exe: strace.then(|| PathBuf::from(env!("CARGO_BIN_EXE_jackdaw-bench"))),
        keep: false,
        print: false,
        verbose: false,
        // Two rounds of everything (every tiny workload is short): one row per engine remains.
        repeat: 2,
    };
    let rep = run(&cfg).expect("run");
    let failures: Vec<String> =
        rep.failures.iter().map(|f| format!("{} on {}: {}", f.engine, f.workload, f.reason)).collect();
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));

    // Every workload produced a row for every engine (large-values reports four rows).
    let mut names: Vec<String> = Vec::new();
    for w in Workload::all() {
        match w {
            Workload::Disk => {}
            Workload::LargeValues => names.extend(
                ["large-values-write-64k", "large-values-write-8m", "large-values-read", "large-values-read-view"]
                    .map(String::from),
            ),
            _ => names.push(w.name()),
        }
    }
    for n in &names {
        for e in &engines {
            if n == "commit-snapshots" && e.name() != "jackdaw" {
                // Jackdaw only: the harness cannot hold the peers' snapshots.
                assert!(!rep.rows.iter().any(|r| &r.workload == n && r.engine == e.name()), "{n} on {}", e.name());
                continue;
            }
            let row = rep.rows.iter().find(|r| &r.workload == n && r.engine == e.name());
            let row = row.unwrap_or_else(|| panic!("no row for {n} on {}", e.name()));
            assert!(row.ops > 0 && row.ops_per_sec > 0.0, "{n} on {}: {row:?}", e.name());
            let rows = rep.rows.iter().filter(|r| &r.workload == n && r.engine == e.name()).count();
            assert_eq!(rows, 1, "{n} on {}: one row, the median round", e.name());
            let mut rounds = row.rounds_ops_per_sec.clone();
            assert_eq!(rounds.len(), 2, "{n} on {}: two rounds ran: {row:?}", e.name());
            rounds.sort_by(f64::total_cmp);
            assert_eq!(row.ops_per_sec, rounds[0], "{n} on {}: the lower middle round is reported", e.name());
        }
    }
    assert!(rep.rows.iter().any(|r| r.workload == "free-space-control" && r.engine == "jackdaw-append"));
    let snaps = rep.rows.iter().find(|r| r.workload == "commit-snapshots").expect("commit-snapshots row");
    assert!(snaps.notes.contains("open") && snaps.latency.is_some(), "{snaps:?}");
    assert_eq!(
        rep.rows.iter().filter(|r| r.workload == "disk").count(),
        3 + jackdaw_bench::disk::DIRECT_KIB.len(),
        "the disk-limit rows: write+fdatasync, one O_DIRECT|O_DSYNC row per size, 400 KiB pwritev, sequential"
    );
    // Durable Jackdaw commits are set against the raw write of their record's size.
    for n in ["fill-rnd-tx-sync", "fill-seq-tx-sync", "fill-rnd-1m"] {
        let r = rep.rows.iter().find(|r| r.workload == n && r.engine == "jackdaw").unwrap();
        assert!(r.commit_vs_raw_write.is_some_and(|x| x > 0.0), "{n}: {r:?}");
    }
    // Jackdaw reports its commit figures.
    let jd = rep.rows.iter().find(|r| r.workload == "fill-rnd-1m" && r.engine == "jackdaw").unwrap();
    assert!(jd.jackdaw.is_some_and(|j| j.pages > 0.0));
    // The report files were written.
    assert!(base.join("run.json").exists());
    assert!(base.join("report/report.md").exists());
    assert!(base.join("report/fill-seq-sync.svg").exists());
    let _ = std::fs::remove_dir_all(&base);
}
