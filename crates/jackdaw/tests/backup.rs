//! Hot backup (`Env::backup_to`, `backup_to_with`, `backup_to_writer`), compaction and
//! `restore_from`: the copy opens, checks clean, holds exactly the snapshot it names (also while
//! a writer commits continuously), needs no journal, and a damaged stream is refused.

mod common;

use common::{seed, Rng, TestDb};
use jackdaw::{BackupOptions, Env, Error, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Content = BTreeMap<String, (bool, Vec<(Vec<u8>, Vec<u8>)>)>;

/// Every tree: kind and entries (a multi tree's as (key, value) pairs).
fn content(env: &Env) -> Content {
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

fn journal_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("journal")).map(|d| d.count()).unwrap_or(0)
}

/// A database with a plain tree (with overflow values and deletions), a multi tree, an empty tree.
fn sample(dir: &Path, seed: u64) -> Env {
    let env = Env::open(dir, Options::default()).unwrap();
    let mut rng = Rng::new(seed);
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("plain").unwrap();
    let m = tx.create_multi_tree("multi").unwrap();
    tx.create_tree("empty").unwrap();
    for i in 0..3000u32 {
        let len = if i % 97 == 0 { 20_000 } else { (rng.below(200)) as usize };
        tx.put(&t, format!("k{i:06}"), vec![(i % 251) as u8; len]).unwrap();
        for j in 0..(i % 5) {
            tx.multi_put(&m, format!("m{:04}", i % 300), format!("v{j}-{i}")).unwrap();
        }
    }
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    for i in (0..3000u32).step_by(3) {
        tx.delete(&t, format!("k{i:06}")).unwrap();
    }
    tx.put(&t, [0u8, 0x0a, 0xff], b"").unwrap();
    tx.commit().unwrap();
    env
}

#[test]
fn backup_copy_opens_checks_and_equals_the_source() {
    let s = seed();
    let dir = TestDb::dir("backup-plain");
    let env = sample(&dir.path().join("db"), s);
    let before = content(&env);
    // What a backup into the same destination left when its process was killed goes; that of a
    // process still running (pid 1) stays.
    let dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    let mut dead = dead;
    dead.wait().unwrap();
    let orphan = dir.path().join(format!(".copy.backup-tmp-{dead_pid}"));
    let running = dir.path().join(".copy.backup-tmp-1");
    for d in [&orphan, &running] {
        std::fs::create_dir_all(d.join("journal")).unwrap();
        std::fs::write(d.join("data.jdb"), [0u8; 8192]).unwrap();
    }
    let stats = env.backup_to(dir.path().join("copy")).unwrap();
    assert!(!orphan.exists() && running.exists(), "a killed backup's directory stays, or a running one's went");
    std::fs::remove_dir_all(&running).unwrap();
    assert_eq!(stats.txid, env.stats().last_committed_txid);
    assert_eq!(stats.bytes, std::fs::metadata(dir.path().join("copy/data.jdb")).unwrap().len());
    assert_eq!(journal_files(&dir.path().join("copy")), 0, "a backup writes no journal");
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains("tmp")));
    let copy = Env::open(dir.path().join("copy"), Options::default()).unwrap();
    copy.check().unwrap().into_result().unwrap();
    assert_eq!(copy.stats().last_committed_txid, stats.txid);
    assert_eq!(content(&copy), before);
    // The copy is a database like any other: it takes writes.
    let mut tx = copy.write().unwrap();
    let t = tx.open_tree("plain").unwrap().unwrap();
    tx.put(&t, "new", "x").unwrap();
    tx.commit().unwrap();
    copy.close().unwrap();
    let copy = Env::open(dir.path().join("copy"), Options::default()).unwrap();
    copy.check().unwrap().into_result().unwrap();
}

#[test]
fn compacted_copy_equals_the_source_and_is_small() {
    let s = seed();
    let dir = TestDb::dir("backup-compact");
    let env = sample(&dir.path().join("db"), s);
    let before = content(&env);
    let stats = env.backup_to_with(dir.path().join("copy"), BackupOptions::default().compact(true)).unwrap();
    assert_eq!(stats.txid, env.stats().last_committed_txid);
    assert_eq!(journal_files(&dir.path().join("copy")), 0);
    assert!(!dir.path().join("copy/compact.work").exists(), "the scratch database is removed");
    let copy = Env::open(dir.path().join("copy"), Options::default()).unwrap();
    copy.check().unwrap().into_result().unwrap();
    assert_eq!(copy.stats().last_committed_txid, stats.txid);
    assert_eq!(content(&copy), before);
}

