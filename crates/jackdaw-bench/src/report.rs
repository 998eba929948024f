//! Result rows, the tables printed on the terminal and written as Markdown, the SVG charts, and
//! the JSON file.

use crate::engine::JackdawCommit;
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Percentiles of a latency sample, in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Latency {
    pub fn of(samples: &mut [Duration]) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let at = |q: usize| samples[((n * q) / 100).min(n - 1)].as_secs_f64() * 1e6;
        Some(Latency { p50_us: at(50), p99_us: at(99), max_us: samples[n - 1].as_secs_f64() * 1e6 })
    }
}

/// Jackdaw's `CommitStats`, averaged per transaction.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct JackdawPerTx {
    pub pages: f64,
    pub written_once_pages: f64,
    pub journal_bytes_full: f64,
    pub journal_bytes_raw: f64,
    pub journal_bytes_written: f64,
}

impl JackdawPerTx {
    pub fn of(total: &JackdawCommit, txs: u64) -> JackdawPerTx {
        let d = txs.max(1) as f64;
        JackdawPerTx {
            pages: total.pages as f64 / d,
            written_once_pages: total.written_once_pages as f64 / d,
            journal_bytes_full: total.journal_bytes_full as f64 / d,
            journal_bytes_raw: total.journal_bytes_raw as f64 / d,
            journal_bytes_written: total.journal_bytes_written as f64 / d,
        }
    }
}

/// One workload run by one engine (or one physical-limit measurement).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    pub workload: String,
    pub engine: String,
    /// How the engine maps the workload's durability mode (empty for reads).
    pub mode: String,
    pub ops: u64,
    pub txs: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    /// ops/s divided by the best peer's (non-Jackdaw engine) ops/s in this run.
    pub ratio_to_best_peer: Option<f64>,
    pub mb_per_sec: Option<f64>,
    /// Bytes written to the block device per operation (sectors written × 512 / ops).
    pub device_bytes_per_op: Option<f64>,
    /// Flush requests completed by the block device per transaction.
    pub device_flushes_per_tx: Option<f64>,
    /// `/proc/self/io` `write_bytes` per operation (secondary: over-counts small writes).
    pub proc_write_bytes_per_op: Option<f64>,
    /// Space the database takes on disk at the end (allocated blocks): `data_bytes +
    /// journal_bytes`.
    pub db_bytes: Option<u64>,
    /// Cold reads: bytes the timed reads fetched from the block device (a cache drop that did
    /// not reach the engine's pages shows as far less than the database's size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_read_bytes: Option<u64>,
    /// Cold reads: MB/s of a plain sequential read of the database's files right after the
    /// timed read and a second drop (`device::read_files_mb_per_sec`): the device's speed for
    /// these files in this round, against which `mb_per_sec` is judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_control_mb_per_sec: Option<f64>,
    /// Of `db_bytes`, the engine's data files (everything its adapter does not call journal:
    /// `Kind::is_journal_file`).
    pub data_bytes: Option<u64>,
    /// Of `db_bytes`, the engine's journal / write-ahead log files.
    pub journal_bytes: Option<u64>,
    /// The logical bytes the workload left in the database: the keys and values of the pairs
    /// present at the end, counted from what the workload wrote (the same for every engine).
    pub live_bytes: Option<u64>,
    /// `db_bytes / live_bytes`: the space amplification on disk.
    pub space_amp: Option<f64>,
    /// Commit latency (multi-transaction workloads) or per-operation latency (disk rows).
    pub latency: Option<Latency>,
    pub jackdaw: Option<JackdawPerTx>,
    pub syscalls_per_commit: Option<f64>,
    /// Jackdaw, durable multi-transaction workloads: commit p50 divided by the p50 of a raw
    /// `O_DIRECT|O_DSYNC` write of the journal record's size in this run (the disk rows,
    /// interpolated: `disk::raw_direct_p50_us`).
    pub commit_vs_raw_write: Option<f64>,
    pub notes: String,
    /// ops/s of every round, in the order they ran, when the workload ran in more than one
    /// (`--repeat`); the row itself is the median round.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_ops_per_sec: Vec<f64>,
    /// Cold reads run in more than one round: each round's `cold_control_mb_per_sec`, in the
    /// same order (a slow round whose control is slow too was the device's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_cold_control_mb_per_sec: Vec<f64>,
}

/// A failed or skipped engine.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub workload: String,
    pub engine: String,
    pub skipped: bool,
    pub reason: String,
}

