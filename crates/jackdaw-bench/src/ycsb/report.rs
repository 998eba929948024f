//! The `ycsb` output: one summary table (workload × engine: ops/s and the ratio to the best
//! peer) that fits in 100 columns, the detail tables (`--verbose`, and `report.md`), and the
//! charts (throughput against threads per workload; latency percentiles); and the rows they
//! are made from, which `run.rs` fills.

use super::workload::OpKind;
use crate::report::{bytes, markdown_table as table, si};
use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Latency of one operation type, in microseconds (from an HDR histogram of nanoseconds).
#[derive(Debug, Clone, Serialize)]
pub struct OpStats {
    pub op: String,
    pub count: u64,
    /// Operations whose record was absent (YCSB's NOT_FOUND); a correct run has none.
    pub not_found: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl OpStats {
    pub(crate) fn of(op: &str, h: &Histogram<u64>, not_found: u64) -> OpStats {
        let q = |x: f64| h.value_at_quantile(x) as f64 / 1000.0;
        OpStats {
            op: op.to_string(),
            count: h.len(),
            not_found,
            mean_us: h.mean() / 1000.0,
            p50_us: q(0.50),
            p95_us: q(0.95),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: h.max() as f64 / 1000.0,
        }
    }
}

/// One engine's load phase.
#[derive(Debug, Clone, Serialize)]
pub struct LoadRow {
    pub engine: String,
    pub records: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    /// Load throughput over the best peer's.
    pub ratio_to_best_peer: Option<f64>,
    /// Space the closed database takes on disk after the load.
    pub db_bytes: u64,
    /// Key + field bytes of the records loaded (what the application stored).
    pub live_bytes: u64,
    /// `db_bytes / live_bytes`.
    pub disk_per_live: f64,
    pub device_bytes_per_insert: Option<f64>,
    /// Records read back by key and found equal to what was loaded.
    pub verified: u64,
    /// Space on disk per file of the database directory (data file, journal, WAL, ...).
    pub files: Vec<(String, u64)>,
}

/// One workload's run phase on one engine in one pass.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub workload: String,
    pub engine: String,
    pub mode: String,
    pub threads: usize,
    pub ops: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    /// ops/s over the best peer's (non-Jackdaw engine) in the same pass.
    pub ratio_to_best_peer: Option<f64>,
    /// Per operation type, plus `ALL`.
    pub latency: Vec<OpStats>,
    /// Operations that wrote (UPDATE, INSERT, READMODIFYWRITE).
    pub write_ops: u64,
    /// Records returned by the scans.
    pub scanned_records: u64,
    pub db_bytes: u64,
    pub live_bytes: u64,
    pub disk_per_live: f64,
    pub device_bytes_per_write_op: Option<f64>,
    /// `maxexecutiontime` ended the run before `operationcount`.
    pub timed_out: bool,
    /// Space on disk per file of the closed database directory after this workload.
    pub files: Vec<(String, u64)>,
    /// ops/s of every round, in the order they ran, when the pass ran in more than one
    /// (`--repeat`); the row itself is the engine's median round.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_ops_per_sec: Vec<f64>,
}

impl RunRow {
    /// How many operations of `kind` ran.
    pub fn count(&self, kind: OpKind) -> u64 {
        self.latency.iter().find(|s| s.op == kind.name()).map_or(0, |s| s.count)
    }
    /// Operations that found no record.
    pub fn not_found(&self) -> u64 {
        self.latency.iter().filter(|s| s.op != "ALL").map(|s| s.not_found).sum()
    }
}

/// A failed engine.
#[derive(Debug, Clone, Serialize)]
pub struct YcsbFailure {
    pub engine: String,
    pub what: String,
    pub reason: String,
}

/// Everything a `ycsb` run produced.
#[derive(Debug, Clone, Default, Serialize)]
pub struct YcsbReport {
    pub seed: u64,
    pub scale: String,
    pub dir: String,
    pub device: Option<String>,
    pub record_count: i64,
    pub operation_count: i64,
    /// Operations per workload in `sync` passes, when fewer than `operation_count`.
    pub sync_operation_count: Option<i64>,
    pub workloads: Vec<String>,
    pub threads: Vec<usize>,
    pub modes: Vec<String>,
    pub engines: Vec<String>,
    /// How each engine maps the durability modes and serves concurrent clients.
    pub engine_notes: Vec<(String, String)>,
    pub page_cache: String,
    /// Property names no part of the port reads (from the files or `-p`).
    pub unknown_properties: Vec<String>,
    pub loads: Vec<LoadRow>,
    /// Rounds of every pass (`--repeat`): each engine's row is its median round.
    pub rounds: usize,
    pub runs: Vec<RunRow>,
    pub failures: Vec<YcsbFailure>,
    pub total_secs: f64,
}

