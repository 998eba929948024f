//! Searches against an independent in-memory model of the same albums: for random queries
//! drawn from the data (prefixes of artists, titles and track titles of random lengths, in
//! random letter case; disc ids; words; strings that match nothing), the database returns
//! exactly the model's albums, in the model's order. Also `freedb search` and `freedb stats
//! --json` as a user runs them.

mod common;

use common::{model, seed, Xs};
use jackdaw_freedb::db::Db;
use jackdaw_freedb::gen::generate;
use jackdaw_freedb::import::{import, ImportOptions};
use jackdaw_freedb::parse::Album;
use jackdaw_freedb::query::{search, Query};
use std::process::Command;

/// The model's answer, written from the spec, not from the importer's code: lower-case the
/// field (cut to 255 bytes at a character boundary), keep the albums whose field starts with
/// the lower-cased prefix, order by (field, album id), each album once, first `limit`.
fn model_prefix(albums: &[Album], field: impl Fn(&Album) -> Vec<&str>, prefix: &str, limit: usize) -> Vec<u64> {
    let p = prefix.trim().to_lowercase();
    if p.is_empty() {
        return vec![];
    }
    let cut = |s: &str| {
        let l = s.trim().to_lowercase();
        let mut end = l.len().min(255);
        while !l.is_char_boundary(end) {
            end -= 1;
        }
        l[..end].to_string()
    };
    let mut hits: Vec<(String, u64)> = Vec::new();
    for (id, a) in albums.iter().enumerate() {
        for f in field(a) {
            let k = cut(f);
            if !k.is_empty() && k.starts_with(&p) {
                hits.push((k, id as u64));
            }
        }
    }
    hits.sort();
    hits.dedup();
    let mut out = Vec::new();
    for (_, id) in hits {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out.truncate(limit);
    out
}

fn model_words(albums: &[Album], field: impl Fn(&Album) -> &str, query: &str, limit: usize) -> Vec<u64> {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_lowercase()).collect()
    };
    let q = split(query);
    if q.is_empty() {
        return vec![];
    }
    (0..albums.len() as u64)
        .filter(|&id| {
            let ws = split(field(&albums[id as usize]));
            q.iter().all(|p| ws.iter().any(|w| w.starts_with(p.as_str())))
        })
        .take(limit)
        .collect()
}

fn mix_case(s: &str, rng: &mut Xs) -> String {
    s.chars().map(|c| if rng.below(2) == 0 { c.to_uppercase().collect::<String>() } else { c.to_string() }).collect()
}

fn prefix_of(s: &str, rng: &mut Xs) -> String {
    let n = s.chars().count();
    s.chars().take(1 + rng.below(n as u64 + 1) as usize).collect()
}

#[test]
fn searches_match_the_in_memory_model() {
    let _serial = common::serial();
    let s = seed("searches_match_the_in_memory_model");
    let mut rng = Xs(s | 1);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(2500, s, &src, |_| {}).unwrap();
    let albums = model(&src);
    let dbdir = dir.path().join("db");
    import(&src, &dbdir, &ImportOptions { track_index: true, words: true, batch: 300, ..Default::default() }).unwrap();
    let db = Db::open_existing(&dbdir).unwrap();
    let mut checked = 0;
    for round in 0..600 {
        let a = &albums[rng.below(albums.len() as u64) as usize];
        let limit = [1, 5, 20, 1000][rng.below(4) as usize];
        let (q, want, words) = match round % 6 {
            0 => {
                let d = &a.discids[rng.below(a.discids.len() as u64) as usize];
                let id = mix_case(d, &mut rng);
                let want: Vec<u64> = (0..albums.len() as u64)
                    .filter(|&i| albums[i as usize].discids.iter().any(|x| x.eq_ignore_ascii_case(&id)))
                    .take(limit)
                    .collect();
                (Query::DiscId(id), want, false)
            }
            1 => {
                let p = mix_case(&prefix_of(&a.artist, &mut rng), &mut rng);
                let want = model_prefix(&albums, |x| vec![x.artist.as_str()], &p, limit);
                (Query::Artist(p), want, false)
            }
            2 => {
                let p = mix_case(&prefix_of(&a.title, &mut rng), &mut rng);
                let want = model_prefix(&albums, |x| vec![x.title.as_str()], &p, limit);
                (Query::Title(p), want, false)
            }
            3 => {
                let Some(t) = a.tracks.get(rng.below(a.tracks.len() as u64) as usize) else { continue };
                let p = prefix_of(&t.title, &mut rng);
                let want = model_prefix(&albums, |x| x.tracks.iter().map(|t| t.title.as_str()).collect(), &p, limit);
                (Query::Track(p), want, false)
            }
            4 => {
                // A word prefix from the middle of the artist or the title.
                let (text, is_artist) = if rng.below(2) == 0 { (&a.artist, true) } else { (&a.title, false) };
                let ws: Vec<&str> = text.split(' ').collect();
                let w = prefix_of(ws[rng.below(ws.len() as u64) as usize], &mut rng);
                if is_artist {
                    let want = model_words(&albums, |x| &x.artist, &w, limit);
                    (Query::Artist(w), want, true)
                } else {
                    let want = model_words(&albums, |x| &x.title, &w, limit);
                    (Query::Title(w), want, true)
                }
            }
            _ => {
                // Mostly nothing: a random string.
                let p: String = (0..1 + rng.below(4)).map(|_| (b'a' + rng.below(26) as u8) as char).collect();
                let want = model_prefix(&albums, |x| vec![x.artist.as_str()], &p, limit);
                (Query::Artist(p), want, false)
            }
        };
        let got: Vec<u64> = search(&db, &q, words, limit).unwrap().into_iter().map(|(id, _)| id).collect();
        assert_eq!(got, want, "query {q:?} words={words} limit={limit}");
        checked += 1;
    }
    assert!(checked > 450);
    // The results carry the albums themselves.
    let res = search(&db, &Query::DiscId(albums[10].discids[0].clone()), false, 10).unwrap();
    assert!(res.iter().any(|(id, a)| *id == 10 && *a == albums[10]));
}