/// Everything one run produced.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub seed: u64,
    pub scale: String,
    pub dir: String,
    pub fs_type: String,
    pub mount_point: String,
    pub device: Option<String>,
    pub cold_cache_method: Option<String>,
    pub engines: Vec<String>,
    pub mode_mapping: Vec<(String, [String; 3])>,
    pub rows: Vec<Row>,
    pub failures: Vec<Failure>,
    pub total_secs: f64,
}

/// One row per (workload, engine), in first-seen order: the engine's median round by ops/s (the
/// lower middle one of an even count), the same rule for every engine, so that one stall of a
/// shared machine moves no ratio. Its notes list every round's ops/s (and, for cold reads, every
/// round's control).
pub fn median_rounds(rows: Vec<Row>) -> Vec<Row> {
    let mut groups: Vec<Vec<Row>> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|g| g[0].workload == r.workload && g[0].engine == r.engine) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 {
                return g.remove(0);
            }
            let controls: Vec<f64> = g.iter().filter_map(|r| r.cold_control_mb_per_sec).collect();
            let (mut m, all) = median_of(g, |r| r.ops_per_sec);
            let list: Vec<String> = all.iter().map(|x| si(*x)).collect();
            let mut note = format!("median of {} rounds (ops/s: {})", all.len(), list.join(", "));
            if controls.len() == all.len() {
                let c: Vec<String> = controls.iter().map(|x| format!("{x:.0}")).collect();
                note = format!("{note}, their controls (MB/s: {})", c.join(", "));
                m.rounds_cold_control_mb_per_sec = controls;
            }
            m.notes = if m.notes.is_empty() { note } else { format!("{}; {note}", m.notes) };
            m.rounds_ops_per_sec = all;
            m
        })
        .collect()
}

/// The median member of a non-empty `group` by `key` (the lower middle one of an even count:
/// the same rule for every engine), and every member's key in the group's order.
pub fn median_of<T>(mut group: Vec<T>, key: impl Fn(&T) -> f64) -> (T, Vec<f64>) {
    let all: Vec<f64> = group.iter().map(&key).collect();
    let mut order: Vec<usize> = (0..group.len()).collect();
    order.sort_by(|a, b| all[*a].total_cmp(&all[*b]));
    (group.swap_remove(order[order.len().saturating_sub(1) / 2]), all)
}

/// Fill in the ratio column of every row of `workload`: ops/s over the best peer's ops/s.
pub fn set_ratios(rows: &mut [Row], workload: &str, is_peer: impl Fn(&str) -> bool) {
    let best = rows
        .iter()
        .filter(|r| r.workload == workload && is_peer(&r.engine) && r.ops_per_sec > 0.0)
        .map(|r| r.ops_per_sec)
        .fold(0.0f64, f64::max);
    for r in rows.iter_mut().filter(|r| r.workload == workload) {
        r.ratio_to_best_peer = (best > 0.0).then(|| r.ops_per_sec / best);
    }
}

pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.0} k", x / 1e3)
    } else if a >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

pub fn bytes(x: f64) -> String {
    let a = x.abs();
    if a >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", x / (1024.0 * 1024.0 * 1024.0))
    } else if a >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", x / (1024.0 * 1024.0))
    } else if a >= 10.0 * 1024.0 {
        format!("{:.0} KiB", x / 1024.0)
    } else if a >= 100.0 {
        format!("{x:.0} B")
    } else {
        format!("{x:.1} B")
    }
}

fn us(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.1} ms", x / 1000.0)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

