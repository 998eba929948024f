//! The import: a child `freedb import` SIGKILLed at random points and resumed holds every album
//! exactly once, in order, and passes `check()`; resume from `.tar.bz2` and from a directory tree;
//! refusal without `--resume`; `--mode txn` gives the same database; `reindex` rebuilds an index.

mod common;

use common::{model, seed, Xs};
use jackdaw_freedb::db::{Db, Index};
use jackdaw_freedb::gen::generate;
use jackdaw_freedb::import::{import, reindex, ImportOptions, Mode};
use jackdaw_freedb::parse::Album;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_freedb");

/// The albums in the database, in id order, after checking the ids are 0..n and the indexes
/// hold exactly the model's entries.
fn albums_of(dir: &Path) -> Vec<Album> {
    let db = Db::open_existing(dir).unwrap();
    let report = db.env.check().unwrap();
    assert!(report.is_clean(), "check(): {report:?}");
    let r = db.env.read().unwrap();
    let mut out = Vec::new();
    for (i, e) in db.albums.iter(&r).unwrap().enumerate() {
        let (id, a) = e.unwrap();
        assert_eq!(id, i as u64, "album ids are dense and in order");
        out.push(a);
    }
    // Index entries: exactly the keys of the albums.
    let mark = db.mark(&r).unwrap().expect("mark");
    for i in mark.indexes {
        let t = db.index(&r, i).unwrap().unwrap();
        let mut want = Vec::new();
        let mut keys = Vec::new();
        for (id, a) in out.iter().enumerate() {
            keys.clear();
            i.keys(a, &mut keys);
            want.extend(keys.iter().map(|k| (k.clone(), id as u64)));
        }
        want.sort();
        let got: Vec<(String, u64)> = t.iter(&r).unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(got, want, "{}", i.tree_name());
    }
    out
}

#[test]
fn resume_after_sigkill_at_random_points_holds_every_album_once() {
    let _serial = common::serial();
    let s = seed("resume_after_sigkill");
    let mut rng = Xs(s | 1);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("dump.tar");
    generate(4000, s, &src, |_| {}).unwrap();
    let want = model(&src);
    let db = dir.path().join("db");
    let mut kills = 0;
    for round in 0..4 {
        let mut cmd = Command::new(EXE);
        cmd.args(["import", "--quiet", "--report-commits", "--batch", "50"]);
        if round > 0 {
            cmd.arg("--resume");
        }
        let mut child = cmd.arg(&src).arg(&db).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Kill after a random number of reported commits, then a random few hundred microseconds
        // more (inside a later batch), or let this round finish.
        let commits = rng.below(25);
        let mut seen = 0;
        let mut finished = true;
        for l in lines {
            if l.unwrap().starts_with("committed ") {
                seen += 1;
                if seen > commits {
                    finished = false;
                    break;
                }
            }
        }
        if !finished {
            std::thread::sleep(std::time::Duration::from_micros(rng.below(3000)));
            child.kill().unwrap();
            kills += 1;
        }
        let st = child.wait().unwrap();
        println!("round {round}: {} after {seen} commits ({st})", if finished { "finished" } else { "killed" });
        if finished && st.success() {
            break;
        }
        // The killed state is consistent: what is there is a prefix of the model.
        if let Ok(d) = Db::open_existing(&db) {
            let r = d.env.read().unwrap();
            let marked = d.mark(&r).unwrap().is_some();
            if !marked {
                assert_eq!(d.albums.len(&r).unwrap(), 0, "albums without a mark");
            }
            drop(r);
            d.env.close().unwrap();
            drop(d);
            if marked {
                let got = albums_of(&db);
                assert!(got[..] == want[..got.len()], "a prefix of the archive's albums");
            }
        }
    }
    // Finish.
    let out = Command::new(EXE).args(["import", "--quiet", "--resume"]).arg(&src).arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(kills > 0 || want.len() < 200);
    let got = albums_of(&db);
    assert_eq!(got.len(), want.len());
    assert!(got == want, "every album exactly once, in archive order");
}

