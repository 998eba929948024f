//! The `jackdaw` binary driven as a user drives it (std::process::Command) on real databases:
//! dump/load round trips, LMDB interop with the real `mdb_dump`/`mdb_load` (skipped, saying so,
//! when `lmdb-utils` is absent), backup/restore, `check` exit statuses, the lock message, the
//! small commands and `--help`.

use jackdaw::{Env, Options};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn jackdaw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jackdaw")).args(args).output().expect("run jackdaw")
}

fn jackdaw_in(args: &[&str], input: &[u8]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_jackdaw"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jackdaw");
    c.stdin.take().unwrap().write_all(input).unwrap();
    c.wait_with_output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "status {:?}\nstdout {}\nstderr {}", o.status, out(o), err(o));
    out(o)
}
fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

type Content = BTreeMap<String, (bool, Vec<(Vec<u8>, Vec<u8>)>)>;

fn content(dir: &Path) -> Content {
    let env = open_env(dir, Options::default().read_only(true));
    let r = env.read().unwrap();
    let mut out = BTreeMap::new();
    for name in r.list_trees().unwrap() {
        let t = r.open_tree(&name).unwrap().unwrap();
        let mut v = Vec::new();
        if t.is_multi() {
            for k in r.keys(&t, ..).unwrap() {
                let k = k.unwrap();
                for x in r.multi_get(&t, &k).unwrap() {
                    v.push((k.to_vec(), x.unwrap().to_vec()));
                }
            }
        } else {
            for e in r.range(&t, ..).unwrap() {
                let (k, x) = e.unwrap();
                v.push((k.to_vec(), x.to_vec()));
            }
        }
        out.insert(name, (t.is_multi(), v));
    }
    out
}

/// Plain and multi trees with the awkward bytes (0x00, 0x0a, 0xff, empty values); `big` adds
/// what LMDB cannot hold (the largest key, overflow values, a nested tree of long values).
fn build(dir: &Path, big: bool) {
    let env = open_env(dir, Options::default());
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("plain").unwrap();
    let m = tx.create_multi_tree("multi").unwrap();
    tx.create_tree("empty tree").unwrap();
    for i in 0..500u32 {
        tx.put(&t, format!("key{i:04}"), format!("value {i}")).unwrap();
    }
    tx.put(&t, [0u8, 0x0a, 0xff], [0xffu8, 0x0a, 0x00]).unwrap();
    tx.put(&t, "empty", b"").unwrap();
    tx.put(&t, [0x0au8], b"\n").unwrap();
    tx.put(&t, vec![b'k'; 511], vec![b'v'; 3000]).unwrap();
    for i in 0..300u32 {
        for j in 0..(i % 7 + 1) {
            tx.multi_put(&m, format!("m{:03}", i % 40), format!("v{j}-{i}")).unwrap();
        }
    }
    tx.multi_put(&m, [0u8, 0xff], [0x0au8]).unwrap();
    if big {
        // LMDB drops an empty value of a DUPSORT database (mdb_load 0.9.24 loads it, mdb_dump
        // shows nothing): only the Jackdaw round trip carries it.
        tx.multi_put(&m, [0u8, 0xff], b"").unwrap();
        tx.put(&t, vec![0xeeu8; jackdaw::max_key_size(4096)], b"largest key").unwrap();
        tx.put(&t, "overflow", vec![7u8; 100_000]).unwrap();
        for j in 0..400u32 {
            tx.multi_put(&m, "many", format!("{j:05}-{}", "x".repeat(600))).unwrap();
        }
    }
    tx.commit().unwrap();
    env.close().unwrap();
}