type Col = (&'static str, fn(&Row) -> Option<String>);

const COLUMNS: &[Col] = &[
    ("engine", |r| Some(r.engine.clone())),
    ("ops/s", |r| (r.ops > 0).then(|| si(r.ops_per_sec))),
    ("vs best peer", |r| r.ratio_to_best_peer.map(|x| format!("{x:.2}×"))),
    ("MB/s", |r| r.mb_per_sec.map(|x| format!("{x:.0}"))),
    ("dev bytes/op", |r| r.device_bytes_per_op.map(bytes)),
    ("dev flushes/tx", |r| r.device_flushes_per_tx.map(|x| format!("{x:.2}"))),
    ("write_bytes/op", |r| r.proc_write_bytes_per_op.map(bytes)),
    ("db size", |r| r.db_bytes.map(|b| bytes(b as f64))),
    ("dev read", |r| r.device_read_bytes.map(|b| bytes(b as f64))),
    ("size ÷ live", |r| r.space_amp.map(|x| format!("{x:.2}×"))),
    ("latency p50 / p99 / max µs", |r| {
        r.latency.map(|l| format!("{} / {} / {}", us(l.p50_us), us(l.p99_us), us(l.max_us)))
    }),
    ("syscalls/commit", |r| r.syscalls_per_commit.map(|x| format!("{x:.1}"))),
    ("jd pages/tx", |r| r.jackdaw.map(|j| si(j.pages))),
    ("jd journal B/tx full → raw → written", |r| {
        r.jackdaw.map(|j| {
            format!(
                "{} → {} → {}",
                bytes(j.journal_bytes_full),
                bytes(j.journal_bytes_raw),
                bytes(j.journal_bytes_written)
            )
        })
    }),
    ("mode", |r| (!r.mode.is_empty()).then(|| r.mode.clone())),
    ("notes", |r| (!r.notes.is_empty()).then(|| r.notes.clone())),
];

/// The rows of one workload as a Markdown table, leaving out columns no row fills. Cells that
/// a row lacks where another has them read `n/a`.
pub fn table(rows: &[&Row]) -> String {
    let cols: Vec<&Col> = COLUMNS.iter().filter(|(_, f)| rows.iter().any(|r| f(r).is_some())).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cols.iter().map(|(_, f)| f(r).unwrap_or_else(|| "n/a".into()).replace('|', "\\|")).collect())
        .collect();
    let head: Vec<String> = cols.iter().map(|(h, _)| h.to_string()).collect();
    markdown_table(&head, &cells)
}

/// The summary of a run: one row per workload, Jackdaw's ops/s, the best peer's, and every
/// engine's ratio to the best peer (the disk-limit rows are in the detail only). Fits in 100
/// columns for five engines.
pub fn summary(rep: &Report) -> String {
    let engines: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in rep.rows.iter().filter(|r| r.workload != "disk") {
            if !v.contains(&r.engine) {
                v.push(r.engine.clone());
            }
        }
        v
    };
    let short = |e: &str| if e == "jackdaw-append" { "jd-append".to_string() } else { e.to_string() };
    let mut head = vec!["workload".to_string(), "jackdaw ops/s".into(), "best peer".into()];
    head.extend(engines.iter().map(|e| short(e)));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for w in workloads_in_order(&rep.rows).into_iter().filter(|w| w != "disk") {
        let of = |e: &str| rep.rows.iter().find(|r| r.workload == w && r.engine == e);
        let best = rep
            .rows
            .iter()
            .filter(|r| r.workload == w && !r.engine.starts_with("jackdaw"))
            .map(|r| r.ops_per_sec)
            .fold(0.0f64, f64::max);
        let mut row = vec![
            w.clone(),
            of("jackdaw").map_or_else(|| "-".into(), |r| si(r.ops_per_sec)),
            if best > 0.0 { si(best) } else { "-".into() },
        ];
        row.extend(
            engines
                .iter()
                .map(|e| of(e).and_then(|r| r.ratio_to_best_peer).map_or_else(|| "-".into(), |x| format!("{x:.2}×"))),
        );
        rows.push(row);
    }
    format!(
        "ops/s of Jackdaw and of the best peer; each engine's ratio to the best peer.\n\n{}",
        markdown_table(&head, &rows)
    )
}

/// The space table: for every workload that measured its size on disk and every engine, the data
/// files, the journal files, their total, the live bytes, total ÷ live, and the total against
/// LMDB's in the same workload. Empty when no row measured a size.
pub fn space_table(rep: &Report) -> String {
    let rows: Vec<&Row> = rep.rows.iter().filter(|r| r.db_bytes.is_some() && r.workload != "disk").collect();
    if rows.is_empty() {
        return String::new();
    }
    let lmdb = |w: &str| rep.rows.iter().find(|r| r.workload == w && r.engine == "lmdb").and_then(|r| r.db_bytes);
    let opt = |b: Option<u64>| b.map_or_else(|| "n/a".to_string(), |b| bytes(b as f64));
    let head = ["workload", "engine", "data", "journal", "total", "live", "total ÷ live", "vs lmdb"];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let total = r.db_bytes.unwrap_or(0);
            vec![
                r.workload.clone(),
                r.engine.clone(),
                opt(r.data_bytes),
                opt(r.journal_bytes),
                bytes(total as f64),
                opt(r.live_bytes),
                r.space_amp.map_or_else(|| "n/a".into(), |x| format!("{x:.2}×")),
                lmdb(&r.workload)
                    .filter(|l| *l > 0)
                    .map_or_else(|| "n/a".into(), |l| format!("{:.2}×", total as f64 / l as f64)),
            ]
        })
        .collect();
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    format!(
        "Size on disk after close: data files, journal files, total, ÷ live key+value bytes.\n\n{}",
        markdown_table(&head, &cells)
    )
}

