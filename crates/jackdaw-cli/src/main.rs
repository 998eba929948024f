//! `jackdaw`: look inside a Jackdaw database, move data in and out (LMDB's `mdb_dump` text
//! format), take it elsewhere (hot backup, compaction, a streamed copy). See README.md.
//!
//! Exit status: 0 success; 1 failure (for `check`: the database is damaged); 2 the database
//! cannot be examined (locked by a writer, not a Jackdaw database, unsupported format, I/O);
//! 130 a `load` or `dump -o` stopped by Ctrl-C or a termination signal (`interrupt.rs`).

mod dump;
mod interrupt;
mod render;

use anyhow::{anyhow, bail, Context};
use clap::{Parser, Subcommand};
use jackdaw::{Env, Error, Options};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "jackdaw", version, about = "Look inside a Jackdaw database, move data in and out, back it up")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show page size, file sizes, pages used and free, transaction ids (and, with --trees, each tree's shape).
    Stat {
        /// The database directory.
        db: PathBuf,
        /// Also show each tree: kind, entries, depth, pages by kind, average leaf fill.
        #[arg(long)]
        trees: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Verify the whole database; exit 0 clean, 1 damaged, 2 when it cannot be examined.
    Check {
        /// The database directory.
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write trees in the text format of LMDB's mdb_dump (to stdout, or -o FILE).
    Dump {
        /// The database directory.
        db: PathBuf,
        /// Dump only this tree (repeatable); default every tree.
        #[arg(short = 't', long = "tree")]
        trees: Vec<String>,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Read mdb_dump text (stdin, or -f FILE) into the database, creating it and its trees as needed.
    Load {
        /// The database directory.
        db: PathBuf,
        /// Read from FILE instead of stdin.
        #[arg(short = 'f', long = "file")]
        file: Option<PathBuf>,
        /// Load into this tree, whatever the input's database= says.
        #[arg(short = 't', long = "tree")]
        tree: Option<String>,
    },
    /// Print the value of KEY in TREE (a multi-value tree: every value, one a line).
    Get {
        /// The database directory.
        db: PathBuf,
        /// The tree.
        tree: String,
        /// The key (hex with --hex).
        key: String,
        /// Keys in and values out as hex.
        #[arg(long)]
        hex: bool,
    },
    /// Set KEY to VALUE in TREE (creating a plain tree if missing, and the database, which it says on stderr; a multi-value tree gets VALUE added).
    Put {
        /// The database directory.
        db: PathBuf,
        /// The tree.
        tree: String,
        /// The key (hex with --hex).
        key: String,
        /// The value (hex with --hex).
        value: String,
        /// Parse KEY and VALUE as hex.
        #[arg(long)]
        hex: bool,
    },
    /// Delete KEY from TREE (a multi-value tree: every value of KEY, or only VALUE).
    Del {
        /// The database directory.
        db: PathBuf,
        /// The tree.
        tree: String,
        /// The key (hex with --hex).
        key: String,
        /// In a multi-value tree, delete only this value.
        value: Option<String>,
        /// Parse KEY and VALUE as hex.
        #[arg(long)]
        hex: bool,
    },
    /// List entries of TREE in key order, one "key<TAB>value" a line.
    Scan {
        /// The database directory.
        db: PathBuf,
        /// The tree.
        tree: String,
        /// Only keys starting with P.
        #[arg(long)]
        prefix: Option<String>,
        /// From key K (included).
        #[arg(long)]
        from: Option<String>,
        /// Up to key K (excluded).
        #[arg(long)]
        to: Option<String>,
        /// Last key first.
        #[arg(long)]
        reverse: bool,
        /// At most N entries.
        #[arg(long)]
        limit: Option<u64>,
        /// Print keys only.
        #[arg(long)]
        keys_only: bool,
        /// Keys in and out as hex (values out too).
        #[arg(long)]
        hex: bool,
    },
    /// List the trees: name, kind, entries.
    Trees {
        /// The database directory.
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Draw one tree: levels, pages per level, fill, overflow chains, nested trees (text, or --svg FILE).
    Tree {
        /// The database directory.
        db: PathBuf,
        /// The tree.
        tree: String,
        /// Write an SVG picture to FILE (open it in a browser).
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Copy the database into the new directory DEST, or stream it to stdout with "-".
    Backup {
        /// The database directory.
        db: PathBuf,
        /// A new directory, or "-" for the streamed form on stdout (read back by `jackdaw restore`).
        dest: PathBuf,
        /// Write only live pages, packed: the copy is as small as its content.
        #[arg(long)]
        compact: bool,
    },
    /// Turn a streamed backup (a file, or "-" for stdin) back into a database directory DEST.
    Restore {
        /// The streamed backup, or "-" for stdin.
        archive: PathBuf,
        /// The new database directory.
        dest: PathBuf,
    },
}

/// A failure with its exit status.
pub(crate) struct Fail {
    code: u8,
    err: anyhow::Error,
}

impl From<anyhow::Error> for Fail {
    fn from(err: anyhow::Error) -> Fail {
        let code = match err.downcast_ref::<Error>() {
            _ if interrupt::is_interrupted(&err) => interrupt::STATUS,
            Some(e) if cannot_examine(e) => 2,
            Some(_) => 1,
            None => 1,
        };
        Fail { code, err }
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::from(anyhow::Error::new(e))
    }
}

/// Errors that mean the database cannot be examined at all (exit 2).
fn cannot_examine(e: &Error) -> bool {
    matches!(e, Error::Locked { .. } | Error::NotADatabase(_) | Error::IncompatibleFormat(_) | Error::Io { .. })
}

type Res<T = ()> = Result<T, Fail>;

/// `println!` that fails instead of panicking when standard output is gone (a closed pipe:
/// `jackdaw stat DB | head -3`); `main` then ends quietly, as `dump` and `scan` do.
macro_rules! out {
    ($($t:tt)*) => {
        writeln!(std::io::stdout(), $($t)*).context("write to standard output")?
    };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) if is_broken_pipe(&f.err) => ExitCode::SUCCESS,
        Err(f) => {
            // Not `eprintln!`: after a SIGHUP the terminal may be gone, and it would panic.
            let _ = writeln!(std::io::stderr(), "jackdaw: {}", jackdaw::report(f.err.as_ref()));
            ExitCode::from(f.code)
        }
    }
}

/// What a `load` or `put` about to open `db` for writing makes, so that a failure can take
/// exactly that away again: the directory and the database in it, or a database in a directory
/// that exists (whatever else is in it stays), or nothing (the database is there already).
#[derive(PartialEq)]
enum Made {
    Nothing,
    Dir,
    Database,
}

impl Made {
    fn before_opening(db: &Path) -> Made {
        if !db.exists() {
            Made::Dir
        } else if db.is_dir() && !db.join("data.jdb").exists() {
            Made::Database
        } else {
            // A database there already, or a file: the open makes nothing.
            Made::Nothing
        }
    }

    /// Remove what was made: the database's files (`Env::destroy`), then the directory if this
    /// command made it (only if empty: nothing of anyone else's goes).
    fn remove(&self, db: &Path) -> Result<(), String> {
        if *self == Made::Nothing {
            return Ok(());
        }
        Env::destroy(db).map_err(|e| jackdaw::report(&e))?;
        if *self == Made::Dir {
            std::fs::remove_dir(db).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A `load` or `put` (`what`) that failed, with what it leaves said: a load commits every
/// `dump::LOAD_TXN_BYTES`, so the entries before the failure may stay; a database this command
/// created is removed again (its files, and the directory if the command made it), so
/// that a failed write into a new path leaves nothing behind. `env` is `None` when the open
/// itself failed (a low descriptor limit can fail it after the database's files were made).
fn failed_write(mut f: Fail, env: Option<Env>, db: &Path, made: &Made, committed: u64, what: &str) -> Fail {
    let said = jackdaw::report(f.err.as_ref());
    let left = if *made != Made::Nothing {
        // Closed first: no thread of it writes into the directory while it goes.
        if let Some(env) = env {
            let _ = env.close();
        }
        let which = match made {
            Made::Dir => format!("{} was created", db.display()),
            _ => format!("a database was created in {}", db.display()),
        };
        match made.remove(db) {
            Ok(()) => format!("nothing was kept: {which} for this {what} and is removed again"),
            Err(r) => format!("{which} for this {what}; removing it failed ({r})"),
        }
    } else if committed > 0 {
        format!("the first {committed} entries were loaded before it and stay in {}", db.display())
    } else {
        format!("{} is unchanged", db.display())
    };
    f.err = anyhow!("{said}; {left}");
    f
}

/// The failure of a command that needs a database where there is none (exit 2).
fn not_a_database(db: &Path) -> Fail {
    let err = match db.is_file() {
        true => anyhow!(
            "{} is a file; a Jackdaw database is the directory that holds data.jdb{}",
            db.display(),
            db.parent()
                .filter(|p| db.ends_with("data.jdb") && !p.as_os_str().is_empty())
                .map_or(String::new(), |p| format!(" (here {})", p.display()))
        ),
        false => anyhow!("{} is not a Jackdaw database (no data.jdb in it)", db.display()),
    };
    Fail { code: 2, err }
}

/// Open `db` (read-only unless `write`), with the lock message a person can act on.
fn open(db: &Path, write: bool, backup: bool) -> Res<Env> {
    if !db.join("data.jdb").exists() && !write {
        return Err(not_a_database(db));
    }
    match Env::open(db, Options::default().read_only(!write)) {
        Ok(env) => Ok(env),
        Err(Error::Locked { path, pid }) => {
            let who = pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}"));
            let mut msg = format!(
                "{} is locked: {who} has it open{}; try again once it has closed it",
                path.display(),
                if write { "" } else { " for writing" }
            );
            if backup {
                msg.push_str(
                    ". A backup cannot be hot across processes: a program that wants to back itself up while it \
                     runs calls Env::backup_to (or Env::backup_to_writer) on its own Env",
                );
            }
            Err(Fail { code: 2, err: anyhow!(msg) })
        }
        Err(e) => Err(Fail::from(anyhow::Error::new(e).context(format!("cannot open {}", db.display())))),
    }
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
pub(crate) fn bar(total: u64, what: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})").map(|s| s.progress_chars("=> "))
    {
        b.set_style(style);
    }
    b.set_message(what.to_string());
    b
}

/// A spinner with a byte count on stderr when it is a terminal (input of unknown length).
pub(crate) fn spinner(what: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {bytes} read ({bytes_per_sec})") {
        b.set_style(style);
    }
    b.set_message(what.to_string());
    b
}

/// Bytes as text when printable UTF-8, else hex with a `0x` prefix; `hex` forces hex.
pub(crate) fn show(b: &[u8], hex: bool) -> String {
    if !hex {
        if let Ok(s) = std::str::from_utf8(b) {
            if !s.is_empty() && !s.chars().any(|c| c.is_control()) && !s.starts_with("0x") {
                return s.to_string();
            }
        }
    }
    format!("0x{}", to_hex(b))
}

pub(crate) fn to_hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

/// `s` quoted for a message, cut after its first 60 characters: an input line can be megabytes.
pub(crate) fn quoted(s: &str) -> String {
    match s.char_indices().nth(60) {
        None => format!("{s:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &s[..end], s.len()),
    }
}

/// Bytes from hex digits (an optional `0x` first). Read byte by byte: a pair of bytes may cut a
/// multi-byte character (which slicing the text there would panic on).
pub(crate) fn from_hex(s: &str) -> anyhow::Result<Vec<u8>> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        bail!("hex {} has an odd number of digits", quoted(s));
    }
    let digit = |b: u8| char::from(b).to_digit(16);
    s.as_bytes()
        .chunks_exact(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
            _ => Err(anyhow!("{} is not hex", quoted(s))),
        })
        .collect()
}

fn arg(s: &str, hex: bool) -> Res<Vec<u8>> {
    if hex {
        Ok(from_hex(s)?)
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

fn run(cli: Cli) -> Res<u8> {
    match cli.cmd {
        Cmd::Stat { db, trees, json } => stat(&db, trees, json).map(|_| 0),
        Cmd::Check { db, json } => check(&db, json),
        Cmd::Dump { db, trees, output } => {
            let env = open(&db, false, false)?;
            match output {
                Some(p) => {
                    interrupt::install()?;
                    dump_to_file(&env, &trees, &p)?
                }
                None => {
                    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
                    match dump::dump(&env, &trees, &mut w).and_then(|_| w.flush().map_err(|e| e.into())) {
                        Err(e) if is_broken_pipe(&e) => return Ok(0),
                        r => r?,
                    }
                }
            }
            Ok(0)
        }
        Cmd::Load { db, file, tree } => {
            // The input opens before the database, so that a mistyped file name creates nothing.
            let (input, len) = match &file {
                Some(p) => {
                    let f = std::fs::File::open(p).with_context(|| format!("open {}", p.display()))?;
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    (interrupt::Input::new(f), len)
                }
                None => (interrupt::Input::new(std::io::stdin()), 0),
            };
            interrupt::install()?;
            let made = Made::before_opening(&db);
            let env = open(&db, true, false).map_err(|f| failed_write(f, None, &db, &made, 0, "load"))?;
            let mut committed = 0u64;
            match dump::load(&env, input, tree.as_deref(), len, &mut committed) {
                Ok(n) => {
                    env.close()?;
                    eprintln!("jackdaw: loaded {n} entries");
                    Ok(0)
                }
                Err(e) => Err(failed_write(Fail::from(e), Some(env), &db, &made, committed, "load")),
            }
        }
        Cmd::Get { db, tree, key, hex } => {
            let env = open(&db, false, false)?;
            let r = env.read()?;
            let t = r.open_tree(&tree)?.ok_or_else(|| anyhow!("no tree named {tree:?} in {}", db.display()))?;
            let key = arg(&key, hex)?;
            let mut out = std::io::stdout().lock();
            if t.is_multi() {
                let mut any = false;
                for v in r.multi_get(&t, &key)? {
                    writeln!(out, "{}", show(&v?, hex)).context("write")?;
                    any = true;
                }
                if !any {
                    return Err(Fail { code: 1, err: anyhow!("key {} not found in {tree}", show(&key, hex)) });
                }
            } else {
                match r.get(&t, &key)? {
                    Some(v) => writeln!(out, "{}", show(&v, hex)).context("write")?,
                    None => return Err(Fail { code: 1, err: anyhow!("key {} not found in {tree}", show(&key, hex)) }),
                }
            }
            Ok(0)
        }
        Cmd::Put { db, tree, key, value, hex } => {
            // Parsed first: bad input creates nothing. A new database is said on stderr (so that a
            // mistyped path does not make one unnoticed), and removed again if the put fails.
            let (key, value) = (arg(&key, hex)?, arg(&value, hex)?);
            let made = Made::before_opening(&db);
            let env = open(&db, true, false).map_err(|f| failed_write(f, None, &db, &made, 0, "put"))?;
            let put = || -> Res<()> {
                let mut tx = env.write()?;
                let t = match tx.open_tree(&tree)? {
                    Some(t) => t,
                    None => tx.create_tree(&tree)?,
                };
                if t.is_multi() {
                    tx.multi_put(&t, &key, &value)?;
                } else {
                    tx.put(&t, &key, &value)?;
                }
                tx.commit()?;
                Ok(())
            };
            if let Err(f) = put() {
                return Err(failed_write(f, Some(env), &db, &made, 0, "put"));
            }
            env.close()?;
            if made != Made::Nothing {
                eprintln!("jackdaw: created a new database at {}", db.display());
            }
            Ok(0)
        }
        Cmd::Del { db, tree, key, value, hex } => {
            // Nothing to delete from a database that is not there: none is made for it.
            if !db.join("data.jdb").exists() {
                return Err(not_a_database(&db));
            }
            let env = open(&db, true, false)?;
            let key = arg(&key, hex)?;
            let mut tx = env.write()?;
            let t = tx.open_tree(&tree)?.ok_or_else(|| anyhow!("no tree named {tree:?} in {}", db.display()))?;
            let found = match (&value, t.is_multi()) {
                (Some(v), true) => tx.multi_delete(&t, &key, arg(v, hex)?)?,
                (None, true) => tx.multi_delete_all(&t, &key)? > 0,
                (Some(_), false) => {
                    return Err(Fail { code: 1, err: anyhow!("{tree} is a plain tree: give no VALUE") })
                }
                (None, false) => tx.delete(&t, &key)?,
            };
            tx.commit()?;
            env.close()?;
            if !found {
                let what = match &value {
                    Some(v) => format!("value {v} of key {} not found in {tree}", show(&key, hex)),
                    None => format!("key {} not found in {tree}", show(&key, hex)),
                };
                return Err(Fail { code: 1, err: anyhow!(what) });
            }
            Ok(0)
        }
        Cmd::Scan { db, tree, prefix, from, to, reverse, limit, keys_only, hex } => {
            let env = open(&db, false, false)?;
            let r = env.read()?;
            let t = r.open_tree(&tree)?.ok_or_else(|| anyhow!("no tree named {tree:?} in {}", db.display()))?;
            let from = from.map(|s| arg(&s, hex)).transpose()?;
            let to = to.map(|s| arg(&s, hex)).transpose()?;
            let prefix = prefix.map(|s| arg(&s, hex)).transpose()?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let r2 = scan(&r, &t, from, to, prefix, reverse, limit, keys_only, hex, &mut out);
            match r2.and_then(|_| out.flush().map_err(anyhow::Error::from)) {
                Err(e) if is_broken_pipe(&e) => Ok(0),
                Err(e) => Err(e.into()),
                Ok(()) => Ok(0),
            }
        }
        Cmd::Trees { db, json } => {
            let env = open(&db, false, false)?;
            let r = env.read()?;
            let mut rows = Vec::new();
            for name in r.list_trees()? {
                let t = r.open_tree(&name)?.ok_or_else(|| anyhow!("tree {name} vanished"))?;
                rows.push((name, t.is_multi(), r.tree_stats(&t)?.entries));
            }
            if json {
                let v: Vec<_> = rows
                    .iter()
                    .map(|(n, m, e)| serde_json::json!({"name": n, "kind": if *m {"multi"} else {"plain"}, "entries": e}))
                    .collect();
                out!("{}", serde_json::Value::Array(v));
            } else {
                for (n, m, e) in rows {
                    out!("{n}\t{}\t{e}", if m { "multi" } else { "plain" });
                }
            }
            Ok(0)
        }
        Cmd::Tree { db, tree, svg } => {
            let env = open(&db, false, false)?;
            let r = env.read()?;
            let t = r.open_tree(&tree)?.ok_or_else(|| anyhow!("no tree named {tree:?} in {}", db.display()))?;
            let layout = jackdaw::internals::tree_layout(&r, &t)?;
            match svg {
                Some(p) => {
                    std::fs::write(&p, render::svg(&tree, &layout))
                        .with_context(|| format!("write {}", p.display()))?;
                    eprintln!("jackdaw: wrote {}", p.display());
                }
                None => {
                    write!(std::io::stdout(), "{}", render::text(&tree, &layout)).context("write to standard output")?
                }
            }
            Ok(0)
        }
        Cmd::Backup { db, dest, compact } => {
            let env = open(&db, false, true)?;
            let b = bar(0, if compact { "compact" } else { "backup" });
            let bb = b.clone();
            let opts = jackdaw::BackupOptions::default().compact(compact).progress(move |p| {
                bb.set_length(p.total);
                bb.set_position(p.done);
                bb.set_message(match p.stage {
                    jackdaw::BackupStage::Compact => "rebuild",
                    _ => "copy",
                });
            });
            let stats = if dest.as_os_str() == "-" {
                let mut w = std::io::BufWriter::new(std::io::stdout().lock());
                env.backup_to_writer_with(&mut w, opts.work_dir(std::env::temp_dir()))?
            } else {
                env.backup_to_with(&dest, opts)?
            };
            b.finish_and_clear();
            eprintln!("jackdaw: backup of transaction {}: {} bytes", stats.txid, stats.bytes);
            Ok(0)
        }
        Cmd::Restore { archive, dest } => {
            let restored = if archive.as_os_str() == "-" {
                jackdaw::restore_from(std::io::BufReader::new(std::io::stdin().lock()), &dest)
            } else {
                let f = std::fs::File::open(&archive).with_context(|| format!("open {}", archive.display()))?;
                if f.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(anyhow!("{} is a directory, not a backup stream", archive.display()).into());
                }
                jackdaw::restore_from(std::io::BufReader::new(f), &dest)
            };
            // The damage is in the stream, not in a database (the engine's `Corrupted` says
            // "the database is damaged").
            let stats = restored.map_err(|e| match e {
                Error::Corrupted { reason, .. } => {
                    let src = if archive.as_os_str() == "-" {
                        "standard input".into()
                    } else {
                        archive.display().to_string()
                    };
                    Fail::from(anyhow!("{src} is not a whole, undamaged backup stream: {reason}; nothing was restored"))
                }
                e => Fail::from(e),
            })?;
            eprintln!("jackdaw: restored transaction {} into {}", stats.txid, dest.display());
            Ok(0)
        }
    }
}

/// `dump -o PATH`: a regular file (new, or one there) is written whole beside it and renamed
/// over it once complete and synced, so that a failed dump (no such tree, damage, a full disk)
/// leaves what was at `PATH` as it was and no partial file; anything else there (a FIFO, a
/// device such as `/dev/stdout`) is written in place.
fn dump_to_file(env: &Env, trees: &[String], p: &Path) -> Res {
    let in_place = std::fs::metadata(p).is_ok_and(|m| !m.is_file());
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = match in_place {
        true => p.to_path_buf(),
        false => p.with_file_name(format!(".{name}.jackdaw-tmp-{}", std::process::id())),
    };
    let write = || -> Res {
        let f = std::fs::File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?;
        let mut w = std::io::BufWriter::new(interrupt::Output(f));
        dump::dump(env, trees, &mut w).with_context(|| format!("dump into {}", p.display()))?;
        let f = w.into_inner().map_err(|e| e.into_error()).with_context(|| format!("write {}", p.display()))?.0;
        if !in_place {
            f.sync_all().with_context(|| format!("write {}", p.display()))?;
            std::fs::rename(&tmp, p).with_context(|| format!("rename {} to {}", tmp.display(), p.display()))?;
        }
        Ok(())
    };
    write().inspect_err(|_| {
        if !in_place {
            let _ = std::fs::remove_file(&tmp);
        }
    })
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<Error>().is_some_and(
                |j| matches!(j, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe),
            )
    })
}