#[test]
fn dump_load_round_trip_is_equal_tree_by_tree() {
    let d = tempfile::tempdir().unwrap();
    let (a, b, f) = (d.path().join("a"), d.path().join("b"), d.path().join("dump.txt"));
    build(&a, true);
    let o = jackdaw(&["dump", p(&a), "-o", p(&f)]);
    ok(&o);
    let warn = err(&o);
    assert!(warn.contains("over LMDB's 511-byte limit"), "dump warns about the keys LMDB cannot hold: {warn}");
    assert!(warn.contains("tree plain: key 0xeeee"), "names the key: {warn}");
    assert!(warn.contains("tree multi: a value of key many"), "names the value's key: {warn}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("VERSION=3\nformat=bytevalue\ndatabase="), "{}", &text[..100]);
    assert!(text.contains("database=multi\ntype=btree\ndupsort=1\nmapsize="));
    ok(&jackdaw(&["load", p(&b), "-f", p(&f)]));
    let (ca, cb) = (content(&a), content(&b));
    assert_eq!(ca.keys().collect::<Vec<_>>(), cb.keys().collect::<Vec<_>>());
    for (name, v) in &ca {
        assert!(Some(v) == cb.get(name), "tree {name} differs after dump/load");
    }
    // Through a pipe (stdout -> stdin) and into one named tree.
    let dumped = jackdaw(&["dump", p(&a), "-t", "plain"]);
    let c = d.path().join("c");
    ok(&jackdaw_in(&["load", p(&c), "-t", "copy"], &dumped.stdout));
    assert_eq!(content(&c).get("copy"), ca.get("plain"));
    ok(&jackdaw(&["check", p(&b)]));
}

fn have_lmdb() -> bool {
    let found =
        Command::new("mdb_dump").arg("-V").output().is_ok() && Command::new("mdb_load").arg("-V").output().is_ok();
    if !found {
        println!("SKIPPED: mdb_dump/mdb_load not found (Debian package lmdb-utils; .ci/run installs it): LMDB interop not tested");
    }
    found
}

fn run(cmd: &str, args: &[&str], input: Option<&[u8]>) -> Output {
    let mut c = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let mut stdin = c.stdin.take().unwrap();
    if let Some(i) = input {
        stdin.write_all(i).unwrap();
    }
    drop(stdin);
    c.wait_with_output().unwrap()
}

#[test]
fn lmdb_interop_both_ways() {
    if !have_lmdb() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (a, lm, back) = (d.path().join("a"), d.path().join("lmdb"), d.path().join("back"));
    build(&a, false);
    std::fs::create_dir(&lm).unwrap();
    // jackdaw dump | mdb_load (with -a, append mode, where this mdb_load has it: 0.9.24 of
    // Debian 12 has not; the input is in LMDB's order either way).
    let dumped = jackdaw(&["dump", p(&a)]);
    ok(&dumped);
    let usage = err(&run("mdb_load", &[], None));
    let args: Vec<&str> = if usage.contains("[-a]") { vec!["-a", p(&lm)] } else { vec![p(&lm)] };
    ok(&run("mdb_load", &args, Some(&dumped.stdout)));
    // mdb_dump -a | jackdaw load
    let lmdb_text = run("mdb_dump", &["-a", p(&lm)], None);
    let text = ok(&lmdb_text);
    assert!(
        text.contains("database=multi") && text.contains("\n 6b6579"),
        "real mdb_dump output: {}",
        &text[..300.min(text.len())]
    );
    ok(&jackdaw_in(&["load", p(&back)], &lmdb_text.stdout));
    let (ca, cb) = (content(&a), content(&back));
    // LMDB keeps no empty database through dump -a (mdb_load creates it only with data); the rest
    // must come back equal, tree by tree.
    for (name, v) in &ca {
        if v.1.is_empty() {
            continue;
        }
        assert!(Some(v) == cb.get(name), "tree {name} differs after going through LMDB");
    }
    // The print format (mdb_dump -p) too.
    let printed = run("mdb_dump", &["-p", "-a", p(&lm)], None);
    assert!(ok(&printed).contains("format=print"));
    let pr = d.path().join("printed");
    ok(&jackdaw_in(&["load", p(&pr)], &printed.stdout));
    assert!(content(&pr).get("plain") == ca.get("plain") && content(&pr).get("multi") == ca.get("multi"));
    // LMDB's main database (plain mdb_dump, no database= line) into a tree named with -t.
    let main = d.path().join("main-lmdb");
    std::fs::create_dir(&main).unwrap();
    let input = "VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=1048576\nHEADER=END\n 00ff\n 0a\n 6b\n \nDATA=END\n";
    ok(&run("mdb_load", &[p(&main)], Some(input.as_bytes())));
    let main_dump = run("mdb_dump", &[p(&main)], None);
    let m = d.path().join("m");
    let no_tree = jackdaw_in(&["load", p(&m)], &main_dump.stdout);
    assert_eq!(no_tree.status.code(), Some(1));
    assert!(err(&no_tree).contains("-t TREE"), "{}", err(&no_tree));
    ok(&jackdaw_in(&["load", p(&m), "-t", "main"], &main_dump.stdout));
    let got = content(&m);
    assert_eq!(got["main"].1, vec![(vec![0x00, 0xff], vec![0x0a]), (b"k".to_vec(), vec![])]);
}

#[test]
fn load_accepts_what_the_real_tools_print() {
    // duplicates=1 beside dupsort=1, unknown header keys, CRLF line ends.
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input = "VERSION=3\nformat=bytevalue\ndatabase=dups\ntype=btree\nduplicates=1\nmaxreaders=126\ndb_pagesize=4096\nsomething_new=7\nHEADER=END\n 61\n 01\n 61\n 02\r\nDATA=END\n";
    ok(&jackdaw_in(&["load", p(&db)], input.as_bytes()));
    let c = content(&db);
    assert_eq!(c["dups"], (true, vec![(b"a".to_vec(), vec![1]), (b"a".to_vec(), vec![2])]));
    // Bad input: a message with the line, exit 1, nothing half-loaded into a new tree.
    let bad = jackdaw_in(&["load", p(&db)], b"VERSION=3\ndatabase=x\nHEADER=END\n 6g\n 00\nDATA=END\n");
    assert_eq!(bad.status.code(), Some(1));
    assert!(err(&bad).contains("line 4"), "{}", err(&bad));
    assert!(!content(&db).contains_key("x"));
    // Hex whose digit pairs cut a multi-byte character: an error, not a panic (exit 101 before).
    let bad = jackdaw_in(&["load", p(&db)], "VERSION=3\ndatabase=x\nHEADER=END\n aéb\n 00\nDATA=END\n".as_bytes());
    assert_eq!(bad.status.code(), Some(1), "{}", err(&bad));
    assert!(err(&bad).contains("line 4") && err(&bad).contains("is not hex"), "{}", err(&bad));
    let bad = jackdaw(&["get", "--hex", p(&db), "dups", "aéb"]);
    assert!(err(&bad).contains("\"aéb\" is not hex") && !err(&bad).contains("panicked"), "{}", err(&bad));
    // A binary file as input: the message quotes the start of its first line, not megabytes of it.
    let bad = jackdaw_in(&["load", p(&db)], &vec![0u8; 1 << 20]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(err(&bad).contains("expected KEY=VALUE") && err(&bad).len() < 600, "{} bytes of message", err(&bad).len());
}

#[test]
fn backup_restore_and_compact_through_the_binary() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    build(&a, true);
    let ca = content(&a);
    let (copy, packed, restored, archive) =
        (d.path().join("copy"), d.path().join("packed"), d.path().join("restored"), d.path().join("a.jdwb"));
    let o = jackdaw(&["backup", p(&a), p(&copy)]);
    ok(&o);
    // stderr is a pipe here: no progress bar, only the closing line.
    let e = err(&o);
    assert!(e.starts_with("jackdaw: backup of transaction ") && e.lines().count() == 1, "{e:?}");
    ok(&jackdaw(&["backup", p(&a), p(&packed), "--compact"]));
    let streamed = jackdaw(&["backup", p(&a), "-"]);
    ok(&streamed);
    assert_eq!(&streamed.stdout[..8], b"JKDWBKUP");
    std::fs::write(&archive, &streamed.stdout).unwrap();
    ok(&jackdaw(&["restore", p(&archive), p(&restored)]));
    let piped = d.path().join("piped");
    ok(&jackdaw_in(&["restore", "-", p(&piped)], &streamed.stdout));
    for dir in [&copy, &packed, &restored, &piped] {
        ok(&jackdaw(&["check", p(dir)]));
        assert_eq!(content(dir), ca, "{}", dir.display());
    }
    // A damaged archive: exit 1, no directory.
    let mut bad = streamed.stdout.clone();
    let n = bad.len();
    bad[n / 2] ^= 0x40;
    let bad_dest = d.path().join("bad");
    let o = jackdaw_in(&["restore", "-", p(&bad_dest)], &bad);
    assert!(!o.status.success());
    assert!(err(&o).contains("damaged"), "{}", err(&o));
    assert!(!bad_dest.exists());
}

#[test]
fn check_exits_1_naming_the_page_of_a_flipped_byte() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    build(&a, false);
    ok(&jackdaw(&["check", p(&a)]));
    let leaf = {
        let env = open_env(&a, Options::default().read_only(true));
        let r = env.read().unwrap();
        let t = r.open_tree("plain").unwrap().unwrap();
        let l = jackdaw::internals::tree_layout(&r, &t).unwrap();
        l.pages.iter().find(|p| p.level == 0).unwrap().pgno
    };
    let mut data = std::fs::read(a.join("data.jdb")).unwrap();
    data[(leaf * 4096 + 2000) as usize] ^= 0x01;
    std::fs::write(a.join("data.jdb"), &data).unwrap();
    let o = jackdaw(&["check", p(&a)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains(&format!("page {leaf}:")), "names page {leaf}: {}", out(&o));
    let j = jackdaw(&["check", p(&a), "--json"]);
    assert_eq!(j.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(v["clean"], false);
    assert!(v["problems"].as_array().unwrap().iter().any(|p| p["page"] == leaf));
    // Looking did not change it.
    assert_eq!(std::fs::read(a.join("data.jdb")).unwrap(), data);

    // Both header slots damaged: the open itself fails with Corrupted, which is damage (1), not
    // "cannot examine" (2).
    let h = d.path().join("h");
    build(&h, false);
    let mut data = std::fs::read(h.join("data.jdb")).unwrap();
    data[40] ^= 1;
    data[4096 + 40] ^= 1;
    std::fs::write(h.join("data.jdb"), &data).unwrap();
    let o = jackdaw(&["check", p(&h)]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("damaged"), "{}", err(&o));
}

#[test]
fn a_locked_database_exits_2_naming_path_and_holder() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    build(&a, false);
    let env = open_env(&a, Options::default());
    let me = format!("process {}", std::process::id());
    for args in [
        vec!["check", p(&a)],
        vec!["stat", p(&a)],
        vec!["get", p(&a), "plain", "key0001"],
        vec!["put", p(&a), "plain", "k", "v"],
        vec!["dump", p(&a)],
    ] {
        let o = jackdaw(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(p(&a)) && err(&o).contains(&me), "{args:?}: {}", err(&o));
    }
    let o = jackdaw(&["backup", p(&a), p(&d.path().join("b"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("Env::backup_to"), "{}", err(&o));
    drop(env);
    // Not a database: 2, with the reason.
    let o = jackdaw(&["check", p(d.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("not a Jackdaw database"), "{}", err(&o));
    // Several read-only commands at once are fine: a reader does not lock out a reader.
    let ro = open_env(&a, Options::default().read_only(true));
    ok(&jackdaw(&["check", p(&a)]));
    drop(ro);
}

#[test]
fn small_commands() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    let a = p(&a);
    // `del` on a path with no database makes none; the first `put` says it made one.
    let nothing = d.path().join("typo");
    let del = jackdaw(&["del", p(&nothing), "t", "b"]);
    assert_eq!(del.status.code(), Some(2));
    assert!(err(&del).contains("is not a Jackdaw database") && !nothing.exists(), "{}", err(&del));
    let first = jackdaw(&["put", a, "t", "b", "2"]);
    ok(&first);
    assert!(err(&first).contains("created a new database at"), "{}", err(&first));
    // A put that fails into a new path leaves nothing (a key over the limit; a low descriptor
    // limit, which fails the open after the database's files were made).
    let long = "k".repeat(3000);
    let bad = jackdaw(&["put", p(&nothing), "t", &long, "v"]);
    assert_eq!(bad.status.code(), Some(1), "{}", err(&bad));
    assert!(
        err(&bad).contains("over the limit") && err(&bad).contains("removed again") && !nothing.exists(),
        "{}",
        err(&bad)
    );
    let bin = env!("CARGO_BIN_EXE_jackdaw");
    let low = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n 6; exec {bin} put {} t k v", p(&nothing)))
        .output()
        .unwrap();
    assert_eq!(low.status.code(), Some(2), "{}", err(&low));
    assert!(err(&low).contains("removed again") && !nothing.exists(), "{}", err(&low));
    // Into a directory that exists with something of the user's in it: the database's files go
    // again, the directory and the user's file stay.
    let mine = d.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let bad = jackdaw(&["put", p(&mine), "t", &long, "v"]);
    assert_eq!(bad.status.code(), Some(1), "{}", err(&bad));
    let left: Vec<_> = std::fs::read_dir(&mine).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(err(&bad).contains("removed again") && left == ["notes.txt"], "{left:?}: {}", err(&bad));
    assert_eq!(std::fs::read_to_string(mine.join("notes.txt")).unwrap(), "keep me");
    let second = jackdaw(&["put", a, "t", "a", "1"]);
    ok(&second);
    assert!(!err(&second).contains("created"), "{}", err(&second));
    ok(&jackdaw(&["put", a, "t", "ab", "3"]));
    ok(&jackdaw(&["put", "--hex", a, "t", "00ff", "0a"]));
    assert_eq!(ok(&jackdaw(&["get", a, "t", "a"])), "1\n");
    assert_eq!(ok(&jackdaw(&["get", "--hex", a, "t", "00ff"])), "0x0a\n");
    assert_eq!(ok(&jackdaw(&["scan", a, "t"])), "0x00ff\t0x0a\na\t1\nab\t3\nb\t2\n");
    assert_eq!(ok(&jackdaw(&["scan", a, "t", "--prefix", "a"])), "a\t1\nab\t3\n");
    assert_eq!(ok(&jackdaw(&["scan", a, "t", "--from", "a", "--to", "b", "--keys-only"])), "a\nab\n");
    assert_eq!(ok(&jackdaw(&["scan", a, "t", "--reverse", "--limit", "2"])), "b\t2\nab\t3\n");
    assert_eq!(ok(&jackdaw(&["trees", a])), "t\tplain\t4\n");
    ok(&jackdaw(&["del", a, "t", "ab"]));
    let missing = jackdaw(&["get", a, "t", "ab"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(err(&missing).contains("not found"));
    let stat = ok(&jackdaw(&["stat", a, "--trees"]));
    assert!(stat.contains("page size       4096") && stat.contains("last committed  transaction"), "{stat}");
    let js: serde_json::Value = serde_json::from_slice(&jackdaw(&["stat", a, "--trees", "--json"]).stdout).unwrap();
    assert_eq!(js["trees"][0]["entries"], 3);
    assert_eq!(js["trees"][0]["leaf_pages"], 1);
}

/// A load that fails says what it leaves, and leaves that: a mistyped input file creates no
/// database; a damaged dump into a new path leaves nothing behind; into an existing database,
/// the entries of the batches it committed before the damage (a load commits every 32 MiB; the
/// message gives their count, which the tree must hold) and nothing else.
#[test]
fn a_failed_load_says_what_it_kept() {
    let d = tempfile::tempdir().unwrap();
    let new = d.path().join("new");
    let o = jackdaw(&["load", p(&new), "-f", p(&d.path().join("missing.dump"))]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("missing.dump"), "{}", err(&o));
    assert!(!new.exists(), "a load whose input does not open created {}", new.display());

    // Line 8, a key of an odd number of hex digits.
    let bad = "VERSION=3\nformat=bytevalue\ndatabase=t\ntype=btree\nHEADER=END\n 61\n 31\n 6\n 32\nDATA=END\n";
    let o = jackdaw_in(&["load", p(&new)], bad.as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("line 8") && err(&o).contains("removed again"), "{}", err(&o));
    assert!(!new.exists(), "a failed load left the database it created");
    // An open that fails after making the database's files (six descriptors): nothing left.
    let sh = format!("ulimit -n 6; exec {} load {}", env!("CARGO_BIN_EXE_jackdaw"), p(&new));
    let o = run("sh", &["-c", &sh], Some(bad.as_bytes()));
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("removed again") && !new.exists(), "{}", err(&o));

    let old = d.path().join("old");
    ok(&jackdaw(&["put", p(&old), "t", "x", "1"]));
    let o = jackdaw_in(&["load", p(&old)], bad.as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("is unchanged"), "{}", err(&o));
    assert_eq!(ok(&jackdaw(&["scan", p(&old), "t"])), "x\t1\n");

    // 40 values of 1 MiB, then a key without a value: more than one batch was committed.
    let mut big = String::from("VERSION=3\nformat=bytevalue\ndatabase=t\ntype=btree\nHEADER=END\n");
    let value: String = "ab".repeat(1 << 20);
    for i in 0..40 {
        big.push_str(&format!(" {}\n {value}\n", hex(format!("k{i:02}").as_bytes())));
    }
    big.push_str(" 7a\nDATA=END\n");
    let o = jackdaw_in(&["load", p(&old)], big.as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let n = holds_what_it_says_it_kept(&old, &err(&o));
    assert!(n < 40, "all 40 entries said kept of a load that failed on the 41st key: {}", err(&o));
}

/// The count of the entries a failed load says it kept in `db` ("the first N entries ..."),
/// checked: at least one, the tree holds `k00`.. of them and the entry `x` that was there, and
/// `check` is clean.
fn holds_what_it_says_it_kept(db: &Path, msg: &str) -> usize {
    let n: usize = msg
        .split("the first ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of the entries kept in {msg:?}"));
    assert!(n > 0, "no entry said kept: {msg}");
    let keys = ok(&jackdaw(&["scan", p(db), "t", "--keys-only"]));
    let want: String = (0..n).map(|i| format!("k{i:02}\n")).chain(["x\n".to_string()]).collect();
    assert_eq!(keys, want, "the database holds other entries than the message says");
    ok(&jackdaw(&["check", p(db)]));
    n
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Start `jackdaw load DB` on a pipe, its SIGINT at the default action or ignored (as a shell
/// leaves it for a background job: whatever this test runs under, the child gets what the case
/// asks), write `input` into the pipe and keep it open (the load then waits for more), and once
/// `input` is written and the database is there, send `signals` (by name, for `kill`) in turn:
/// every one but the last must leave the load running for 0.5 s; return how it ended after the
/// last. A load that does not end within 20 s is killed and the test fails: it would have hung.
fn load_signalled(db: &Path, input: &[u8], sigint_ignored: bool, signals: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let disposition = if sigint_ignored { libc::SIG_IGN } else { libc::SIG_DFL };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jackdaw"));
    cmd.args(["load", p(db)]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGINT, disposition);
            Ok(())
        });
    }
    let mut c = cmd.spawn().expect("run jackdaw");
    let mut stdin = c.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    let t = std::time::Instant::now();
    while !db.join("data.jdb").exists() {
        assert!(t.elapsed().as_secs() < 20, "the load did not open {}", db.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = c.id().to_string();
    let (last, before) = signals.split_last().unwrap();
    for s in before {
        assert!(Command::new("kill").args([&format!("-{s}"), &pid]).status().unwrap().success());
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(c.try_wait().unwrap().is_none(), "SIG{s}, which the load started with ignored, stopped it");
    }
    let t = std::time::Instant::now();
    assert!(Command::new("kill").args([&format!("-{last}"), &pid]).status().unwrap().success());
    while c.try_wait().unwrap().is_none() {
        if t.elapsed().as_secs() > 20 {
            let _ = c.kill();
            panic!("the load did not stop within 20 s of SIG{last}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(stdin);
    c.wait_with_output().unwrap()
}

/// Ctrl-C (or SIGTERM) during a load ends it as a failed load ends, with status 130, even while
/// it waits for input: a database the load created is removed; an existing one keeps the
/// batches committed before the signal, which the message counts, and nothing else. A SIGINT
/// the load was started with ignored stays ignored.
#[test]
fn a_load_stopped_by_a_signal_says_what_it_kept() {
    let d = tempfile::tempdir().unwrap();
    let new = d.path().join("new");
    let head = "VERSION=3\nformat=bytevalue\ndatabase=t\ntype=btree\nHEADER=END\n 61\n 31\n";
    let o = load_signalled(&new, head.as_bytes(), false, &["INT"]);
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    assert!(err(&o).contains("interrupted") && err(&o).contains("removed again"), "{}", err(&o));
    assert!(!new.exists(), "a load stopped by Ctrl-C left the database it created");
    // Started with SIGINT ignored (a script's background job), it keeps it ignored.
    let o = load_signalled(&new, head.as_bytes(), true, &["INT", "TERM"]);
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    assert!(!new.exists(), "a load stopped by SIGTERM left the database it created");

    // 40 values of 1 MiB: all read before the signal (the pipe takes no more than a few blocks
    // ahead of the load), so at least one 32 MiB batch was committed.
    let old = d.path().join("old");
    ok(&jackdaw(&["put", p(&old), "t", "x", "1"]));
    let mut big = String::from(head.split(" 61").next().unwrap());
    let value: String = "ab".repeat(1 << 20);
    for i in 0..40 {
        big.push_str(&format!(" {}\n {value}\n", hex(format!("k{i:02}").as_bytes())));
    }
    let o = load_signalled(&old, big.as_bytes(), false, &["TERM"]);
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    holds_what_it_says_it_kept(&old, &err(&o));
}

#[test]
fn tree_picture_as_text_and_svg() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    build(&a, true);
    let text = ok(&jackdaw(&["tree", p(&a), "plain"]));
    assert!(
        text.contains("tree plain (plain)") && text.contains("level 0 (leaf)") && text.contains("overflow chains: "),
        "{text}"
    );
    let multi = ok(&jackdaw(&["tree", p(&a), "multi"]));
    assert!(multi.contains("nested trees: 1") && multi.contains("key many"), "{multi}");
    let svg = d.path().join("t.svg");
    ok(&jackdaw(&["tree", p(&a), "plain", "--svg", p(&svg)]));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>") && s.contains("<rect"), "{}", &s[..200]);
}

#[test]
fn help_says_what_each_command_does() {
    let top = ok(&jackdaw(&["--help"]));
    for cmd in ["stat", "check", "dump", "load", "get", "put", "del", "scan", "trees", "tree", "backup", "restore"] {
        assert!(top.lines().any(|l| l.trim_start().starts_with(cmd)), "--help lists {cmd}: {top}");
        let h = ok(&jackdaw(&[cmd, "--help"]));
        let first = h.lines().next().unwrap_or("");
        assert!(first.len() > 20, "{cmd} --help starts with a line saying what it does: {h}");
    }
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for sub in ["", "journal"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                out.insert(format!("{sub}/{}", e.file_name().to_string_lossy()), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// A crash image (the files of a live database with commits only in its journal, copied while it
/// is open): stat, check, dump, get, scan, trees and tree see every commit and change no byte.
#[test]
fn looking_at_a_crashed_database_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (live, img) = (d.path().join("live"), d.path().join("crashed"));
    let env = open_env(&live, Options::default().flusher(jackdaw::FlusherMode::Manual));
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, "flushed", "1").unwrap();
    tx.commit().unwrap();
    env.flush().unwrap();
    for i in 0..5 {
        let mut tx = env.write().unwrap();
        tx.put(&t, format!("journal-only-{i}"), "2").unwrap();
        tx.commit().unwrap();
    }
    assert!(env.stats().last_flushed_txid < env.stats().last_committed_txid);
    std::fs::create_dir_all(img.join("journal")).unwrap();
    for sub in ["data.jdb", "journal"] {
        let src = live.join(sub);
        if src.is_dir() {
            for e in std::fs::read_dir(&src).unwrap() {
                let e = e.unwrap();
                std::fs::copy(e.path(), img.join("journal").join(e.file_name())).unwrap();
            }
        } else {
            std::fs::copy(&src, img.join(sub)).unwrap();
        }
    }
    drop(env);
    let before = files(&img);
    assert!(ok(&jackdaw(&["stat", p(&img)])).contains("only in the journal"));
    ok(&jackdaw(&["check", p(&img)]));
    let dump = ok(&jackdaw(&["dump", p(&img)]));
    assert_eq!(dump.matches("\n 6a6f75726e616c2d6f6e6c792d").count(), 5, "every journal-only commit is dumped");
    assert_eq!(ok(&jackdaw(&["get", p(&img), "t", "journal-only-4"])), "2\n");
    assert_eq!(ok(&jackdaw(&["scan", p(&img), "t", "--keys-only"])).lines().count(), 6);
    ok(&jackdaw(&["trees", p(&img)]));
    ok(&jackdaw(&["tree", p(&img), "t"]));
    ok(&jackdaw(&["backup", p(&img), p(&d.path().join("bk"))]));
    assert!(files(&img) == before, "looking changed the crashed database's files");
    assert_eq!(content(&d.path().join("bk"))["t"].1.len(), 6);
}

/// `Env::open`, waiting out this process's own lock: a child spawned by a test on another thread
/// holds copies of this process's descriptors (and with them a just-closed database's lock)
/// between its fork and its exec.
fn open_env(dir: impl AsRef<std::path::Path>, o: Options) -> Env {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match Env::open(dir.as_ref(), o.clone()) {
            Err(jackdaw::Error::Locked { pid: Some(pid), .. })
                if pid == std::process::id() && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => break r.unwrap(),
        }
    }
}

/// A reader that stops reading (`jackdaw stat DB | head -1`): every command ends without a
/// panic (the printing ones panicked in `println!` on the broken pipe, exit 101), `check` still
/// with its verdict as exit code.
#[test]
fn a_closed_output_pipe_is_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&jackdaw(&["put", p(&db), "t", "k", "v"]));
    for args in [
        &["stat", p(&db)][..],
        &["stat", p(&db), "--trees", "--json"],
        &["check", p(&db)],
        &["check", p(&db), "--json"],
        &["trees", p(&db)],
        &["trees", p(&db), "--json"],
        &["tree", p(&db), "t"],
        &["dump", p(&db)],
        &["scan", p(&db), "t"],
        &["get", p(&db), "t", "k"],
    ] {
        // The read end is closed before the command writes anything.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_jackdaw")).args(args).stdout(writer).output().unwrap();
        assert!(!err(&o).contains("panicked"), "{args:?}: {}", err(&o));
        if args[0] != "get" {
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        }
    }
}

/// `dump -o FILE` that fails (here: no such tree) leaves a file that was there as it was and no
/// partial file beside it; one that succeeds replaces it whole; a device is written in place.
#[test]
fn a_failed_dump_into_a_file_leaves_it_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&jackdaw(&["put", p(&db), "t", "k", "v"]));
    let file = d.path().join("keep.dump");
    std::fs::write(&file, "precious").unwrap();
    let o = jackdaw(&["dump", p(&db), "-t", "nope", "-o", p(&file)]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("keep.dump") && err(&o).contains("no tree named"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");
    let new = d.path().join("new.dump");
    assert_eq!(jackdaw(&["dump", p(&db), "-t", "nope", "-o", p(&new)]).status.code(), Some(1));
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "a failed dump left files: {names:?}");
    ok(&jackdaw(&["dump", p(&db), "-t", "t", "-o", p(&file)]));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("VERSION=3\n") && text.contains(" 6b\n 76\n"), "{text}");
    ok(&jackdaw(&["dump", p(&db), "-t", "t", "-o", "/dev/null"]));
}

/// Messages say what is wrong: a database path that is a file (the data file itself points to
/// its directory; a `put` there says it changed nothing), a value missing under a key that is
/// there.
#[test]
fn messages_name_what_is_wrong() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    {
        let env = Env::open(&db, Options::default()).unwrap();
        let mut tx = env.write().unwrap();
        let m = tx.create_multi_tree("m").unwrap();
        tx.multi_put(&m, b"k", b"v1").unwrap();
        tx.commit().unwrap();
        env.close().unwrap();
    }
    let o = jackdaw(&["stat", p(&db.join("data.jdb"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("is a file; a Jackdaw database is the directory") && err(&o).contains(p(&db)),
        "{}",
        err(&o)
    );
    let file = d.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let o = jackdaw(&["put", p(&file), "t", "k", "v"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("is unchanged") && !err(&o).contains("created"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    let o = jackdaw(&["del", p(&db), "m", "k", "v3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("value v3 of key k not found in m"), "{}", err(&o));
    ok(&jackdaw(&["del", p(&db), "m", "k", "v1"]));
}

/// `load -t TREE` of an input whose blocks mix plain and DUPSORT databases says so (it said the
/// tree, which this load had just made, "exists as a plain tree").
#[test]
fn a_load_into_one_tree_of_mixed_blocks_says_why_it_stops() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let mixed = "VERSION=3\nformat=bytevalue\ndatabase=a\ntype=btree\nHEADER=END\n 61\n 31\nDATA=END\n\
                 VERSION=3\nformat=bytevalue\ndatabase=b\ntype=btree\ndupsort=1\nHEADER=END\n 62\n 32\nDATA=END\n";
    let o = jackdaw_in(&["load", p(&db), "-t", "one"], mixed.as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("-t one loads every block of the input into one tree"), "{}", err(&o));
    // Without -t each block has its tree.
    ok(&jackdaw_in(&["load", p(&db)], mixed.as_bytes()));
    assert_eq!(ok(&jackdaw(&["trees", p(&db)])), "a\tplain\t1\nb\tmulti\t1\n");
}