#[test]
fn the_cli_searches_and_prints_stats() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("d.tar");
    generate(600, 9, &src, |_| {}).unwrap();
    let albums = model(&src);
    let dbdir = dir.path().join("db");
    let exe = env!("CARGO_BIN_EXE_freedb");
    let st = Command::new(exe).args(["import", "-q", "--words"]).arg(&src).arg(&dbdir).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let summary = String::from_utf8_lossy(&st.stdout);
    let first = summary.lines().next().unwrap_or("");
    assert_eq!(
        first.split_whitespace().take(2).collect::<Vec<_>>(),
        ["albums", &albums.len().to_string()],
        "{summary}"
    );
    let out = Command::new(exe).args(["stats", "--json"]).arg(&dbdir).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["albums"], albums.len() as u64);
    assert_eq!(v["indexes"]["ix_titles"], albums.iter().filter(|a| !a.title.is_empty()).count() as u64);
    // "Pearl" finds "Pearl Jam"-style: an artist's first letters, in upper case.
    let a = &albums[3];
    let p: String = a.artist.chars().take(3).collect::<String>().to_uppercase();
    let out = Command::new(exe).args(["search", "--limit", "50", "--artist", &p]).arg(&dbdir).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.contains(&a.discids[0]) && l.contains(&a.title)), "{text}");
    // No query given, and an index that is not there: clear errors, non-zero exit.
    let out = Command::new(exe).args(["search"]).arg(&dbdir).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--artist"));
    let out = Command::new(exe).args(["search", "--track", "x"]).arg(&dbdir).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reindex"));
    // An empty (or blank) text: an error, not "no album found".
    for blank in ["", "   "] {
        let out = Command::new(exe).args(["search", "--artist", blank]).arg(&dbdir).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("is empty"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = Command::new(exe).args(["stats"]).arg(dir.path().join("none")).output().unwrap();
    assert!(!out.status.success());
}

/// `freedb bench` at a small size: every engine returns the same albums for the same queries,
/// right after the import and after a reopen (the bench fails otherwise), and the JSON holds both
/// passes with the same albums returned per kind. `--keep` leaves the databases, `--reuse`
/// queries them again without importing (the same albums returned), and refuses a directory
/// with no database or databases of other albums.
#[test]
fn the_bench_runs_every_engine_both_passes() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_freedb");
    let bench = |json: &std::path::Path, bdir: &str, extra: &str| {
        Command::new(exe)
            .args(["bench", "--albums", "400", "--queries", "40", "--batch", "100", "--engines", "jackdaw,sqlite,lmdb"])
            .arg(extra)
            .arg("--dir")
            .arg(dir.path().join(bdir))
            .arg("--json")
            .arg(json)
            .output()
            .unwrap()
    };
    let returned = |e: &serde_json::Value, pass: &str| -> Vec<u64> {
        e[pass].as_array().unwrap().iter().map(|q| q[3].as_u64().unwrap()).collect()
    };
    let json = dir.path().join("r.json");
    let out = bench(&json, "b", "--keep");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let engines = v["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 3);
    let first = returned(&engines[0], "queries");
    assert_eq!(first.len(), 3, "three query kinds");
    assert!(first.iter().all(|n| *n > 0), "{first:?}");
    for e in engines {
        assert_eq!(returned(e, "queries"), first, "{}", e["engine"]);
        assert_eq!(returned(e, "queries_reopened"), first, "{}", e["engine"]);
        assert!(e["albums_per_s"].as_f64().unwrap() > 0.0, "{}", e["engine"]);
    }

    let json = dir.path().join("r2.json");
    let out = bench(&json, "b", "--reuse");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for e in v["engines"].as_array().unwrap() {
        assert_eq!(e["albums_per_s"].as_f64(), Some(0.0), "no import with --reuse: {}", e["engine"]);
        assert_eq!(returned(e, "queries"), first, "{}", e["engine"]);
        assert_eq!(returned(e, "queries_reopened"), first, "{}", e["engine"]);
    }

    let out = bench(&dir.path().join("r3.json"), "empty", "--reuse");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("were not kept by a run of these albums"));
    // Other albums (another seed) than the kept ones: refused, not measured against empty answers.
    let out = Command::new(exe)
        .args(["bench", "--albums", "400", "--seed", "9", "--queries", "40", "--batch", "100", "--reuse"])
        .arg("--dir")
        .arg(dir.path().join("b"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("were not kept by a run of these albums"));
}

/// Without `--keep`, a bench run leaves nothing of its own: the directory it made goes too (it
/// stayed, empty).
#[test]
fn the_bench_leaves_no_directory_it_made() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let bdir = dir.path().join("b");
    let out = Command::new(env!("CARGO_BIN_EXE_freedb"))
        .args(["bench", "--albums", "200", "--queries", "10", "--batch", "100", "--engines", "jackdaw", "--dir"])
        .arg(&bdir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!bdir.exists(), "{} left behind", bdir.display());
}