#[allow(clippy::too_many_arguments)]
fn scan(
    r: &jackdaw::ReadTxn,
    t: &jackdaw::Tree,
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    reverse: bool,
    limit: Option<u64>,
    keys_only: bool,
    hex: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    use std::ops::Bound;
    let mut lo = from.map_or(Bound::Unbounded, Bound::Included);
    let mut hi = to.map_or(Bound::Unbounded, Bound::Excluded);
    if let Some(p) = &prefix {
        // The prefix narrows the range: [p, next(p)).
        let plo = Bound::Included(p.clone());
        lo = match lo {
            Bound::Included(k) if k > *p => Bound::Included(k),
            _ => plo,
        };
        let mut end = p.clone();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        if let Some(l) = end.last_mut() {
            *l += 1;
            hi = match hi {
                Bound::Excluded(k) if k < end => Bound::Excluded(k),
                _ => Bound::Excluded(end),
            };
        }
    }
    let mut n = 0u64;
    let max = limit.unwrap_or(u64::MAX);
    let range = (lo, hi);
    if t.is_multi() {
        let keys = r.keys(t, range)?;
        let keys: Box<dyn Iterator<Item = jackdaw::Result<jackdaw::Bytes>>> =
            if reverse { Box::new(keys.rev()) } else { Box::new(keys) };
        'outer: for k in keys {
            let k = k?;
            if keys_only {
                if n >= max {
                    break;
                }
                writeln!(out, "{}", show(&k, hex))?;
                n += 1;
                continue;
            }
            let vals = r.multi_get(t, &k)?;
            let vals: Box<dyn Iterator<Item = jackdaw::Result<jackdaw::Bytes>>> =
                if reverse { Box::new(vals.rev()) } else { Box::new(vals) };
            for v in vals {
                if n >= max {
                    break 'outer;
                }
                writeln!(out, "{}\t{}", show(&k, hex), show(&v?, hex))?;
                n += 1;
            }
        }
    } else {
        let it = r.range(t, range)?;
        let it: Box<dyn Iterator<Item = jackdaw::Result<(jackdaw::Bytes, jackdaw::Bytes)>>> =
            if reverse { Box::new(it.rev()) } else { Box::new(it) };
        for e in it {
            if n >= max {
                break;
            }
            let (k, v) = e?;
            if keys_only {
                writeln!(out, "{}", show(&k, hex))?;
            } else {
                writeln!(out, "{}\t{}", show(&k, hex), show(&v, hex))?;
            }
            n += 1;
        }
    }
    Ok(())
}