/// The measurement at a tenth of the size: random keys (16 B keys, 100 B values), 90%
/// deleted, compacted: the copy is within 1.05x a sequential load of the survivors in one
/// transaction (data file + journal, after close).
#[test]
fn compaction_gets_the_space_of_deleted_data_back() {
    let s = seed();
    let dir = TestDb::dir("backup-compact-size");
    let mut rng = Rng::new(s);
    let n = 100_000u64;
    let keys: Vec<[u8; 16]> = (0..n)
        .map(|_| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
            k[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
            k
        })
        .collect();
    let value = [7u8; 100];
    let env = Env::open(dir.path().join("db"), Options::default()).unwrap();
    for chunk in keys.chunks(10_000) {
        let mut tx = env.write().unwrap();
        let t = match tx.open_tree("t").unwrap() {
            Some(t) => t,
            None => tx.create_tree("t").unwrap(),
        };
        for k in chunk {
            tx.put(&t, k, value).unwrap();
        }
        tx.commit().unwrap();
    }
    let mut tx = env.write().unwrap();
    let t = tx.open_tree("t").unwrap().unwrap();
    for (i, k) in keys.iter().enumerate() {
        if i % 10 != 0 {
            tx.delete(&t, k).unwrap();
        }
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    let source = env.stats().data_file_bytes;
    env.backup_to_with(dir.path().join("copy"), BackupOptions::default().compact(true)).unwrap();
    let copy = dir_bytes(&dir.path().join("copy"));

    let mut survivors: Vec<[u8; 16]> = keys.iter().step_by(10).copied().collect();
    survivors.sort();
    survivors.dedup();
    let seq = Env::open(dir.path().join("seq"), Options::default()).unwrap();
    let mut tx = seq.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for k in &survivors {
        tx.put(&t, k, value).unwrap();
    }
    tx.commit().unwrap();
    seq.close().unwrap();
    drop(seq);
    let seq = dir_bytes(&dir.path().join("seq"));
    println!("source data file {source} B, compacted copy {copy} B, sequential load {seq} B");
    assert!(copy < source / 4, "compaction must give the space back: {copy} of {source}");
    assert!(copy as f64 <= seq as f64 * 1.05, "compacted {copy} B vs sequential load {seq} B");
}

/// Bytes of a database directory: the data file and the journal files.
fn dir_bytes(dir: &Path) -> u64 {
    let mut n = std::fs::metadata(dir.join("data.jdb")).unwrap().len();
    for e in std::fs::read_dir(dir.join("journal")).unwrap() {
        n += e.unwrap().metadata().unwrap().len();
    }
    n
}

#[test]
fn stream_round_trip_and_damaged_streams() {
    let s = seed();
    let dir = TestDb::dir("backup-stream");
    let env = sample(&dir.path().join("db"), s);
    let before = content(&env);
    let mut stream = Vec::new();
    let sent = env.backup_to_writer(&mut stream).unwrap();
    assert_eq!(sent.bytes, stream.len() as u64);
    assert_eq!(&stream[..8], b"JKDWBKUP");
    let got = jackdaw::restore_from(&stream[..], dir.path().join("restored")).unwrap();
    assert_eq!(got, sent);
    let copy = Env::open(dir.path().join("restored"), Options::default()).unwrap();
    copy.check().unwrap().into_result().unwrap();
    assert_eq!(content(&copy), before);
    assert_eq!(copy.stats().last_committed_txid, sent.txid);
    drop(copy);

    // Into a directory that is not empty: refused, nothing touched.
    let e = jackdaw::restore_from(&stream[..], dir.path().join("restored")).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e:?}");

    // A flipped byte anywhere (header, run header, page, checksum), a cut, another magic.
    let mut rng = Rng::new(s);
    for round in 0..20 {
        let mut bad = stream.clone();
        let at = if round == 0 { 20 } else { rng.below(bad.len() as u64) as usize };
        bad[at] ^= 1 << rng.below(8);
        let dest = dir.path().join(format!("bad{round}"));
        let e = jackdaw::restore_from(&bad[..], &dest).unwrap_err();
        assert!(
            matches!(e, Error::Corrupted { .. } | Error::NotADatabase(_) | Error::IncompatibleFormat(_)),
            "flip at {at}: {e:?}"
        );
        assert!(!dest.exists(), "a failed restore leaves no directory");
    }
    for cut in [0, 10, 48, 100, stream.len() / 2, stream.len() - 1] {
        let dest = dir.path().join(format!("cut{cut}"));
        let e = jackdaw::restore_from(&stream[..cut], &dest).unwrap_err();
        assert!(matches!(e, Error::Corrupted { .. }), "cut at {cut}: {e:?}");
        assert!(!dest.exists());
    }
    // Two streams in one, or a stream with anything after it: refused, not the first restored.
    for tail in [&stream[..], &b"x"[..]] {
        let dest = dir.path().join("twice");
        let e = jackdaw::restore_from(&[&stream[..], tail].concat()[..], &dest).unwrap_err();
        assert!(matches!(&e, Error::Corrupted { reason, .. } if reason.contains("follow the end")), "{e:?}");
        assert!(!dest.exists());
    }
    let e = jackdaw::restore_from(
        &b"not a backup at all, just some text here padding to 48+ bytes"[..],
        dir.path().join("x"),
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotADatabase(_)), "{e:?}");
    // Nothing left behind but the good copy and the source.
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn compacted_stream_restores_to_the_same_content() {
    let s = seed();
    let dir = TestDb::dir("backup-stream-compact");
    let env = sample(&dir.path().join("db"), s);
    let mut plain = Vec::new();
    env.backup_to_writer(&mut plain).unwrap();
    let mut packed = Vec::new();
    let sent =
        env.backup_to_writer_with(&mut packed, BackupOptions::default().compact(true).work_dir(dir.path())).unwrap();
    assert!(packed.len() < plain.len(), "compacted {} vs plain {}", packed.len(), plain.len());
    jackdaw::restore_from(&packed[..], dir.path().join("restored")).unwrap();
    let copy = Env::open(dir.path().join("restored"), Options::default()).unwrap();
    copy.check().unwrap().into_result().unwrap();
    assert_eq!(content(&copy), content(&env));
    assert_eq!(copy.stats().last_committed_txid, sent.txid);
    let names = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(names, 2, "the scratch database is removed");
}

