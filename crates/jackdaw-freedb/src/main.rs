//! `freedb`: import the FreeDB CD database into Jackdaw, search it, and measure it against SQLite
//! and LMDB. See the crate's README.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use jackdaw_freedb::db::{index_key, Db, Index};
use jackdaw_freedb::import::{import, reindex, ImportOptions, Mode};
use jackdaw_freedb::query::{album_line, search, stats, Query};
use jackdaw_freedb::{MAX_ALBUMS, MAX_BATCH};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "freedb", version, about = "The FreeDB CD database on Jackdaw: import, search, compare")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a synthetic dump shaped like freedb-complete (.tar, or .tar.bz2).
    Generate {
        /// Albums (entries) to write (at most 100,000,000: thirty times the real dump).
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=MAX_ALBUMS))]
        albums: u64,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output: FILE.tar (uncompressed) or FILE.tar.bz2.
        #[arg(short, long)]
        o: PathBuf,
    },
    /// Import a dump (directory tree category/discid, .tar or .tar.bz2) into a database.
    Import(ImportArgs),
    /// Build an index from `albums` alone.
    Reindex {
        /// The database directory.
        db: PathBuf,
        /// ix_diskids, ix_artists, ix_titles, ix_tracks, ix_artist_words or ix_title_words.
        #[arg(long)]
        index: String,
    },
    /// Find albums by disc id, or by artist / title / track prefix (case-insensitive).
    Search(SearchArgs),
    /// Albums and index entries in a database.
    Stats {
        /// The database directory.
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The showcase: generate, import with progress, kill -9 and resume, search, summary.
    Demo {
        /// Albums to generate (1,000 to 100,000,000).
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1000..=MAX_ALBUMS))]
        albums: u64,
        /// Where to put the archive and the database (default: a temporary directory, removed).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Random seed of the generator.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// The peer comparison (workload freedb-import): the same albums into Jackdaw, SQLite and
    /// LMDB, then queries.
    Bench(jackdaw_freedb::bench::BenchArgs),
}

#[derive(Args)]
struct ImportArgs {
    /// The dump: a directory of category directories, a .tar or a .tar.bz2.
    source: PathBuf,
    /// The database directory (created if missing).
    db: PathBuf,
    /// Albums per write batch.
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_BATCH))]
    batch: usize,
    /// batch: WriteBatches (one commits while the next is built); txn: plain write transactions.
    #[arg(long, value_enum, default_value_t = Mode::Batch)]
    mode: Mode,
    /// Continue an interrupted import where its last committed batch ended.
    #[arg(long)]
    resume: bool,
    /// Also index every track title (ix_tracks).
    #[arg(long)]
    track_index: bool,
    /// Also index every word of artists and titles (for `search --words`).
    #[arg(long)]
    words: bool,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Print "committed N" after each committed batch.
    #[arg(long, hide = true)]
    report_commits: bool,
    /// Stop after this many albums (resume later).
    #[arg(long)]
    limit: Option<u64>,
}