fn stat(db: &Path, trees: bool, json: bool) -> Res {
    let env = open(db, false, false)?;
    let s = env.stats();
    let r = env.read()?;
    let mut journal = Vec::new();
    if let Ok(rd) = std::fs::read_dir(db.join("journal")) {
        for e in rd.flatten() {
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            journal.push((e.file_name().to_string_lossy().into_owned(), len));
        }
    }
    journal.sort();
    let mut tree_rows = Vec::new();
    let (mut branch, mut leaf, mut overflow) = (0u64, 0u64, 0u64);
    for name in r.list_trees()? {
        let t = r.open_tree(&name)?.ok_or_else(|| anyhow!("tree {name} vanished"))?;
        let ts = r.tree_stats(&t)?;
        branch += ts.branch_pages;
        leaf += ts.leaf_pages;
        overflow += ts.overflow_pages;
        if trees {
            let l = jackdaw::internals::tree_layout(&r, &t)?;
            let own = |lvl: fn(u32) -> bool| l.pages.iter().filter(|p| p.nested.is_none() && lvl(p.level)).count();
            let nested = l.pages.iter().filter(|p| p.nested.is_some()).count();
            let leaves: Vec<_> = l.pages.iter().filter(|p| p.level == 0).collect();
            let fill = if leaves.is_empty() {
                0.0
            } else {
                leaves.iter().map(|p| p.used as f64 / p.capacity as f64).sum::<f64>() / leaves.len() as f64
            };
            tree_rows.push(serde_json::json!({
                "name": name,
                "kind": if t.is_multi() { "multi" } else { "plain" },
                "entries": ts.entries,
                "depth": ts.depth,
                "branch_pages": own(|l| l > 0),
                "leaf_pages": own(|l| l == 0),
                "overflow_pages": l.overflow.iter().map(|c| c.pages).sum::<u64>(),
                "nested_pages": nested,
                "nested_trees": l.nested.len(),
                "avg_leaf_fill": (fill * 1000.0).round() / 1000.0,
            }));
        }
    }
    let meta = 1u64;
    let bitmaps = s.next_page.div_ceil(((s.page_size - 32) * 8) as u64);
    let catalog = s.pages_in_use.saturating_sub(branch + leaf + overflow + bitmaps + meta);
    let unflushed = s.last_committed_txid.get() > s.last_flushed_txid.get();
    let journal_bytes: u64 = journal.iter().map(|(_, b)| b).sum();
    let v = serde_json::json!({
        "path": db.display().to_string(),
        "page_size": s.page_size,
        "data_file_bytes": s.data_file_bytes,
        "slack_bytes": s.slack_bytes,
        "journal_files": journal.iter().map(|(n, b)| serde_json::json!({"name": n, "bytes": b})).collect::<Vec<_>>(),
        "pages": {
            "high_water": s.next_page,
            "in_use": s.pages_in_use,
            "used_bytes": s.used_bytes,
            "free": s.free_pages,
            "by_kind": {"branch": branch, "leaf": leaf, "overflow": overflow, "free_space_map": bitmaps, "meta": meta, "catalog": catalog},
        },
        "last_committed_txid": s.last_committed_txid.get(),
        "last_flushed_txid": s.last_flushed_txid.get(),
        "journal_not_flushed": unflushed,
        "journal_bytes": journal_bytes,
        "readers": s.readers.len().saturating_sub(1),
        "oldest_reader_lag": 0,
        "trees": if trees { serde_json::Value::Array(tree_rows.clone()) } else { serde_json::Value::Null },
    });
    if json {
        out!("{}", serde_json::to_string_pretty(&v).map_err(anyhow::Error::from)?);
        return Ok(());
    }
    out!("database        {}", db.display());
    out!("page size       {}", s.page_size);
    out!("data file       {} bytes ({} above the high-water mark)", s.data_file_bytes, s.slack_bytes);
    for (n, b) in &journal {
        out!("journal file    {n}: {b} bytes");
    }
    out!(
        "pages           {} in use ({} bytes), {} free, high-water mark {}",
        s.pages_in_use,
        s.used_bytes,
        s.free_pages,
        s.next_page
    );
    out!(
        "pages by kind   branch {branch}, leaf {leaf}, overflow {overflow}, free-space map {bitmaps}, meta {meta}, tree catalog {catalog}"
    );
    out!("last committed  transaction {}", s.last_committed_txid);
    out!("last flushed    transaction {}", s.last_flushed_txid);
    if unflushed {
        out!(
            "journal         {journal_bytes} bytes in files; transactions {}..={} are only in the journal (not yet in the data file)",
            s.last_flushed_txid.get() + 1,
            s.last_committed_txid
        );
    } else {
        out!("journal         {journal_bytes} bytes in files; every transaction is in the data file");
    }
    out!("readers         0 in this process (readers of other processes are not visible; lag 0)");
    if trees {
        out!();
        out!(
            "{:<24} {:>5} {:>10} {:>5} {:>7} {:>7} {:>8} {:>7} {:>6}",
            "tree",
            "kind",
            "entries",
            "depth",
            "branch",
            "leaf",
            "overflow",
            "nested",
            "fill"
        );
        for t in &tree_rows {
            out!(
                "{:<24} {:>5} {:>10} {:>5} {:>7} {:>7} {:>8} {:>7} {:>5.1}%",
                t["name"].as_str().unwrap_or(""),
                t["kind"].as_str().unwrap_or(""),
                t["entries"].to_string(),
                t["depth"].to_string(),
                t["branch_pages"].to_string(),
                t["leaf_pages"].to_string(),
                t["overflow_pages"].to_string(),
                t["nested_pages"].to_string(),
                t["avg_leaf_fill"].as_f64().unwrap_or(0.0) * 100.0
            );
        }
    }
    Ok(())
}