/// A backup taken while a writer thread commits continuously: neither side fails, and the copy
/// holds exactly the transactions up to the one it names. Commit `i` puts key `i` and bumps a
/// counter, so the content of transaction `t` is known from the ids the writer recorded.
#[test]
fn hot_backup_while_a_writer_commits() {
    let s = seed();
    let dir = TestDb::dir("backup-hot");
    let env = Env::open(dir.path().join("db"), Options::default()).unwrap();
    {
        // Some bulk first, so the copy takes a while.
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("bulk").unwrap();
        let mut rng = Rng::new(s);
        for i in 0..60_000u32 {
            tx.put(&t, rng.next_u64().to_be_bytes(), vec![i as u8; 200]).unwrap();
        }
        tx.create_tree("log").unwrap();
        tx.commit().unwrap();
    }
    let base = env.stats().last_committed_txid.get();
    let bulk_before = {
        let r = env.read().unwrap();
        r.tree_stats(&r.open_tree("bulk").unwrap().unwrap()).unwrap().entries
    };
    let stop = Arc::new(AtomicBool::new(false));
    let ids = Arc::new(Mutex::new(Vec::<u64>::new()));
    let writer = {
        let (env, stop, ids) = (env.clone(), stop.clone(), ids.clone());
        std::thread::spawn(move || -> Result<u64, Error> {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) || i < 50 {
                let mut tx = env.write()?;
                let t = tx.open_tree("log")?.unwrap();
                let b = tx.open_tree("bulk")?.unwrap();
                tx.put(&t, i.to_be_bytes(), [1u8; 64])?;
                // Keys the random bulk keys practically never hit (these start with 0x00 0x00,
                // and an exact 8-byte match is needed).
                tx.put(&b, (i * 7919).to_be_bytes(), [2u8; 300])?;
                let txid = tx.commit()?.txid.get();
                ids.lock().unwrap().push(txid);
                i += 1;
            }
            Ok(i)
        })
    };
    while ids.lock().unwrap().len() < 10 {
        std::thread::yield_now();
    }
    let plain = env.backup_to(dir.path().join("plain")).unwrap();
    let packed = env.backup_to_with(dir.path().join("packed"), BackupOptions::default().compact(true)).unwrap();
    let mut stream = Vec::new();
    let streamed = env.backup_to_writer(&mut stream).unwrap();
    stop.store(true, Ordering::Relaxed);
    let commits = writer.join().unwrap().unwrap();
    jackdaw::restore_from(&stream[..], dir.path().join("streamed")).unwrap();
    println!("writer committed {commits} transactions during the backups");
    let ids = ids.lock().unwrap().clone();
    for (name, stats) in [("plain", plain), ("packed", packed), ("streamed", streamed)] {
        let copy = Env::open(dir.path().join(name), Options::default()).unwrap();
        copy.check().unwrap().into_result().unwrap();
        let r = copy.read().unwrap();
        let log = r.open_tree("log").unwrap().unwrap();
        let expect = ids.iter().filter(|t| **t <= stats.txid.get()).count() as u64;
        assert!(stats.txid.get() > base, "{name}: the copy includes the writer's first commits");
        let keys: Vec<u64> =
            r.keys(&log, ..).unwrap().map(|k| u64::from_be_bytes(k.unwrap().as_ref().try_into().unwrap())).collect();
        assert_eq!(keys, (0..expect).collect::<Vec<_>>(), "{name}: exactly the commits up to {}", stats.txid);
        let bulk = r.tree_stats(&r.open_tree("bulk").unwrap().unwrap()).unwrap().entries;
        assert_eq!(bulk, bulk_before + expect, "{name}: the bulk tree with the writer's keys up to {}", stats.txid);
    }
}

