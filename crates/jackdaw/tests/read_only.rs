//! `Options::read_only(true)`: shared locking against writers (both ways) and between readers,
//! writes refused with `Error::ReadOnly`, and a crashed database's journal replayed in memory
//! without a byte of the files changing.

mod common;

use common::{test_opts, TestDb};
use jackdaw::internals::{MemStorage, Storage};
use jackdaw::{Env, Error, FlusherMode, Options, WriteBatch};
use std::path::Path;
use std::sync::Arc;

fn ro() -> Options {
    Options::default().read_only(true)
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["", "journal"] {
        let d = dir.join(sub);
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                out.push((format!("{sub}/{}", e.file_name().to_string_lossy()), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn readers_share_and_writers_are_kept_out_both_ways() {
    let dir = TestDb::dir("ro-locks");
    {
        let env = Env::open(&dir, Options::default()).unwrap();
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        tx.put(&t, "k", "v").unwrap();
        tx.commit().unwrap();
        // A writer holds it: a read-only open is refused, naming the holder.
        match Env::open(&dir, ro()) {
            Err(Error::Locked { path, pid }) => {
                assert_eq!(path, dir.path().to_path_buf());
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("read-only open beside a writer: {other:?}"),
        }
    }
    let before = files(dir.path());
    let a = Env::open(&dir, ro()).unwrap();
    let b = Env::open(&dir, ro()).unwrap();
    for env in [&a, &b] {
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        assert_eq!(r.get(&t, "k").unwrap().unwrap().as_ref(), b"v");
        env.check().unwrap().into_result().unwrap();
    }
    // Readers hold it: a writer is refused.
    match Env::open(&dir, Options::default()) {
        Err(Error::Locked { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
        other => panic!("writer beside read-only Envs: {other:?}"),
    }
    // Writes are refused with a typed error.
    assert!(matches!(a.write(), Err(Error::ReadOnly(_))));
    assert!(matches!(a.try_write(), Err(Error::ReadOnly(_))));
    let r = a.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    drop(r);
    let mut batch = WriteBatch::new();
    batch.put(&t, "x", "y");
    assert!(matches!(a.write_batch(batch), Err(Error::ReadOnly(_))));
    a.flush().unwrap();
    a.sync().unwrap();
    a.close().unwrap();
    b.close().unwrap();
    drop((a, b));
    assert_eq!(files(dir.path()), before, "read-only Envs changed no file");
    // Once they are gone, a writer gets in.
    Env::open(&dir, Options::default()).unwrap();
}

#[test]
fn read_only_open_of_a_missing_database_creates_nothing() {
    let dir = TestDb::dir("ro-missing");
    let e = Env::open(dir.path().join("nothing"), ro()).unwrap_err();
    assert!(matches!(e, Error::NotADatabase(_)), "{e:?}");
    assert!(!dir.path().join("nothing").exists());
}

/// A crash image with unflushed commits in the journal: the read-only open sees every committed
/// transaction (replayed in memory), checks clean, and leaves every file as it was; a normal open
/// afterwards recovers the same content.
#[test]
fn crashed_database_is_replayed_in_memory() {
    let mem = MemStorage::new();
    let dir = std::path::PathBuf::from("/ro");
    let opts = || test_opts().storage(Arc::new(mem.clone())).flusher(FlusherMode::Manual);
    let env = Env::open(&dir, opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    for i in 0..2000u32 {
        tx.put(&t, i.to_be_bytes(), vec![i as u8; 100]).unwrap();
        tx.multi_put(&m, (i % 10).to_be_bytes(), i.to_be_bytes()).unwrap();
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    // Unflushed: only in the journal.
    for round in 0..5u32 {
        let mut tx = env.write().unwrap();
        for i in (round..2000).step_by(7) {
            tx.put(&t, i.to_be_bytes(), vec![(round + 1) as u8; 150]).unwrap();
        }
        tx.delete(&t, (round * 3).to_be_bytes()).unwrap();
        tx.commit().unwrap();
    }
    let last = env.stats().last_committed_txid;
    assert!(env.stats().last_flushed_txid < last, "commits left in the journal");
    let image = mem.deep_clone();
    let expect: Vec<(Vec<u8>, Vec<u8>)> = {
        let r = env.read().unwrap();
        r.range(&t, ..).unwrap().map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect()
    };
    drop(env);

    let snapshot = |s: &MemStorage| {
        let mut v: Vec<(String, Option<Vec<u8>>)> = Vec::new();
        v.push(("data.jdb".into(), s.read_file(&dir.join("data.jdb"))));
        for name in s.list_dir(&dir.join("journal")).unwrap() {
            v.push((name.clone(), s.read_file(&dir.join("journal").join(&name))));
        }
        v
    };
    // An unfinished journal file, which a normal open deletes: a read-only one leaves it.
    image.write_file(&dir.join("journal/0000000000000099.jnl.tmp"), &[0u8; 4096]);
    let before = snapshot(&image);
    assert!(before.iter().any(|(n, _)| n.ends_with(".jnl.tmp")));
    let env = Env::open(&dir, ro().storage(Arc::new(image.clone()))).unwrap();
    assert_eq!(env.stats().last_committed_txid, last);
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> =
        r.range(&t, ..).unwrap().map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect();
    assert_eq!(got, expect);
    drop(r);
    env.check().unwrap().into_result().unwrap();
    env.close().unwrap();
    drop(env);
    assert_eq!(snapshot(&image), before, "a read-only open changed the crash image");

    // And the normal open recovers the same.
    let env = Env::open(&dir, test_opts().storage(Arc::new(image))).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.range(&t, ..).unwrap().count(), expect.len());
    drop(r);
    env.check().unwrap().into_result().unwrap();
}