fn check(db: &Path, json: bool) -> Res<u8> {
    let env = match open(db, false, false) {
        Ok(e) => e,
        Err(f) => {
            // The open itself met damage: the database is damaged (1), not unexaminable.
            let damaged = f.err.chain().any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Corrupted { .. })));
            let code = if damaged { 1 } else { 2 };
            if json {
                // Unprinted (a closed pipe) or not, the exit code says what was found.
                let v = serde_json::json!({"clean": false, "exit": code, "error": format!("{:#}", f.err)});
                let _ = writeln!(std::io::stdout(), "{v}");
            }
            return Err(Fail { code, err: f.err });
        }
    };
    let report =
        env.check().map_err(|e| Fail { code: 2, err: anyhow::Error::new(e).context("check could not run") })?;
    match print_check(&report, json) {
        // A reader that stopped reading (`check DB | head -1`) still gets the exit code.
        Err(f) if !is_broken_pipe(&f.err) => Err(f),
        _ => Ok(if report.is_clean() { 0 } else { 1 }),
    }
}

/// `check`'s report on standard output.
fn print_check(report: &jackdaw::CheckReport, json: bool) -> Res {
    if json {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|p| {
                serde_json::json!({
                    "page": p.page.map(|n| n.get()),
                    "tree": p.tree,
                    "kind": format!("{:?}", p.kind),
                    "detail": p.detail,
                })
            })
            .collect();
        out!(
            "{}",
            serde_json::json!({
                "clean": report.is_clean(),
                "pages_checked": report.pages_checked,
                "pages_in_use": report.pages_in_use,
                "free_pages": report.free_pages,
                "reachable_pages": report.reachable_pages,
                "live_bytes": report.live_bytes,
                "journal_records": report.journal_records,
                "problems": problems,
            })
        );
    } else if report.is_clean() {
        out!(
            "clean: {} pages checked ({} in use, {} free, {} reachable), {} journal records, {} live bytes",
            report.pages_checked,
            report.pages_in_use,
            report.free_pages,
            report.reachable_pages,
            report.journal_records,
            report.live_bytes
        );
    } else {
        for p in &report.problems {
            match p.page {
                Some(pg) => out!("page {pg}: {}", p.detail),
                None => out!("{}", p.detail),
            }
        }
        out!("damaged: {} problems", report.problems.len());
    }
    Ok(())
}