#[derive(Args)]
struct SearchArgs {
    /// The database directory.
    db: PathBuf,
    /// An exact disc id.
    #[arg(long, group = "q")]
    discid: Option<String>,
    /// An artist prefix.
    #[arg(long, group = "q")]
    artist: Option<String>,
    /// A title prefix.
    #[arg(long, group = "q")]
    title: Option<String>,
    /// A track title prefix (needs --track-index at import).
    #[arg(long, group = "q")]
    track: Option<String>,
    /// Match each word's prefix (needs --words at import).
    #[arg(long)]
    words: bool,
    /// At most this many albums.
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000_000))]
    limit: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // `freedb search ... | head`: the reader went away, nothing to report.
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("freedb: error: {}", jackdaw::report(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cli.cmd {
        Cmd::Generate { albums, seed, o } => {
            let pb = ProgressBar::new(albums);
            pb.set_style(ProgressStyle::with_template("generate {bar:30} {pos}/{len} albums {per_sec} {elapsed}")?);
            let t = std::time::Instant::now();
            // A closed pipe here is not `search | head`: the archive's reader went away before
            // its end, and what it got is incomplete.
            let rep = jackdaw_freedb::gen::generate(albums, seed, &o, |n| pb.set_position(n)).map_err(|e| {
                if e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
                }) {
                    anyhow::anyhow!(
                        "the reader of {} went away before the archive's end: what it read is incomplete",
                        o.display()
                    )
                } else {
                    e
                }
            })?;
            pb.finish_and_clear();
            let size = std::fs::metadata(&o).map(|m| m.len()).unwrap_or(0);
            writeln!(
                out,
                "wrote {}: {} entries ({} not xmcd), {} tracks, {:.1} MB of entries, {:.1} MB file, {:.1}s",
                o.display(),
                rep.entries,
                rep.not_xmcd,
                rep.tracks,
                rep.entry_bytes as f64 / 1e6,
                size as f64 / 1e6,
                t.elapsed().as_secs_f64()
            )?;
        }
        Cmd::Import(a) => {
            let opts = ImportOptions {
                batch: a.batch,
                mode: a.mode,
                resume: a.resume,
                track_index: a.track_index,
                words: a.words,
                progress: !a.quiet,
                report_commits: a.report_commits,
                limit: a.limit,
            };
            let s = import(&a.source, &a.db, &opts)?;
            if a.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
            } else {
                s.print(&mut out)?;
            }
        }
        Cmd::Reindex { db, index } => {
            let Some(i) = Index::from_name(&index) else {
                bail!(
                    "unknown index {index:?}: one of {}",
                    Index::ALL.iter().map(|i| i.tree_name()).collect::<Vec<_>>().join(", ")
                )
            };
            let t = std::time::Instant::now();
            let n = reindex(&db, i)?;
            writeln!(out, "{}: {n} entries, {:.1}s", i.tree_name(), t.elapsed().as_secs_f64())?;
        }
        Cmd::Search(a) => {
            let q = match (a.discid, a.artist, a.title, a.track) {
                (Some(d), ..) => Query::DiscId(d),
                (_, Some(x), ..) => Query::Artist(x),
                (_, _, Some(x), _) => Query::Title(x),
                (_, _, _, Some(x)) => Query::Track(x),
                _ => bail!("say what to search: --discid ID, --artist PREFIX, --title PREFIX or --track PREFIX"),
            };
            // An empty text matches no key (keys are never empty): say so rather than "no album found".
            if index_key(q.text()).is_none() {
                bail!("the text to search for is empty: give at least one character");
            }
            let db = Db::open_existing(&a.db)?;
            let res = search(&db, &q, a.words, a.limit)?;
            for (id, al) in &res {
                writeln!(out, "{}", album_line(*id, al))?;
            }
            if res.is_empty() {
                eprintln!("no album found");
            }
        }
        Cmd::Stats { db, json } => {
            let db = Db::open_existing(&db)?;
            let s = stats(&db)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?;
            } else {
                writeln!(out, "albums {:>14}", s.albums)?;
                for (k, v) in &s.indexes {
                    writeln!(out, "{k:<16}{v:>12} entries")?;
                }
                writeln!(out, "size {:>13.1} MB", s.db_bytes as f64 / 1e6)?;
                if let Some(m) = &s.import {
                    writeln!(
                        out,
                        "import of {}: {} entries read, {} skipped, {}",
                        m.source,
                        m.position,
                        m.skipped,
                        if m.done { "complete" } else { "not finished (import --resume continues it)" }
                    )?;
                }
            }
        }
        Cmd::Demo { albums, dir, seed } => jackdaw_freedb::demo::demo(albums, dir, seed).context("demo")?,
        Cmd::Bench(a) => jackdaw_freedb::bench::run(a)?,
    }
    Ok(())
}