/// Lay out rows of cells as a Markdown table with padded columns (every table the bench prints).
pub fn markdown_table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(w.len()) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    let line = |s: &mut String, cells: &[String]| {
        s.push('|');
        for (i, c) in cells.iter().enumerate().take(w.len()) {
            let _ = write!(s, " {c}{} |", " ".repeat(w[i] - c.chars().count()));
        }
        s.push('\n');
    };
    line(&mut s, head);
    line(&mut s, &w.iter().map(|x| "-".repeat(*x)).collect::<Vec<_>>());
    for r in rows {
        line(&mut s, r);
    }
    s
}

/// Workload names in the order their rows first appear.
pub fn workloads_in_order(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r.workload) {
            out.push(r.workload.clone());
        }
    }
    out
}

pub fn header(rep: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "seed {} · scale {} · dir {} ({} on {}, device {})",
        rep.seed,
        rep.scale,
        rep.dir,
        rep.fs_type,
        rep.mount_point,
        rep.device.as_deref().unwrap_or("n/a")
    );
    if let Some(m) = &rep.cold_cache_method {
        let _ = writeln!(s, "cold reads: page cache dropped with {m}");
    }
    let _ = writeln!(s, "durability mapping (none / buff / sync):");
    for (e, m) in &rep.mode_mapping {
        let _ = writeln!(s, "  {e}: {} / {} / {}", m[0], m[1], m[2]);
    }
    s
}

pub fn failures(rep: &Report) -> String {
    let mut s = String::new();
    for f in &rep.failures {
        let what = if f.skipped { "SKIPPED" } else { "FAILED" };
        let _ = writeln!(s, "{what}: {} on {}: {}", f.engine, f.workload, f.reason);
    }
    s
}

/// Write `report.md` (every table) and one SVG chart per workload into `dir`.
pub fn write_report_dir(rep: &Report, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let mut md = String::new();
    let _ = writeln!(md, "# jackdaw-bench report\n");
    let _ = writeln!(md, "```\n{}```\n", header(rep));
    let _ = writeln!(md, "## Summary\n\n{}", summary(rep));
    let space = space_table(rep);
    if !space.is_empty() {
        let _ = writeln!(md, "## Space\n\n{space}");
    }
    for w in workloads_in_order(&rep.rows) {
        let rows: Vec<&Row> = rep.rows.iter().filter(|r| r.workload == w).collect();
        let svg = format!("{w}.svg");
        chart(&w, &rows, &dir.join(&svg))?;
        let _ = writeln!(md, "## {w}\n\n{}\n![{w}]({svg})\n", table(&rows));
    }
    let f = failures(rep);
    if !f.is_empty() {
        let _ = writeln!(md, "## Failed or skipped\n\n```\n{f}```");
    }
    std::fs::write(dir.join("report.md"), md)?;
    Ok(())
}

/// A bar chart of one workload: ops/s (MB/s for the large-values rows, p50 latency for the disk
/// limits) per engine.
fn chart(workload: &str, rows: &[&Row], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let (metric, vals): (&str, Vec<(String, f64)>) =
        if workload != "disk" && rows.iter().all(|r| r.mb_per_sec.is_some()) {
            ("MB/s", rows.iter().map(|r| (r.engine.clone(), r.mb_per_sec.unwrap_or(0.0))).collect())
        } else if workload == "disk" {
            ("p50 latency, µs", rows.iter().filter_map(|r| r.latency.map(|l| (r.engine.clone(), l.p50_us))).collect())
        } else {
            ("ops/s", rows.iter().map(|r| (r.engine.clone(), r.ops_per_sec)).collect())
        };
    let max = vals.iter().map(|v| v.1).fold(0.0f64, f64::max).max(1.0) * 1.25;
    let n = vals.len().max(1);
    let root = SVGBackend::new(path, (160 + 110 * n as u32, 380)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    let mut ch = ChartBuilder::on(&root)
        .caption(format!("{workload} — {metric}"), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, 0f64..max)
        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    ch.configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_labels(0)
        .y_label_formatter(&|y| si(*y))
        .y_desc(metric)
        .draw()
        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    let palette = [
        RGBColor(200, 60, 40),
        RGBColor(70, 110, 190),
        RGBColor(90, 160, 90),
        RGBColor(200, 150, 40),
        RGBColor(130, 90, 170),
        RGBColor(90, 90, 90),
    ];
    ch.draw_series(vals.iter().enumerate().map(|(i, (name, v))| {
        let c = if name.starts_with("jackdaw") { palette[0] } else { palette[1 + i % (palette.len() - 1)] };
        Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, *v)], c.filled())
    }))
    .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    ch.draw_series(
        vals.iter()
            .enumerate()
            .map(|(i, (_, v))| Text::new(si(*v), (i as f64 + 0.15, *v + max * 0.13), ("sans-serif", 13).into_font())),
    )
    .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    ch.draw_series(vals.iter().enumerate().map(|(i, (name, v))| {
        Text::new(name.clone(), (i as f64 + 0.15, *v + max * 0.075), ("sans-serif", 12).into_font())
    }))
    .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    Ok(())
}

