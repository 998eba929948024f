//! `freedb demo`: generate a dump, import it with progress in a child process, SIGKILL the child
//! part-way, reopen (recovery) and check the database, resume the import, run searches, print the
//! summary.

use crate::db::Db;
use crate::gen::generate;
use crate::import::{import, ImportOptions};
use crate::query::{album_line, search, Query};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Run the demo with `albums` albums in `dir` (a temporary directory when `None`).
pub fn demo(albums: u64, dir: Option<PathBuf>, seed: u64) -> Result<()> {
    let t0 = Instant::now();
    let tmp;
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
            d
        }
        None => {
            tmp = tempfile::Builder::new().prefix("freedb-demo").tempdir_in(std::env::temp_dir())?;
            tmp.path().to_path_buf()
        }
    };
    let archive = dir.join("freedb-demo.tar");
    let dbdir = dir.join("db");
    if dbdir.exists() {
        bail!("{} exists: give the demo an empty --dir", dbdir.display());
    }

    println!("== 1. generate {albums} albums (synthetic, shaped like freedb-complete) into {}", archive.display());
    let pb = ProgressBar::new(albums);
    pb.set_style(ProgressStyle::with_template("generate {bar:30} {pos}/{len} albums {per_sec} {elapsed}")?);
    let g = generate(albums, seed, &archive, |n| pb.set_position(n))?;
    pb.finish_and_clear();
    println!(
        "   {} entries, {} tracks, {:.0} MB tar, {:.1}s",
        g.entries,
        g.tracks,
        std::fs::metadata(&archive)?.len() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );

    let kill_at = albums * 2 / 5;
    println!("== 2. import in a child process (read / parse / write threads), SIGKILLed after ~{kill_at} albums");
    let exe = std::env::current_exe().context("cannot find this program to start the child")?;
    let mut child = Command::new(exe)
        .arg("import")
        .arg("--report-commits")
        .arg("--words")
        .arg(&archive)
        .arg(&dbdir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the importing child")?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut committed = 0u64;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(n) = line.strip_prefix("committed ").and_then(|n| n.trim().parse::<u64>().ok()) {
            committed = n;
            if n >= kill_at {
                break;
            }
        }
    }
    child.kill().ok(); // SIGKILL on Unix
    let status = child.wait()?;
    println!("   killed (status: {status}) after it reported {committed} albums committed");

    println!("== 3. reopen: recovery from the journal, full check()");
    let t = Instant::now();
    let db = Db::open_existing(&dbdir)?;
    let report = db.env.check()?;
    let r = db.env.read()?;
    let in_db = db.albums.len(&r)?;
    let mark = db.mark(&r)?.context("no import mark after the kill")?;
    drop(r);
    println!(
        "   reopened and checked in {:.2}s: {}; {in_db} albums, mark says {} albums, next entry {}",
        t.elapsed().as_secs_f64(),
        if report.is_clean() { "clean".to_string() } else { format!("PROBLEMS: {report:?}") },
        mark.albums,
        mark.position
    );
    if !report.is_clean() || in_db != mark.albums || in_db < committed {
        bail!("the database after the kill is not what was committed");
    }
    db.env.close()?;
    drop(db);

    println!("== 4. freedb import --resume");
    let s = import(&archive, &dbdir, &ImportOptions { resume: true, progress: true, ..Default::default() })?;
    s.print(&mut std::io::stdout())?;
    if s.albums != g.entries - g.not_xmcd {
        bail!("{} albums after the resume, {} in the archive", s.albums, g.entries - g.not_xmcd);
    }

    println!("== 5. searches");
    let db = Db::open_existing(&dbdir)?;
    let r = db.env.read()?;
    // Draw the queries from the data: the artist and title of an album in the middle.
    let probe = db.albums.get(&r, &(s.albums / 2))?.context("album in the middle")?;
    let busiest = db.albums.get(&r, &7)?.context("album 7")?;
    drop(r);
    let artist_prefix: String = busiest.artist.chars().take(4).collect();
    // A later word of a multi-word artist: found only through the word index.
    let word = {
        let r = db.env.read()?;
        let mut w = String::from("jam");
        for e in db.albums.range(&r, 100u64..)?.take(1000) {
            let (_, a) = e?;
            if let Some(x) = a.artist.split(' ').nth(1).filter(|x| x.chars().count() >= 4) {
                w = x.chars().take(4).collect::<String>().to_lowercase();
                break;
            }
        }
        w
    };
    let title_prefix: String = probe.title.chars().take(3).collect::<String>().to_uppercase();
    let queries = [
        (format!("--discid {}", probe.discids[0]), Query::DiscId(probe.discids[0].clone()), false),
        (format!("--artist {artist_prefix:?}"), Query::Artist(artist_prefix.clone()), false),
        (
            format!("--title {title_prefix:?} (upper-cased: the search is case-insensitive)"),
            Query::Title(title_prefix),
            false,
        ),
        ("--artist Various".to_string(), Query::Artist("Various".into()), false),
        (format!("--artist {word:?} --words (a word's prefix, not the name's)"), Query::Artist(word.clone()), true),
    ];
    for (label, q, words) in queries {
        let t = Instant::now();
        let res = search(&db, &q, words, 5)?;
        println!("   search {label}: {} shown, {:.2} ms", res.len(), t.elapsed().as_secs_f64() * 1e3);
        for (id, a) in &res {
            println!("   {}", album_line(*id, a));
        }
    }
    // Every album exactly once: (category, disc id) is unique in the generated archive.
    let r = db.env.read()?;
    let mut seen = std::collections::HashSet::new();
    for e in db.albums.iter(&r)? {
        let (_, a) = e?;
        if !seen.insert((a.category.clone(), a.discids[0].clone())) {
            bail!("album {}/{} is in the database twice", a.category, a.discids[0]);
        }
    }
    drop(r);
    let report = db.env.check()?;
    println!("== 6. final check(): {}", if report.is_clean() { "clean" } else { "PROBLEMS" });
    println!(
        "   {} albums, every one exactly once after a kill -9 and a resume; {:.1} MB database; {:.1}s in all",
        s.albums,
        db.size_bytes() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    if !report.is_clean() {
        bail!("check() found problems: {report:?}");
    }
    Ok(())
}