#[test]
fn import_without_resume_is_refused_and_resume_of_complete_is_a_no_op() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(300, 3, &src, |_| {}).unwrap();
    let db = dir.path().join("db");
    let s = import(&src, &db, &ImportOptions::default()).unwrap();
    assert!(s.done);
    let out = Command::new(EXE).args(["import", "-q"]).arg(&src).arg(&db).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("already holds an import") && msg.contains("--resume"), "{msg}");
    let again = import(&src, &db, &ImportOptions { resume: true, ..Default::default() }).unwrap();
    assert_eq!((again.albums, again.written), (s.albums, 0));
    // Another source is refused.
    let other = dir.path().join("other.tar");
    generate(10, 4, &other, |_| {}).unwrap();
    let e = import(&other, &db, &ImportOptions { resume: true, ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("resume it from the same source"), "{e}");
    // A source that is not there.
    let out =
        Command::new(EXE).args(["import", "-q", "/nonexistent/x.tar"]).arg(dir.path().join("db2")).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open the source"));
}

#[test]
fn resume_from_bz2_and_directory_tree_with_limits() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let bz = dir.path().join("d.tar.bz2");
    generate(1500, 11, &bz, |_| {}).unwrap();
    let want = model(&bz);
    let db = dir.path().join("db");
    let mut resume = false;
    for _ in 0..4 {
        let s = import(&bz, &db, &ImportOptions { resume, limit: Some(400), batch: 64, ..Default::default() }).unwrap();
        resume = true;
        if s.done {
            break;
        }
    }
    assert_eq!(albums_of(&db), want);

    let tree = dir.path().join("tree");
    tar::Archive::new(bzip2::read::MultiBzDecoder::new(std::fs::File::open(&bz).unwrap())).unpack(&tree).unwrap();
    let want_tree = model(&tree);
    let db2 = dir.path().join("db2");
    let first = import(&tree, &db2, &ImportOptions { limit: Some(777), words: true, ..Default::default() }).unwrap();
    assert!(!first.done);
    assert_eq!(first.albums, 777);
    let s = import(&tree, &db2, &ImportOptions { resume: true, ..Default::default() }).unwrap();
    assert!(s.done && s.started_at_entry >= 777);
    assert_eq!(albums_of(&db2), want_tree);
    // Resuming on a new, empty database starts from the beginning.
    let db3 = dir.path().join("db3");
    let s = import(&tree, &db3, &ImportOptions { resume: true, ..Default::default() }).unwrap();
    assert_eq!(s.albums as usize, want_tree.len());
}

#[test]
fn txn_mode_and_reindex_give_the_same_database() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(1200, 5, &src, |_| {}).unwrap();
    let want = model(&src);
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let sa = import(&src, &a, &ImportOptions { track_index: true, ..Default::default() }).unwrap();
    let sb = import(&src, &b, &ImportOptions { mode: Mode::Txn, batch: 100, ..Default::default() }).unwrap();
    assert_eq!(albums_of(&a), want);
    assert_eq!(albums_of(&b), want);
    assert_eq!(sa.warnings, sb.warnings);
    assert_eq!(sa.index_entries["ix_diskids"], sb.index_entries["ix_diskids"]);
    // b has no track index: reindex builds it from albums alone, equal to a's.
    let n = reindex(&b, Index::Tracks).unwrap();
    assert_eq!(n, sa.index_entries["ix_tracks"]);
    // ... and a rebuilt disc id index equals the imported one (albums_of compares every index).
    reindex(&a, Index::Diskids).unwrap();
    assert_eq!(albums_of(&a), want);
    assert_eq!(albums_of(&b), want);
    let db = Db::open_existing(&b).unwrap();
    let r = db.env.read().unwrap();
    assert!(db.mark(&r).unwrap().unwrap().indexes.contains(&Index::Tracks));
}

#[test]
fn a_damaged_archive_is_an_error_and_the_import_is_not_marked_done() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(900, 21, &src, |_| {}).unwrap();
    let want = model(&src);
    // Cut the archive in the middle of an entry.
    let bytes = std::fs::read(&src).unwrap();
    let cut = dir.path().join("cut.tar");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 100]).unwrap();
    let db = dir.path().join("db");
    let out = Command::new(EXE).args(["import", "-q", "--batch", "100"]).arg(&cut).arg(&db).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("damaged"), "{msg}");
    let d = Db::open_existing(&db).unwrap();
    let r = d.env.read().unwrap();
    let mark = d.mark(&r).unwrap().expect("what was read is committed");
    assert!(!mark.done);
    assert!(mark.albums > 0 && (mark.albums as usize) < want.len());
    // The message says what stays, with the import mark's count, and how to go on.
    assert!(msg.contains(&format!("the {} albums before it are imported", mark.albums)), "{msg}");
    assert!(msg.contains("freedb import --resume"), "{msg}");
    drop(r);
    d.env.close().unwrap();
    drop(d);
    let got = albums_of(&db);
    assert!(got[..] == want[..got.len()], "the albums before the damage, in order");
}

