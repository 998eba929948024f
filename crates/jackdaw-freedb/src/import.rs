//! `freedb import`: read, parse and write stages on their own threads joined by bounded
//! channels; writes as `WriteBatch`es of `batch` albums (or plain write transactions), each
//! carrying the resume mark of the albums it holds; `--resume` continues after the last
//! committed batch.

use crate::db::{Db, ImportMark, Index, Prepared, MARK_KEY};
use crate::device::Window;
use crate::input::{read_entries, RawEntry};
use crate::parse::{parse, Album, Warning};
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use jackdaw::{BatchHandle, Env, WriteBatch};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

/// How the writer commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// `Env::write_batch_async`: one batch building while the previous one commits.
    Batch,
    /// A plain write transaction per batch.
    Txn,
}

/// What `import` does.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Albums per batch.
    pub batch: usize,
    /// How to commit.
    pub mode: Mode,
    /// Continue an interrupted import.
    pub resume: bool,
    /// Build `ix_tracks`.
    pub track_index: bool,
    /// Build the word indexes.
    pub words: bool,
    /// Show progress bars (on a terminal).
    pub progress: bool,
    /// Print `committed N` on stdout after each committed batch (for the kill tests and the demo).
    pub report_commits: bool,
    /// Stop after this many albums (the rest stays for `--resume`).
    pub limit: Option<u64>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            batch: 1000,
            mode: Mode::Batch,
            resume: false,
            track_index: false,
            words: false,
            progress: false,
            report_commits: false,
            limit: None,
        }
    }
}

/// The result of an import (the whole import's counts, earlier interrupted runs included; the
/// times and rates are this run's).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Albums in the database.
    pub albums: u64,
    /// Entries skipped (not xmcd, no disc id, too large).
    pub skipped: u64,
    /// Warnings by kind.
    pub warnings: BTreeMap<String, u64>,
    /// Index entries per index tree.
    pub index_entries: BTreeMap<String, u64>,
    /// Entries read in this run.
    pub read: u64,
    /// Albums written in this run.
    pub written: u64,
    /// Where this run started (entries skipped over on resume).
    pub started_at_entry: u64,
    /// Wall time of this run.
    pub seconds: f64,
    /// Entries per second, read stage (this run).
    pub read_rate: f64,
    /// Entries per second, parse stage.
    pub parse_rate: f64,
    /// Albums per second, write stage (wall).
    pub write_rate: f64,
    /// Seconds the writer spent building batches and waiting for commits (not waiting for
    /// parsed entries).
    pub write_busy_seconds: f64,
    /// Database size on disk, bytes.
    pub db_bytes: u64,
    /// Bytes written to the block device per album written (None if not measurable).
    pub device_bytes_per_album: Option<f64>,
    /// The whole source is in.
    pub done: bool,
}

impl Summary {
    /// The summary as lines for a person.
    pub fn print(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "albums         {:>12}  (this run: {} written, {} entries read",
            self.albums, self.written, self.read
        )?;
        writeln!(
            out,
            "                              {})",
            if self.started_at_entry > 0 {
                format!("resumed at entry {}", self.started_at_entry)
            } else {
                "from the start".into()
            }
        )?;
        writeln!(out, "skipped        {:>12}  (not xmcd, no disc id, too large)", self.skipped)?;
        for (k, v) in &self.index_entries {
            writeln!(out, "{k:<15}{v:>12}  index entries")?;
        }
        let w: Vec<String> = self.warnings.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "warnings       {:>12}  {}", self.warnings.values().sum::<u64>(), w.join(", "))?;
        writeln!(
            out,
            "time           {:>11.1}s  read {:.0}/s, parsed {:.0}/s, written {:.0} albums/s (writer busy {:.1}s)",
            self.seconds, self.read_rate, self.parse_rate, self.write_rate, self.write_busy_seconds
        )?;
        writeln!(out, "database       {:>9.1} MB", self.db_bytes as f64 / 1e6)?;
        match self.device_bytes_per_album {
            Some(b) => {
                writeln!(out, "device bytes   {b:>12.0}  per album written (block device, window closed by sync)")?
            }
            None => writeln!(out, "device bytes            -  (no block device under the database)")?,
        }
        if !self.done {
            writeln!(out, "not finished: `freedb import --resume` continues it")?;
        }
        Ok(())
    }
}