/// A copy's free pages are holes (zeros): a copy that then takes many commits (reusing those
/// pages) and crashes with them only in the journal recovers to exactly what was committed.
/// On `MemStorage`, whose crash image (`deep_clone`) stands for the crash.
#[test]
fn a_copy_takes_writes_and_recovers_from_a_crash() {
    use jackdaw::internals::MemStorage;
    use jackdaw::FlusherMode;
    let s = seed();
    let mem = MemStorage::new();
    let opts = || Options::default().storage(Arc::new(mem.clone())).flusher(FlusherMode::Manual);
    let env = Env::open("/src", opts()).unwrap();
    let mut rng = Rng::new(s);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for _ in 0..20_000 {
        let k = rng.below(50_000).to_be_bytes().to_vec();
        let v = vec![rng.next_u64() as u8; rng.below(300) as usize];
        tx.put(&t, &k, &v).unwrap();
        model.insert(k, v);
    }
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for k in keys.iter().filter(|_| rng.below(2) == 0) {
        tx.delete(&t, k).unwrap();
        model.remove(k);
    }
    tx.commit().unwrap();
    env.flush().unwrap();
    assert!(env.stats().free_pages > 50, "the source has free pages: {:?}", env.stats().free_pages);
    env.backup_to("/copy").unwrap();
    drop(env);
    let copy = Env::open("/copy", opts()).unwrap();
    copy.check().unwrap().into_result().unwrap();
    for round in 0..10 {
        let mut tx = copy.write().unwrap();
        let t = tx.open_tree("t").unwrap().unwrap();
        for _ in 0..500 {
            let k = rng.below(60_000).to_be_bytes().to_vec();
            if rng.below(3) == 0 {
                tx.delete(&t, &k).unwrap();
                model.remove(&k);
            } else {
                let v = vec![round as u8; rng.below(400) as usize];
                tx.put(&t, &k, &v).unwrap();
                model.insert(k, v);
            }
        }
        tx.commit().unwrap();
        if round == 4 {
            copy.flush().unwrap();
        }
    }
    let image = mem.deep_clone();
    drop(copy);
    for (what, storage) in [("closed", mem), ("crashed", image)] {
        let env = Env::open("/copy", Options::default().storage(Arc::new(storage))).unwrap();
        env.check().unwrap().into_result().unwrap();
        let r = env.read().unwrap();
        let t = r.open_tree("t").unwrap().unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            r.range(&t, ..).unwrap().map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect();
        assert!(got == model, "{what}: the copy's content after its own commits");
    }
}