/// A source with nothing in it (here a Jackdaw database's directory, whose `journal/` looked like
/// a category) is refused, and the database made for it is removed: it used to import 0 albums,
/// exit 0 and leave an empty database.
#[test]
fn a_source_with_nothing_to_import_is_refused() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("other-db");
    std::fs::create_dir_all(src.join("journal")).unwrap();
    std::fs::write(src.join("data.jdb"), vec![0u8; 8192]).unwrap();
    let db = dir.path().join("db");
    let out = Command::new(EXE).args(["import", "-q"]).arg(&src).arg(&db).output().unwrap();
    let msg = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{msg}");
    assert!(msg.contains("holds no file to import") && msg.contains("removed again"), "{msg}");
    assert!(!db.exists(), "no database left behind");
}

#[test]
fn a_source_that_cannot_be_read_leaves_no_new_database() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    // Not a tar archive at all (a text file under a tar name): nothing can be read from it.
    let junk = dir.path().join("junk.tar");
    std::fs::write(&junk, "this is not an archive\n".repeat(100)).unwrap();
    let db = dir.path().join("db");
    let out = Command::new(EXE).args(["import", "-q"]).arg(&junk).arg(&db).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("junk.tar") && msg.contains("not a tar archive"), "{msg}");
    // Into a new path, nothing is left behind.
    assert!(msg.contains("removed again") && !db.exists(), "{msg}");
    // Into a directory that was there: the database made in it goes again, the directory and
    // what else is in it stay.
    std::fs::create_dir(&db).unwrap();
    std::fs::write(db.join("notes.txt"), "mine").unwrap();
    let out = Command::new(EXE).args(["import", "-q"]).arg(&junk).arg(&db).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    let left: Vec<_> = std::fs::read_dir(&db).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(msg.contains("a database was created in") && msg.contains("removed again"), "{msg}");
    assert_eq!(left, ["notes.txt"], "{msg}");
    // So the right source can be imported into the same directory, without --resume.
    let src = dir.path().join("d.tar");
    generate(200, 5, &src, |_| {}).unwrap();
    let s = import(&src, &db, &ImportOptions::default()).unwrap();
    assert!(s.done && s.albums == 200, "{}", s.albums);
    // The size the summary gives is what stays on disk (it counted the data file's growth slack
    // and the journal files a close gives back: 4.5 MB said for 1.3 MB).
    assert_eq!(s.db_bytes, jackdaw_freedb::db::dir_bytes(&db));
    // Refused with another source named: the advice names the source to resume from.
    let out = Command::new(EXE).args(["import", "-q"]).arg(&junk).arg(&db).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("continues it from d.tar (not junk.tar)"), "{msg}");
}

/// An open that fails after the database's files were made (a low descriptor limit; a full disk
/// fails it the same way) takes them back: into a new path nothing is left; into a directory
/// that was there, only what was in it before.
#[test]
fn an_import_whose_database_does_not_open_leaves_nothing() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(50, 3, &src, |_| {}).unwrap();
    let import_with_few_descriptors = |db: &Path| {
        let sh = format!("ulimit -n 6; exec {EXE} import -q {} {}", src.display(), db.display());
        let out = Command::new("sh").args(["-c", &sh]).output().unwrap();
        let msg = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{msg}");
        assert!(msg.contains("Too many open files") && msg.contains("removed again"), "{msg}");
    };
    let new = dir.path().join("new");
    import_with_few_descriptors(&new);
    assert!(!new.exists());
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    import_with_few_descriptors(&mine);
    let left: Vec<_> = std::fs::read_dir(&mine).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["notes.txt"]);
}