fn ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |r| format!("{r:.2}×"))
}

fn us(x: f64) -> String {
    if x >= 100_000.0 {
        format!("{:.0} ms", x / 1000.0)
    } else if x >= 10_000.0 {
        format!("{:.1} ms", x / 1000.0)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The passes in the order they ran: (mode, threads).
fn passes(rep: &YcsbReport) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = Vec::new();
    for r in &rep.runs {
        let p = (r.mode.clone(), r.threads);
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

fn find<'a>(rep: &'a YcsbReport, w: &str, e: &str, m: &str, t: usize) -> Option<&'a RunRow> {
    rep.runs.iter().find(|r| r.workload == w && r.engine == e && r.mode == m && r.threads == t)
}

/// The summary: one row per workload and pass, one column per engine (ops/s and ratio to the
/// best peer), then the load and the space rows. At most 100 columns for up to five engines.
pub fn summary(rep: &YcsbReport) -> String {
    let mut head = vec!["wl".to_string(), "pass".into(), "jackdaw ops/s".into(), "best peer".into()];
    head.extend(rep.engines.iter().cloned());
    let pass = |m: &str, t: usize| format!("{m} {t}t");
    let is_peer = |e: &str| !e.starts_with("jackdaw");
    let mut rows = Vec::new();
    for (m, t) in passes(rep) {
        for w in &rep.workloads {
            let best = rep
                .runs
                .iter()
                .filter(|r| &r.workload == w && r.mode == m && r.threads == t && is_peer(&r.engine))
                .map(|r| r.ops_per_sec)
                .fold(0.0f64, f64::max);
            let mut row = vec![
                w.to_uppercase(),
                pass(&m, t),
                find(rep, w, "jackdaw", &m, t).map_or_else(|| "-".into(), |r| si(r.ops_per_sec)),
                if best > 0.0 { si(best) } else { "-".into() },
            ];
            for e in &rep.engines {
                row.push(find(rep, w, e, &m, t).map_or_else(|| "failed".into(), |r| ratio(r.ratio_to_best_peer)));
            }
            rows.push(row);
        }
    }
    let cell = |e: &str, f: &dyn Fn(&LoadRow) -> String| {
        rep.loads.iter().find(|l| l.engine == e).map_or_else(|| "failed".into(), f)
    };
    let best_load = rep.loads.iter().filter(|l| is_peer(&l.engine)).map(|l| l.ops_per_sec).fold(0.0f64, f64::max);
    let mut row = vec![
        "load".to_string(),
        "buff 1t".into(),
        rep.loads.iter().find(|l| l.engine == "jackdaw").map_or_else(|| "-".into(), |l| si(l.ops_per_sec)),
        if best_load > 0.0 { si(best_load) } else { "-".into() },
    ];
    row.extend(rep.engines.iter().map(|e| cell(e, &|l| ratio(l.ratio_to_best_peer))));
    rows.push(row);
    // The seed's "4× the expected disk space": bytes on disk ÷ live key + field bytes.
    let mut row = vec!["space".to_string(), "load".into(), String::new(), String::new()];
    row.extend(rep.engines.iter().map(|e| cell(e, &|l| format!("{:.2}", l.disk_per_live))));
    rows.push(row);
    let mut row = vec!["size".to_string(), "load".into(), String::new(), String::new()];
    row.extend(rep.engines.iter().map(|e| cell(e, &|l| bytes(l.db_bytes as f64))));
    rows.push(row);
    if let Some((m, t)) = passes(rep).first() {
        let w = if rep.workloads.iter().any(|w| w == "a") { "a".to_string() } else { rep.workloads[0].clone() };
        for (label, f) in [
            ("space", &(|r: &RunRow| format!("{:.2}", r.disk_per_live)) as &dyn Fn(&RunRow) -> String),
            ("size", &|r: &RunRow| bytes(r.db_bytes as f64)),
        ] {
            let mut row =
                vec![label.to_string(), format!("{} {}", w.to_uppercase(), pass(m, *t)), String::new(), String::new()];
            row.extend(rep.engines.iter().map(|e| find(rep, &w, e, m, *t).map_or_else(|| "failed".into(), f)));
            rows.push(row);
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Per workload and pass (durability, client threads): ops/s of Jackdaw and of the best peer,\n\
         each engine's ratio to the best peer; space: bytes on disk ÷ key + field bytes stored."
    );
    if rep.rounds > 1 {
        let _ =
            writeln!(s, "Each engine's median of {} rounds (every round's ops/s: --verbose, the JSON).", rep.rounds);
    }
    s.push('\n');
    s.push_str(&table(&head, &rows));
    s
}

/// Every figure per pass and workload: latency per operation type (p50/p95/p99/p99.9/max),
/// sizes, device bytes per write operation; then how each engine was run.
pub fn detail(rep: &YcsbReport) -> String {
    let mut s = String::new();
    for (m, t) in passes(rep) {
        for w in &rep.workloads {
            let _ = writeln!(s, "### {} · {m} · {t} thread{}\n", w.to_uppercase(), if t == 1 { "" } else { "s" });
            let head: Vec<String> = [
                "engine",
                "ops/s",
                "vs best",
                "op",
                "count",
                "p50 µs",
                "p95",
                "p99",
                "p99.9",
                "max",
                "db size",
                "disk÷live",
                "dev B/write op",
            ]
            .iter()
            .map(|x| x.to_string())
            .collect();
            let mut rows = Vec::new();
            for e in &rep.engines {
                let Some(r) = find(rep, w, e, &m, t) else { continue };
                for (i, o) in r.latency.iter().enumerate() {
                    let first = i == 0;
                    let c = |x: String| if first { x } else { String::new() };
                    rows.push(vec![
                        c(e.clone()),
                        c(si(r.ops_per_sec)),
                        c(ratio(r.ratio_to_best_peer)),
                        o.op.clone(),
                        if o.not_found > 0 {
                            format!("{} ({} not found)", o.count, o.not_found)
                        } else {
                            o.count.to_string()
                        },
                        us(o.p50_us),
                        us(o.p95_us),
                        us(o.p99_us),
                        us(o.p999_us),
                        us(o.max_us),
                        c(bytes(r.db_bytes as f64)),
                        c(format!("{:.2}", r.disk_per_live)),
                        c(r.device_bytes_per_write_op.map_or_else(|| "-".into(), bytes)),
                    ]);
                }
            }
            s.push_str(&table(&head, &rows));
            for e in &rep.engines {
                if let Some(r) = find(rep, w, e, &m, t).filter(|r| !r.rounds_ops_per_sec.is_empty()) {
                    let list: Vec<String> = r.rounds_ops_per_sec.iter().map(|x| si(*x)).collect();
                    let _ = writeln!(s, "\n{e}: median of {} rounds (ops/s: {})", list.len(), list.join(", "));
                }
            }
            s.push('\n');
        }
    }
    let _ = writeln!(s, "### Load\n");
    let head: Vec<String> = [
        "engine",
        "records",
        "rec/s",
        "vs best",
        "s",
        "db size",
        "live",
        "disk÷live",
        "dev B/insert",
        "verified",
        "files",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let rows: Vec<Vec<String>> = rep
        .loads
        .iter()
        .map(|l| {
            vec![
                l.engine.clone(),
                l.records.to_string(),
                si(l.ops_per_sec),
                ratio(l.ratio_to_best_peer),
                format!("{:.2}", l.secs),
                bytes(l.db_bytes as f64),
                bytes(l.live_bytes as f64),
                format!("{:.2}", l.disk_per_live),
                l.device_bytes_per_insert.map_or_else(|| "-".into(), bytes),
                l.verified.to_string(),
                l.files.iter().map(|(n, b)| format!("{n} {}", bytes(*b as f64))).collect::<Vec<_>>().join(", "),
            ]
        })
        .collect();
    s.push_str(&table(&head, &rows));
    let _ = writeln!(s, "\n### Engines\n");
    for (e, n) in &rep.engine_notes {
        let _ = writeln!(s, "- {e}: {n}");
    }
    let _ = writeln!(s, "\npage cache: {}", rep.page_cache);
    if !rep.unknown_properties.is_empty() {
        let _ = writeln!(s, "unknown properties (not read): {}", rep.unknown_properties.join("; "));
    }
    s
}

pub fn failures(rep: &YcsbReport) -> String {
    let mut s = String::new();
    for f in &rep.failures {
        let _ = writeln!(s, "FAILED: {} {}: {}", f.engine, f.what, f.reason);
    }
    s
}

/// Write `report.md` (summary and detail) and the charts into `dir`.
pub fn write_dir(rep: &YcsbReport, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let mut md = String::new();
    let _ = writeln!(md, "# jackdaw-bench ycsb\n");
    let _ = writeln!(
        md,
        "seed {} · scale {} · {} records · {} operations per workload · threads {:?} · durability {} · {:.0} s\n",
        rep.seed,
        rep.scale,
        rep.record_count,
        rep.operation_count,
        rep.threads,
        rep.modes.join(", "),
        rep.total_secs
    );
    let _ = writeln!(md, "## Summary\n\n{}", summary(rep));
    let mut charts = String::new();
    for w in &rep.workloads {
        for m in &rep.modes {
            if rep.threads.len() > 1 {
                let f = format!("ycsb-{w}-{m}-throughput.svg");
                throughput_chart(rep, w, m, &dir.join(&f))?;
                let _ = writeln!(charts, "![{w} {m} throughput]({f})");
            }
            if let Some(t) = rep.threads.first() {
                let f = format!("ycsb-{w}-{m}-{t}t-latency.svg");
                latency_chart(rep, w, m, *t, &dir.join(&f))?;
                let _ = writeln!(charts, "![{w} {m} latency]({f})");
            }
        }
    }
    let _ = writeln!(md, "\n## Charts\n\n{charts}");
    let _ = writeln!(md, "\n## Detail\n\n{}", detail(rep));
    let f = failures(rep);
    if !f.is_empty() {
        let _ = writeln!(md, "\n## Failed or skipped\n\n```\n{f}```");
    }
    std::fs::write(dir.join("report.md"), md)?;
    Ok(())
}

const PALETTE: [plotters::style::RGBColor; 6] = [
    plotters::style::RGBColor(200, 60, 40),
    plotters::style::RGBColor(70, 110, 190),
    plotters::style::RGBColor(90, 160, 90),
    plotters::style::RGBColor(200, 150, 40),
    plotters::style::RGBColor(130, 90, 170),
    plotters::style::RGBColor(90, 90, 90),
];

fn svg_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("svg: {e}")
}

/// ops/s against thread count, one line per engine.
fn throughput_chart(rep: &YcsbReport, w: &str, m: &str, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let max_t = rep.threads.iter().copied().max().unwrap_or(1) as f64;
    let max_y =
        rep.runs.iter().filter(|r| r.workload == w && r.mode == m).map(|r| r.ops_per_sec).fold(1.0, f64::max) * 1.15;
    let root = SVGBackend::new(path, (640, 400)).into_drawing_area();
    root.fill(&WHITE).map_err(svg_err)?;
    let mut ch = ChartBuilder::on(&root)
        .caption(format!("YCSB {} ({m}) — ops/s against threads", w.to_uppercase()), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0.5f64..max_t + 0.5, 0f64..max_y)
        .map_err(svg_err)?;
    ch.configure_mesh()
        .light_line_style(WHITE)
        .x_desc("threads")
        .y_desc("ops/s")
        .y_label_formatter(&|y| si(*y))
        .draw()
        .map_err(svg_err)?;
    for (i, e) in rep.engines.iter().enumerate() {
        let pts: Vec<(f64, f64)> =
            rep.threads.iter().filter_map(|t| find(rep, w, e, m, *t).map(|r| (*t as f64, r.ops_per_sec))).collect();
        let c = if e.starts_with("jackdaw") { PALETTE[0] } else { PALETTE[1 + i % 5] };
        ch.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(svg_err)?
            .label(e.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(svg_err)?;
    }
    ch.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(svg_err)?;
    root.present().map_err(svg_err)?;
    Ok(())
}

/// Latency percentiles (all operations) per engine, log scale.
fn latency_chart(rep: &YcsbReport, w: &str, m: &str, t: usize, path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let pts_of = |r: &RunRow| -> Vec<(f64, f64)> {
        r.latency
            .iter()
            .find(|o| o.op == "ALL")
            .map(|o| vec![(0.0, o.p50_us), (1.0, o.p95_us), (2.0, o.p99_us), (3.0, o.p999_us), (4.0, o.max_us)])
            .unwrap_or_default()
    };
    let all: Vec<f64> = rep
        .runs
        .iter()
        .filter(|r| r.workload == w && r.mode == m && r.threads == t)
        .flat_map(&pts_of)
        .map(|p| p.1)
        .collect();
    let lo = all.iter().copied().fold(f64::MAX, f64::min).max(0.01) / 1.5;
    let hi = all.iter().copied().fold(0.0, f64::max).max(lo * 10.0) * 1.5;
    let root = SVGBackend::new(path, (640, 400)).into_drawing_area();
    root.fill(&WHITE).map_err(svg_err)?;
    let mut ch = ChartBuilder::on(&root)
        .caption(format!("YCSB {} ({m}, {t} thread) — latency, all operations", w.to_uppercase()), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.2f64..4.2, (lo..hi).log_scale())
        .map_err(svg_err)?;
    let names = ["p50", "p95", "p99", "p99.9", "max"];
    ch.configure_mesh()
        .light_line_style(WHITE)
        .x_labels(5)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && (0.0..5.0).contains(&i) {
                names[i as usize].to_string()
            } else {
                String::new()
            }
        })
        .y_desc("µs")
        .draw()
        .map_err(svg_err)?;
    for (i, e) in rep.engines.iter().enumerate() {
        let Some(r) = find(rep, w, e, m, t) else { continue };
        let pts = pts_of(r);
        let c = if e.starts_with("jackdaw") { PALETTE[0] } else { PALETTE[1 + i % 5] };
        ch.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(svg_err)?
            .label(e.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        ch.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(svg_err)?;
    }
    ch.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(svg_err)?;
    root.present().map_err(svg_err)?;
    Ok(())
}