enum Outcome {
    /// The source was read to its end.
    End,
    Album(Prepared, Vec<Warning>),
    Skipped,
}

struct Item {
    seq: u64,
    outcome: Outcome,
}

fn bar(mp: &MultiProgress, prefix: &'static str, unit: &'static str) -> ProgressBar {
    let b = mp.add(ProgressBar::new_spinner());
    b.set_style(
        ProgressStyle::with_template(&format!("{{prefix:>8}} {{pos:>10}} {unit} {{per_sec:>14}}  {{elapsed}}"))
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    b.set_prefix(prefix);
    b.enable_steady_tick(Duration::from_millis(200));
    b
}

/// Import `source` into the database in `dir`.
pub fn import(source: &Path, dir: &Path, opts: &ImportOptions) -> Result<Summary> {
    if opts.batch == 0 || opts.batch as u64 > crate::MAX_BATCH {
        bail!("--batch must be from 1 to {} albums", crate::MAX_BATCH);
    }
    let source_name = source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    crate::input::source_kind(source)?;
    let made = Made { dir: !dir.exists(), db: (dir.is_dir() || !dir.exists()) && !dir.join("data.jdb").exists() };
    let db = Db::open(dir).map_err(|e| made.take_back(e, dir))?;
    let r = db.env.read()?;
    let prior = db.mark(&r)?;
    let existing = db.albums.len(&r)?;
    drop(r);
    let mut mark = match prior {
        Some(m) if !opts.resume => bail!(
            "{} already holds an import of {} ({} albums, {}): {}, or import into a new directory",
            dir.display(),
            m.source,
            m.albums,
            if m.done { "complete".to_string() } else { format!("stopped after entry {}", m.position) },
            if m.source == source_name {
                format!("run `freedb import --resume {} {}` to continue it", source.display(), dir.display())
            } else {
                format!("`freedb import --resume` continues it from {} (not {})", m.source, source_name)
            }
        ),
        Some(m) => {
            if m.source != source_name {
                bail!(
                    "{} holds an import of {}, not of {}: resume it from the same source",
                    dir.display(),
                    m.source,
                    source_name
                );
            }
            m
        }
        None if existing > 0 => {
            bail!("{} holds {existing} albums but no import mark: not a freedb import", dir.display())
        }
        None => {
            ImportMark { source: source_name, indexes: Index::set(opts.track_index, opts.words), ..Default::default() }
        }
    };
    let ix = db.create_indexes(&mark.indexes)?;
    let started_at = mark.position;
    // The device window opens with a `sync` (of everything dirty on the disk, e.g. a freshly
    // generated archive): before the clock starts.
    let window = Window::open(dir);
    let start = Instant::now();
    if mark.done {
        return finish(db, &ix, &mark, Stage::default(), start, &window, started_at);
    }

    let mp = MultiProgress::with_draw_target(if opts.progress {
        ProgressDrawTarget::stderr_with_hz(5)
    } else {
        ProgressDrawTarget::hidden()
    });
    let (b_read, b_parse, b_write) =
        (bar(&mp, "read", "entries"), bar(&mp, "parsed", "entries"), bar(&mp, "written", "albums "));
    b_write.set_position(mark.albums);
    // `None` after the last entry: the source was read to its end (a channel that closes
    // without it means the read stage failed, and the import is not marked done).
    let (tx_raw, rx_raw) = sync_channel::<Option<RawEntry>>(2048);
    let (tx_item, rx_item) = sync_channel::<Item>(2048);
    let limit = opts.limit;
    let mut stage = Stage::default();

    let written = std::thread::scope(|s| -> Result<u64> {
        let reader = s.spawn(|| -> Result<(u64, Instant)> {
            let mut n = 0u64;
            read_entries(source, started_at, |e| {
                n += 1;
                b_read.inc(1);
                tx_raw.send(Some(e)).is_ok()
            })?;
            let _ = tx_raw.send(None);
            drop(tx_raw);
            Ok((n, Instant::now()))
        });
        let b_parse = b_parse.clone();
        let indexes: Vec<Index> = ix.iter().map(|(i, _)| *i).collect();
        let parser = s.spawn(move || -> (u64, Instant) {
            let mut n = 0u64;
            for e in rx_raw {
                let Some(e) = e else {
                    let _ = tx_item.send(Item { seq: 0, outcome: Outcome::End });
                    break;
                };
                let outcome = if e.oversize {
                    Outcome::Skipped
                } else {
                    match parse(&e.data, &e.category) {
                        Ok(p) => Outcome::Album(Prepared::new(&p.album, &indexes), p.warnings),
                        Err(_) => Outcome::Skipped,
                    }
                };
                n += 1;
                b_parse.inc(1);
                if tx_item.send(Item { seq: e.seq, outcome }).is_err() {
                    break;
                }
            }
            (n, Instant::now())
        });
        let w = write_stage(&db, &ix, &mut mark, rx_item, opts, limit, &b_write, &mut stage);
        let (read, read_end) = reader.join().map_err(|_| anyhow::anyhow!("the read stage panicked"))??;
        let (parsed, parse_end) = parser.join().map_err(|_| anyhow::anyhow!("the parse stage panicked"))?;
        stage.read = read;
        stage.read_secs = (read_end - start).as_secs_f64();
        stage.parsed = parsed;
        stage.parse_secs = (parse_end - start).as_secs_f64();
        w
    });
    let written = match written {
        Ok(w) => w,
        Err(e) => return Err(with_what_stays(e, db, &made, source, dir)),
    };
    stage.written = written;
    stage.write_secs = start.elapsed().as_secs_f64();
    for b in [&b_read, &b_parse, &b_write] {
        b.finish();
    }
    finish(db, &ix, &mark, stage, start, &window, started_at)
}

/// What an import made before it began: the database directory, the database in it.
struct Made {
    dir: bool,
    db: bool,
}

impl Made {
    /// `e` with what stays said: a database this import made is taken back (its files by
    /// `Env::destroy`, then the directory if the import made it and it is empty), so that a
    /// failed import into a new path leaves nothing behind; one that was there is left as it is.
    fn take_back(&self, e: anyhow::Error, dir: &Path) -> anyhow::Error {
        if !self.db {
            return e;
        }
        let what = match self.dir {
            true => format!("{} was created for this import", dir.display()),
            false => format!("a database was created in {} for this import", dir.display()),
        };
        let removed = Env::destroy(dir).map_err(|r| jackdaw::report(&r)).and_then(|()| {
            if self.dir {
                std::fs::remove_dir(dir).map_err(|r| r.to_string())
            } else {
                Ok(())
            }
        });
        let left = match removed {
            Ok(()) => format!("nothing was kept: {what} and is removed again"),
            Err(r) => format!("{what}; removing it failed ({r})"),
        };
        anyhow::anyhow!("{}; {left}", jackdaw::report(e.as_ref()))
    }
}

/// An import that stopped on an error (a damaged archive, a failed commit), with what the
/// database holds of it said: the albums its committed batches hold, as its import mark counts
/// them, and how to go on from there. A database this import made that holds none is taken
/// back (`Made::take_back`).
fn with_what_stays(e: anyhow::Error, db: Db, made: &Made, source: &Path, dir: &Path) -> anyhow::Error {
    let kept = db.env.read().ok().and_then(|r| db.mark(&r).ok().flatten()).map_or(0, |m| m.albums);
    if kept == 0 {
        // Closed first: no thread of it writes into the directory while it goes.
        let _ = db.env.close();
        drop(db);
        return made.take_back(e, dir);
    }
    anyhow::anyhow!(
        "{}; the {kept} albums before it are imported into {}: `freedb import --resume {} {}` continues after \
         them once what stopped it is put right",
        jackdaw::report(e.as_ref()),
        dir.display(),
        source.display(),
        dir.display()
    )
}

#[derive(Default)]
struct Stage {
    read: u64,
    read_secs: f64,
    parsed: u64,
    parse_secs: f64,
    written: u64,
    write_secs: f64,
    busy: Duration,
}

#[allow(clippy::too_many_arguments)]
fn write_stage(
    db: &Db,
    ix: &[(Index, jackdaw::TypedTree<String, u64>)],
    mark: &mut ImportMark,
    rx: std::sync::mpsc::Receiver<Item>,
    opts: &ImportOptions,
    limit: Option<u64>,
    bar: &ProgressBar,
    stage: &mut Stage,
) -> Result<u64> {
    let mut batch = WriteBatch::new();
    let mut albums: Vec<(u64, Prepared)> = Vec::with_capacity(opts.batch);
    let mut in_batch = 0usize;
    let mut pending: Option<(BatchHandle, u64)> = None;
    let mut written = 0u64;
    let mut stdout = std::io::stdout();
    let mut items = rx.into_iter();
    let mut exhausted = false;
    let mut complete = false;
    let mut added = 0u64;
    loop {
        // Fill one batch.
        let mut txn = if opts.mode == Mode::Txn { Some(db.env.write()?) } else { None };
        let t0 = Instant::now();
        let mut waited = Duration::ZERO;
        let position_before = mark.position;
        loop {
            if in_batch >= opts.batch || limit.is_some_and(|l| added >= l) {
                break;
            }
            let w0 = Instant::now();
            let next = items.next();
            waited += w0.elapsed();
            let Some(item) = next else {
                // The read or parse stage stopped early: its error is reported after the join.
                exhausted = true;
                break;
            };
            if let Outcome::End = item.outcome {
                exhausted = true;
                complete = true;
                break;
            }
            mark.position = item.seq + 1;
            match item.outcome {
                Outcome::Skipped => mark.skipped += 1,
                Outcome::End => {}
                Outcome::Album(a, warnings) => {
                    for w in warnings {
                        *mark.warnings.entry(w.name().to_string()).or_default() += 1;
                    }
                    let id = mark.next_id;
                    mark.next_id += 1;
                    mark.albums += 1;
                    albums.push((id, a));
                    in_batch += 1;
                    added += 1;
                }
            }
        }
        if in_batch == 0 && mark.position == position_before && !complete {
            // Nothing read since the last batch and the source not finished: the read stage
            // failed (or the limit was reached). No commit: a source that cannot be read at all
            // leaves no import mark behind, and the directory can be imported into again.
            break;
        }
        // The batch's albums in id order, then its index entries sorted by (index, key): each
        // index is written in key order, leaf after neighbouring leaf, not at random.
        match txn.as_mut() {
            Some(tx) => db.txn_albums(tx, ix, &albums)?,
            None => db.batch_albums(&mut batch, ix, &albums),
        }
        albums.clear();
        let stop = exhausted || limit.is_some_and(|l| added >= l);
        mark.done = complete;
        let json = serde_json::to_vec(mark)?;
        let n = in_batch as u64;
        match txn.take() {
            Some(mut tx) => {
                db.meta.put(&mut tx, MARK_KEY, &json)?;
                tx.commit().context("commit")?;
                written += n;
                bar.inc(n);
                if opts.report_commits {
                    let _ = writeln!(stdout, "committed {}", mark.albums);
                    let _ = stdout.flush();
                }
            }
            None => {
                batch.put(&db.meta, MARK_KEY, &json);
                let h = db.env.write_batch_async(std::mem::take(&mut batch));
                if let Some((prev, pn)) = pending.take() {
                    prev.wait().context("commit a batch")?;
                    written += pn;
                    bar.inc(pn);
                    if opts.report_commits {
                        let _ = writeln!(stdout, "committed {}", mark.albums - n);
                        let _ = stdout.flush();
                    }
                }
                pending = Some((h, n));
            }
        }
        stage.busy += t0.elapsed().saturating_sub(waited);
        in_batch = 0;
        if stop {
            break;
        }
    }
    if let Some((prev, pn)) = pending.take() {
        let t0 = Instant::now();
        prev.wait().context("commit a batch")?;
        stage.busy += t0.elapsed();
        written += pn;
        bar.inc(pn);
        if opts.report_commits {
            let _ = writeln!(stdout, "committed {}", mark.albums);
            let _ = stdout.flush();
        }
    }
    Ok(written)
}

fn finish(
    db: Db,
    ix: &[(Index, jackdaw::TypedTree<String, u64>)],
    mark: &ImportMark,
    stage: Stage,
    start: Instant,
    window: &Window,
    started_at: u64,
) -> Result<Summary> {
    let seconds = start.elapsed().as_secs_f64();
    let r = db.env.read()?;
    let mut index_entries = BTreeMap::new();
    for (i, t) in ix {
        index_entries.insert(i.tree_name().to_string(), t.len(&r)?);
    }
    let albums = db.albums.len(&r)?;
    drop(r);
    // Closed before it is measured: the size is what stays on disk (a close gives the data
    // file's slack back and empties the journal directory), and the device window takes the
    // close's writes.
    let dir = db.env.path().to_path_buf();
    db.env.close()?;
    drop(db);
    let device = window.close();
    let rate = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    Ok(Summary {
        albums,
        skipped: mark.skipped,
        warnings: mark.warnings.clone(),
        index_entries,
        read: stage.read,
        written: stage.written,
        started_at_entry: started_at,
        seconds,
        read_rate: rate(stage.read, stage.read_secs),
        parse_rate: rate(stage.parsed, stage.parse_secs),
        write_rate: rate(stage.written, stage.write_secs),
        write_busy_seconds: stage.busy.as_secs_f64(),
        db_bytes: crate::db::dir_bytes(&dir),
        device_bytes_per_album: device.filter(|_| stage.written > 0).map(|b| b as f64 / stage.written as f64),
        done: mark.done,
    })
}

/// `freedb reindex`: build index `index` from `albums` alone (replacing it if it exists), in
/// batches of 10,000 albums. Returns the number of index entries.
pub fn reindex(dir: &Path, index: Index) -> Result<u64> {
    let db = Db::open_existing(dir)?;
    // Built beside the index under a name of its own (what an interrupted run left there goes
    // first), then put in its place in one transaction: until then the index is as it was, so
    // a reindex that fails or is killed half-way leaves no index half-built.
    let building = format!("{}.reindex", index.tree_name());
    let mut tx = db.env.write()?;
    tx.delete_tree(&building)?;
    let t: jackdaw::TypedTree<String, u64> = tx.create_typed_multi(&building)?;
    tx.commit()?;
    let mut after: Option<u64> = None;
    let mut keys = Vec::new();
    let mut entries = 0u64;
    loop {
        let r = db.env.read()?;
        let chunk: Vec<(u64, Album)> = match after {
            None => db.albums.range(&r, ..)?.take(10_000).collect::<jackdaw::Result<_>>()?,
            Some(a) => db
                .albums
                .range(&r, (std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded))?
                .take(10_000)
                .collect::<jackdaw::Result<_>>()?,
        };
        drop(r);
        let Some(last) = chunk.last().map(|(id, _)| *id) else { break };
        let mut batch = WriteBatch::new();
        for (id, a) in &chunk {
            keys.clear();
            index.keys(a, &mut keys);
            for k in &keys {
                batch.multi_put(&t, k.as_str(), id);
                entries += 1;
            }
        }
        db.env.write_batch(batch)?;
        after = Some(last);
    }
    // The new index in place of the old, and the import (if one continues later) maintaining it
    // from now on, in one transaction.
    let mut tx = db.env.write()?;
    tx.delete_tree(index.tree_name())?;
    tx.rename_tree(&building, index.tree_name())?;
    if let Some(mut m) = db.mark(&mut tx)?.filter(|m| !m.indexes.contains(&index)) {
        m.indexes.push(index);
        db.meta.put(&mut tx, MARK_KEY, &serde_json::to_vec(&m)?)?;
    }
    tx.commit()?;
    Ok(entries)
}