/// Counts a program sizes its work by are refused when out of range (exit 2, clap's message
/// naming the range), before anything is made: a huge `--batch` panicked ("capacity overflow")
/// or aborted on a failed allocation, leaving the new database; `generate` and `demo` alike;
/// `bench` with an unknown engine named it only after generating its archive.
#[test]
fn counts_out_of_range_are_refused_before_anything_is_made() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(20, 3, &src, |_| {}).unwrap();
    let db = dir.path().join("db");
    let run = |args: &[&str]| {
        let out = Command::new(EXE).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for batch in ["0", "100001", "4294967296", "18446744073709551615"] {
        let (code, msg) = run(&["import", "-q", "--batch", batch, src.to_str().unwrap(), db.to_str().unwrap()]);
        assert!(code == Some(2) && msg.contains("1..=100000"), "--batch {batch}: {code:?} {msg}");
    }
    let x = dir.path().join("x.tar");
    let (code, msg) = run(&["generate", "--albums", "4294967296", "-o", x.to_str().unwrap()]);
    assert!(code == Some(2) && msg.contains("1..=100000000"), "{code:?} {msg}");
    let (code, msg) = run(&["demo", "--albums", "5"]);
    assert!(code == Some(2) && msg.contains("1000..=100000000"), "{code:?} {msg}");
    let bench_dir = dir.path().join("bench");
    let (code, msg) =
        run(&["bench", "--engines", "jackdaw,bogus", "--albums", "50", "--dir", bench_dir.to_str().unwrap()]);
    assert!(code == Some(1) && msg.contains("unknown engine \"bogus\""), "{code:?} {msg}");
    assert!(!db.exists() && !x.exists() && !bench_dir.exists());
    assert!(jackdaw_freedb::gen::generate(jackdaw_freedb::MAX_ALBUMS + 1, 1, &x, |_| {}).is_err() && !x.exists());
}

/// A reindex that fails half-way (here: a damaged page of `albums`) leaves the index it was
/// rebuilding as it was: it used to delete the index first and build it anew in batches, so a
/// failure or a kill left it empty or partial, and searches quietly missed albums.
#[test]
fn a_reindex_that_fails_leaves_the_index_as_it_was() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(600, 8, &src, |_| {}).unwrap();
    let db = dir.path().join("db");
    import(&src, &db, &ImportOptions::default()).unwrap();
    let artists = |d: &Path| -> Option<u64> {
        let d = Db::open_existing(d).ok()?;
        let r = d.env.read().ok()?;
        let n = d.index(&r, Index::Artists).ok()??.len(&r).ok();
        drop(r);
        let _ = d.env.close();
        n
    };
    let before = artists(&db).unwrap();
    assert!(before >= 600);
    let data = std::fs::read(db.join("data.jdb")).unwrap();
    // Damage one page of `albums` at a time (a copy each time; `check` names the tree a damaged
    // page is in), which the reindex reads.
    let mut failed = 0;
    for page in 4..data.len() / 4096 {
        let copy = dir.path().join(format!("copy-{page}"));
        std::fs::create_dir(&copy).unwrap();
        let mut bytes = data.clone();
        bytes[page * 4096 + 2000] ^= 0xff;
        std::fs::write(copy.join("data.jdb"), bytes).unwrap();
        let in_albums = {
            let env = jackdaw::Env::open(&copy, jackdaw::Options::default()).unwrap();
            let report = env.check().unwrap();
            env.close().unwrap();
            report.problems.iter().any(|p| p.tree.as_deref() == Some("albums"))
        };
        if in_albums {
            assert!(reindex(&copy, Index::Artists).is_err(), "page {page} of albums damaged, yet the reindex ran");
            assert_eq!(artists(&copy), Some(before), "page {page} of albums damaged: the index lost entries");
            failed += 1;
        }
        std::fs::remove_dir_all(&copy).unwrap();
        if failed == 3 {
            break;
        }
    }
    assert_eq!(failed, 3, "fewer than three pages of albums found");
    // Undamaged, it rebuilds the index to the same entries.
    assert_eq!(reindex(&db, Index::Artists).unwrap(), before);
    assert_eq!(artists(&db), Some(before));
}

/// `generate -o /dev/stdout` whose reader goes away before the archive's end fails (exit 1,
/// saying the archive is incomplete): it exited 0 in silence, as `search | head` does, and a
/// script piping the archive on took a truncated one for whole.
#[test]
fn a_generated_archive_whose_reader_goes_away_is_an_error() {
    use std::io::Read;
    let mut child = Command::new(EXE)
        .args(["generate", "--albums", "20000", "-o", "/dev/stdout"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 4096];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("went away before the archive's end"), "{err}");
}