/// Write the whole report as JSON.
pub fn write_json(rep: &Report, path: &Path) -> Result<()> {
    let s = serde_json::to_string_pretty(rep)?;
    std::fs::write(path, s).with_context(|| format!("write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(w: &str, e: &str, ops: f64) -> Row {
        Row { workload: w.into(), engine: e.into(), ops_per_sec: ops, notes: "n".into(), ..Row::default() }
    }

    #[test]
    fn the_median_round_of_each_engine_is_kept() {
        let rows = vec![
            row("a", "x", 5.0),
            row("a", "y", 1.0),
            row("a", "x", 9.0),
            row("a", "y", 2.0),
            row("a", "x", 7.0),
            row("b", "x", 3.0),
        ];
        let m = median_rounds(rows);
        let got: Vec<(&str, &str, f64)> =
            m.iter().map(|r| (r.workload.as_str(), r.engine.as_str(), r.ops_per_sec)).collect();
        // Odd count: the middle one; even: the lower middle; a single round stays as it was.
        assert_eq!(got, vec![("a", "x", 7.0), ("a", "y", 1.0), ("b", "x", 3.0)]);
        assert_eq!(m[0].rounds_ops_per_sec, vec![5.0, 9.0, 7.0]);
        assert!(m[0].notes.starts_with("n; median of 3 rounds"), "{}", m[0].notes);
        assert!(m[2].rounds_ops_per_sec.is_empty() && m[2].notes == "n");
        assert!(m[0].rounds_cold_control_mb_per_sec.is_empty(), "no controls, none listed");
        // Cold reads: every round's control is kept, in the rounds' order.
        let cold = |ops: f64, ctl: f64| Row { cold_control_mb_per_sec: Some(ctl), ..row("c", "x", ops) };
        let m = median_rounds(vec![cold(4.0, 400.0), cold(8.0, 1400.0), cold(6.0, 1300.0)]);
        assert_eq!(m[0].ops_per_sec, 6.0);
        assert_eq!(m[0].rounds_cold_control_mb_per_sec, vec![400.0, 1400.0, 1300.0]);
        assert!(m[0].notes.ends_with("their controls (MB/s: 400, 1400, 1300)"), "{}", m[0].notes);
    }

    #[test]
    fn the_space_table_gives_every_split_and_the_ratio_to_lmdb() {
        let sized = |e: &str, data: u64, journal: u64| Row {
            db_bytes: Some(data + journal),
            data_bytes: Some(data),
            journal_bytes: Some(journal),
            live_bytes: Some(1 << 20),
            space_amp: Some((data + journal) as f64 / (1 << 20) as f64),
            ..row("fill-x", e, 1.0)
        };
        let rep = Report {
            rows: vec![sized("jackdaw", 3 << 20, 1 << 20), sized("lmdb", 5 << 20, 0), row("read-x", "lmdb", 1.0)],
            ..Report::default()
        };
        let t = space_table(&rep);
        let lines: Vec<&str> = t.lines().filter(|l| l.starts_with("| fill-x")).collect();
        assert_eq!(lines.len(), 2, "{t}");
        let cols =
            |l: &str| l.split('|').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>();
        assert_eq!(cols(lines[0]), ["fill-x", "jackdaw", "3.0 MiB", "1.0 MiB", "4.0 MiB", "1.0 MiB", "4.00×", "0.80×"]);
        assert_eq!(cols(lines[1])[6..], ["5.00×", "1.00×"]);
        assert!(!t.contains("read-x"), "rows without a size are left out: {t}");
        assert!(space_table(&Report::default()).is_empty());
    }
}
