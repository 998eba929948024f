//! Bad input gives typed errors, never a panic (or SIGBUS): foreign and damaged data files, bad
//! header slots, a future format version, damaged data pages, damaged journal records.
//!
//! Every case runs on the real disk (target/tmp) and on `MemStorage` (bytes changed with
//! `read_file` / `write_file`, crash images with `deep_clone`).

mod common;

use common::*;
use jackdaw::internals::{MemStorage, Storage};
use jackdaw::{Env, Error, FlusherMode, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PS: usize = 4096;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Disk,
    Mem,
}
const KINDS: [Kind; 2] = [Kind::Disk, Kind::Mem];

/// A database directory on one of the backends.
#[derive(Clone, Debug)]
enum Db {
    Disk(Arc<TestDb>),
    Mem(MemStorage, PathBuf),
}

/// The fixture's directory, not checked on drop: every test here damages its files on purpose
/// (foreign bytes, torn or forged headers, journal junk) and asserts what open and check() say.
fn damaged_dir(name: &str) -> TestDb {
    let d = TestDb::dir(name);
    d.skip_check("corrupt.rs damages the files on purpose");
    d
}

impl Db {
    fn new(kind: Kind, name: &str) -> Db {
        match kind {
            Kind::Disk => Db::Disk(Arc::new(damaged_dir(name))),
            Kind::Mem => Db::Mem(MemStorage::new(), PathBuf::from(format!("/mem/{name}"))),
        }
    }
    fn dir(&self) -> &Path {
        match self {
            Db::Disk(d) => d.path(),
            Db::Mem(_, d) => d,
        }
    }
    fn opts(&self) -> Options {
        let o = test_opts().flusher(FlusherMode::Manual);
        match self {
            Db::Disk(_) => o,
            Db::Mem(m, _) => o.storage(Arc::new(m.clone())),
        }
    }
    fn open(&self) -> jackdaw::Result<Env> {
        Env::open(self.dir(), self.opts())
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir().join(rel)
    }
    fn read(&self, rel: &str) -> Vec<u8> {
        let p = self.path(rel);
        match self {
            Db::Disk(_) => std::fs::read(&p).unwrap(),
            Db::Mem(m, _) => m.read_file(&p).unwrap_or_else(|| panic!("no file {}", p.display())),
        }
    }
    fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        match self {
            Db::Disk(_) => {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, bytes).unwrap()
            }
            Db::Mem(m, _) => m.write_file(&p, bytes),
        }
    }
    /// Change a file in place.
    fn edit(&self, rel: &str, f: impl FnOnce(&mut Vec<u8>)) {
        let mut b = self.read(rel);
        f(&mut b);
        self.write(rel, &b);
    }
    fn journal_files(&self) -> Vec<String> {
        let dir = self.path("journal");
        let mut v = match self {
            Db::Disk(_) => std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Db::Mem(m, _) => m.list_dir(&dir).unwrap(),
        };
        v.retain(|n| n.ends_with(".jnl"));
        v.sort();
        v
    }
    /// A copy of every file: taken while an `Env` is open, a crash image.
    fn image(&self, name: &str) -> Db {
        match self {
            Db::Disk(d) => {
                let to = damaged_dir(name);
                copy_dir(d.path(), to.path());
                Db::Disk(Arc::new(to))
            }
            Db::Mem(m, d) => Db::Mem(m.deep_clone(), d.clone()),
        }
    }
    fn remove(&self) {
        if let Db::Disk(d) = self {
            let _ = std::fs::remove_dir_all(d.path());
        }
    }
}

fn expect_err(db: &Db, what: &str) -> Error {
    match db.open() {
        Ok(_) => panic!("{what}: open succeeded"),
        Err(e) => e,
    }
}

/// A closed database with committed pages: returns the live pages and values, and the page
/// high-water mark.
fn make_db(db: &Db) -> (BTreeMap<u64, u64>, u64) {
    let env = db.open().unwrap();
    let mut live = BTreeMap::new();
    for round in 0..4u64 {
        let mut tx = env.write().unwrap();
        for i in 0..5 {
            let v = round * 100 + i;
            live.insert(alloc(&mut tx, v), v);
        }
        if round == 2 {
            let p = *live.keys().next().unwrap();
            tx.free_page(p).unwrap();
            live.remove(&p);
        }
        tx.commit().unwrap();
        if round == 1 {
            env.flush().unwrap();
        }
    }
    let next_page = env.stats().next_page;
    check_pages(&env, live.keys().copied());
    env.close().unwrap();
    (live, next_page)
}

fn verify(env: &Env, live: &BTreeMap<u64, u64>) {
    let r = env.read().unwrap();
    for (&p, &v) in live {
        assert_eq!(read_value(&r, p), v, "page {p}");
    }
    drop(r);
    check_pages(env, live.keys().copied());
}

fn revision(slot: &[u8]) -> u64 {
    u64::from_le_bytes(slot[16..24].try_into().unwrap())
}

fn reseal(slot: &mut [u8]) {
    let c = xxhash_rust::xxh3::xxh3_64(&slot[..120]);
    slot[120..128].copy_from_slice(&c.to_le_bytes());
}

// ---------------------------------------------------------------------------------------------
// (a), (b): foreign files.

#[test]
fn random_bytes_are_not_a_database() {
    let seed = seed_or("random_bytes_are_not_a_database", 0xbad_da7a);
    let _g = OnPanic(format!("random_bytes_are_not_a_database: replay with JACKDAW_SEED={seed}"));
    let mut rng = Rng::new(seed);
    for kind in KINDS {
        for len in [1usize, 100, 4095, 4096, 8192, 12288, 64 << 10, 300_000] {
            let db = Db::new(kind, "random");
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            db.write("data.jdb", &bytes);
            let e = expect_err(&db, &format!("{kind:?} {len} random bytes"));
            assert!(matches!(e, Error::NotADatabase(_)), "{kind:?} {len} random bytes: {e:?}");
            assert_eq!(db.read("data.jdb"), bytes, "{kind:?}: a foreign file must be left alone");
            db.remove();
        }
    }
}

#[test]
fn zeroed_file_is_not_a_database() {
    for kind in KINDS {
        for len in [0usize, 4096, 64 << 10] {
            let db = Db::new(kind, "zeros");
            db.write("data.jdb", &vec![0u8; len]);
            let e = expect_err(&db, &format!("{kind:?} {len} zero bytes"));
            assert!(matches!(e, Error::NotADatabase(_)), "{kind:?} {len} zero bytes: {e:?}");
            assert_eq!(db.read("data.jdb"), vec![0u8; len]);
            db.remove();
        }
    }
}

#[test]
fn our_magic_with_garbage_is_corrupted() {
    let seed = seed_or("our_magic_with_garbage_is_corrupted", 0x3a61c);
    let mut rng = Rng::new(seed);
    for kind in KINDS {
        let db = Db::new(kind, "magic");
        let mut bytes = vec![0u8; 64 << 10];
        rng.fill_bytes(&mut bytes);
        bytes[..8].copy_from_slice(b"JKDWDATA");
        bytes[PS..PS + 8].copy_from_slice(b"JKDWDATA");
        db.write("data.jdb", &bytes);
        let e = expect_err(&db, "magic + garbage");
        assert!(matches!(e, Error::Corrupted { .. }), "{kind:?}: {e:?}");
        db.remove();
    }
}

// ---------------------------------------------------------------------------------------------
// (c) truncation.

#[test]
fn truncated_data_file_is_an_error_not_a_crash() {
    for kind in KINDS {
        let db = Db::new(kind, "trunc");
        let (live, next_page) = make_db(&db);
        let full = db.read("data.jdb");
        assert!(full.len() as u64 >= next_page * PS as u64);
        let np = next_page as usize;
        for len in [0, 100, PS, 2 * PS, 3 * PS, 2 * PS + 100, (np - 1) * PS, np * PS - 1] {
            db.write("data.jdb", &full[..len]);
            let e = expect_err(&db, &format!("{kind:?}: data file cut to {len} bytes"));
            assert!(
                matches!(e, Error::Corrupted { .. } | Error::NotADatabase(_)),
                "{kind:?}: data file cut to {len} bytes: {e:?}"
            );
        }
        // Control: cutting only the preallocated tail past the high-water mark is harmless.
        db.write("data.jdb", &full[..np * PS]);
        let env = db.open().unwrap();
        verify(&env, &live);
        let mut tx = env.write().unwrap();
        let p = alloc(&mut tx, 77);
        tx.commit().unwrap();
        let mut live2 = live.clone();
        live2.insert(p, 77);
        verify(&env, &live2);
        drop(env);
        db.remove();
    }
}

// ---------------------------------------------------------------------------------------------
// (d), (e) header slots.

#[test]
fn damaged_header_slots() {
    for kind in KINDS {
        let db = Db::new(kind, "slots");
        let (live, _) = make_db(&db);
        let good = db.read("data.jdb");
        // One byte flipped in each slot (magic intact): Corrupted.
        for off in [9usize, 16, 40, 56, 100, 127] {
            let mut b = good.clone();
            b[off] ^= 0x40;
            b[PS + off] ^= 0x40;
            db.write("data.jdb", &b);
            let e = expect_err(&db, &format!("{kind:?}: byte {off} flipped in both slots"));
            assert!(matches!(e, Error::Corrupted { .. }), "{kind:?}: byte {off} flipped in both slots: {e:?}");
            assert_eq!(db.read("data.jdb"), b, "a failed open must not write");
        }
        // One slot foreign, the other damaged: still Corrupted (this is one of ours).
        let mut b = good.clone();
        b[0] ^= 0xff;
        b[PS + 60] ^= 1;
        db.write("data.jdb", &b);
        let e = expect_err(&db, "magic of slot 0 and a byte of slot 1");
        assert!(matches!(e, Error::Corrupted { .. }), "{kind:?}: {e:?}");

        // Control: damaging only the older slot loses nothing.
        let (r0, r1) = (revision(&good[..128]), revision(&good[PS..PS + 128]));
        assert_ne!(r0, r1);
        let older = if r0 < r1 { 0 } else { PS };
        let mut b = good.clone();
        b[older + 33] ^= 0x10;
        db.write("data.jdb", &b);
        let env = db.open().unwrap();
        verify(&env, &live);
        drop(env);
        db.remove();
    }
}

#[test]
fn future_format_version_is_incompatible() {
    for kind in KINDS {
        let db = Db::new(kind, "version");
        let (live, _) = make_db(&db);
        let good = db.read("data.jdb");
        let mut b = good.clone();
        for slot in [0, PS] {
            b[slot + 8..slot + 12].copy_from_slice(&4u32.to_le_bytes());
            reseal(&mut b[slot..slot + 128]);
        }
        db.write("data.jdb", &b);
        let e = expect_err(&db, "format version 4");
        assert!(matches!(e, Error::IncompatibleFormat(_)), "{kind:?}: {e:?}");
        assert_eq!(db.read("data.jdb"), b, "an incompatible file must be left alone");

        // A page size this build does not support (valid checksum): also incompatible.
        for bad in [1000u32, 3 * 4096, 1 << 17] {
            let mut b = good.clone();
            for slot in [0, PS] {
                b[slot + 12..slot + 16].copy_from_slice(&bad.to_le_bytes());
                reseal(&mut b[slot..slot + 128]);
            }
            db.write("data.jdb", &b);
            let e = expect_err(&db, "bad page size");
            assert!(matches!(e, Error::IncompatibleFormat(_)), "{kind:?} page size {bad}: {e:?}");
        }
        // Control: the untouched file still opens.
        db.write("data.jdb", &good);
        verify(&db.open().unwrap(), &live);
        db.remove();
    }
}

/// A database of format version 1 (journal records all padded to 4 KiB) or 2 (overflow
/// references without a tail), both of which this build still reads, opens, read-only and to
/// write; opened to write, its header is rewritten as version 3 at once, before any commit, so
/// a build that reads only the older version refuses it rather than misreading a packed record
/// or a reference with a tail. Without the rewrite the slot keeps saying 1 or 2.
#[test]
fn an_older_version_database_opens_and_is_upgraded_before_its_first_commit() {
    let version = |b: &[u8], slot: usize| u32::from_le_bytes(b[slot + 8..slot + 12].try_into().unwrap());
    for (kind, old) in KINDS.into_iter().flat_map(|k| [(k, 1u32), (k, 2)]) {
        let db = Db::new(kind, "version1");
        let (live, _) = make_db(&db);
        let mut b = db.read("data.jdb");
        for slot in [0, PS] {
            assert_eq!(version(&b, slot), 3, "{kind:?}: this build writes version 3");
            b[slot + 8..slot + 12].copy_from_slice(&old.to_le_bytes());
            reseal(&mut b[slot..slot + 128]);
        }
        db.write("data.jdb", &b);
        let ro = Env::open(db.dir(), db.opts().read_only(true)).unwrap();
        verify(&ro, &live);
        drop(ro);
        assert_eq!(db.read("data.jdb"), b, "{kind:?}: a read-only open writes nothing");
        let env = db.open().unwrap();
        let after = db.read("data.jdb");
        let newest = if revision(&after[..128]) > revision(&after[PS..PS + 128]) { 0 } else { PS };
        assert_eq!(version(&after, newest), 3, "{kind:?}: version {old} upgraded at open");
        verify(&env, &live);
        env.close().unwrap();
        db.remove();
    }
}

// ---------------------------------------------------------------------------------------------
// (f) data pages.

#[test]
fn damaged_data_page_is_reported_with_its_number() {
    for kind in KINDS {
        for (what, off) in
            [("body", 1000usize), ("checksum", 3), ("page number", 9), ("kind", 24), ("last byte", PS - 1)]
        {
            let db = Db::new(kind, "page");
            let (live, _) = make_db(&db);
            let (&p, _) = live.iter().nth(live.len() / 2).unwrap();
            db.edit("data.jdb", |b| b[p as usize * PS + off] ^= 0x21);
            let ctx = format!("{kind:?}: {what} of page {p} damaged");
            let env = db.open().unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
            let r = env.read().unwrap();
            match r.page(p) {
                Err(Error::Corrupted { page: Some(q), .. }) => assert_eq!(q, p, "{ctx}"),
                Err(e) => panic!("{ctx}: {e:?}"),
                Ok(_) => panic!("{ctx}: read succeeded"),
            }
            // Other pages are fine.
            for (&q, &v) in live.iter().filter(|(q, _)| **q != p) {
                assert_eq!(read_value(&r, q), v, "{ctx}: page {q}");
            }
            drop(r);
            let report = env.check_with(|_| Ok(live.keys().copied().collect())).expect("check_with runs");
            assert!(
                report
                    .problems
                    .iter()
                    .any(|q| q.kind == jackdaw::ProblemKind::PageChecksum && q.page.map(|x| x.get()) == Some(p)),
                "{ctx}: check_with should report page {p} failing its check: {:#?}",
                report.problems
            );
            // A writer cannot build on it either, but it can free it, and the rest lives on.
            let mut tx = env.write().unwrap();
            assert!(matches!(tx.page_mut(p), Err(Error::Corrupted { page: Some(q), .. }) if q == p), "{ctx}");
            tx.free_page(p).unwrap();
            let q = alloc(&mut tx, 4242);
            tx.commit().unwrap();
            let mut live2 = live.clone();
            live2.remove(&p);
            live2.insert(q, 4242);
            verify(&env, &live2);
            drop(env);
            let env = db.open().unwrap();
            verify(&env, &live2);
            drop(env);
            db.remove();
        }
    }
}

#[test]
fn damaged_free_map_page_fails_open() {
    for kind in KINDS {
        let db = Db::new(kind, "bitmap");
        make_db(&db);
        db.edit("data.jdb", |b| b[2 * PS + 500] ^= 1);
        let e = expect_err(&db, "bitmap page damaged");
        assert!(matches!(e, Error::Corrupted { page: Some(p), .. } if p == 2), "{kind:?}: {e:?}");
        db.remove();
    }
}

#[test]
fn damage_to_a_free_page_is_harmless() {
    for kind in KINDS {
        let db = Db::new(kind, "freepage");
        let env = db.open().unwrap();
        let mut tx = env.write().unwrap();
        let a = alloc(&mut tx, 1);
        let b = alloc(&mut tx, 2);
        tx.commit().unwrap();
        env.flush().unwrap();
        let mut tx = env.write().unwrap();
        tx.free_page(a).unwrap();
        tx.commit().unwrap();
        env.close().unwrap();
        drop(env);
        db.edit("data.jdb", |bytes| bytes[a as usize * PS + 700] ^= 0xff);
        let env = db.open().unwrap();
        verify(&env, &BTreeMap::from([(b, 2)]));
        // Reuse overwrites it entirely.
        let mut tx = env.write().unwrap();
        assert_eq!(alloc(&mut tx, 3), a, "the lowest free page is reused");
        tx.commit().unwrap();
        env.close().unwrap();
        drop(env);
        let env = db.open().unwrap();
        verify(&env, &BTreeMap::from([(a, 3), (b, 2)]));
        drop(env);
        db.remove();
    }
}

// ---------------------------------------------------------------------------------------------
// (g), (h) journal records.

#[derive(Debug, Clone)]
struct Rec {
    file: String,
    off: usize,
    txid: u64,
    stored_len: usize,
}

impl Rec {
    fn len(&self) -> usize {
        (64 + self.stored_len).div_ceil(4096) * 4096
    }
}

/// Records found by scanning the journal files for the record magic at 4 KiB boundaries (only
/// records of the file's own generation: a recycled file keeps stale ones).
fn records(db: &Db) -> Vec<Rec> {
    let mut out = Vec::new();
    for name in db.journal_files() {
        let generation: u64 = name.trim_end_matches(".jnl").parse().unwrap();
        let b = db.read(&format!("journal/{name}"));
        for off in (0..b.len().saturating_sub(63)).step_by(4096) {
            let le = |o: usize| u64::from_le_bytes(b[off + o..off + o + 8].try_into().unwrap());
            if &b[off..off + 8] == b"JKDWJRNL" && le(16) == generation {
                let stored_len = u32::from_le_bytes(b[off + 48..off + 52].try_into().unwrap()) as usize;
                out.push(Rec { file: name.clone(), off, txid: le(8), stored_len });
            }
        }
    }
    out.sort_by_key(|r| r.txid);
    out
}

/// A crash image (`db`'s files copied as `name` while the `Env` is open: dropping it would flush)
/// after 5 commits, and the state after each: page `a` holds the commit number, and commit i
/// adds a page holding 100 + i.
fn journal_crash_image(db: &Db, name: &str) -> (Db, Vec<BTreeMap<u64, u64>>) {
    let env = db.open().unwrap();
    let mut states = vec![BTreeMap::new()];
    let mut live = BTreeMap::new();
    let mut a = None;
    for i in 1..=5u64 {
        let mut tx = env.write().unwrap();
        let pa = match a {
            None => alloc(&mut tx, i),
            Some(pa) => {
                fill(&mut tx, pa, i);
                pa
            }
        };
        a = Some(pa);
        live.insert(pa, i);
        live.insert(alloc(&mut tx, 100 + i), 100 + i);
        assert_eq!(tx.commit().unwrap().txid, i);
        states.push(live.clone());
    }
    // Manual flusher, Sync commits: the records are durable and only in the journal.
    assert_eq!(env.stats().last_flushed_txid.get(), 0);
    (db.image(name), states)
}

fn flip_payload(db: &Db, r: &Rec) {
    db.edit(&format!("journal/{}", r.file), |b| b[r.off + 64 + r.stored_len / 2] ^= 0x08);
}

#[test]
fn damaged_journal_records() {
    for kind in KINDS {
        let db = Db::new(kind, "jrnl");
        let (base, states) = journal_crash_image(&db, "jrnl-base");
        let recs = records(&base);
        assert_eq!(recs.iter().map(|r| r.txid).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5], "{kind:?}: {recs:?}");
        let rec = |t: u64| recs[t as usize - 1].clone();

        let case = |name: &str, damage: &dyn Fn(&Db)| -> (Db, jackdaw::Result<Env>) {
            let img = base.image(&format!("jrnl-{name}"));
            damage(&img);
            let r = img.open();
            (img, r)
        };
        let ok = |name: &str, damage: &dyn Fn(&Db), expect: u64| {
            let (img, r) = case(name, damage);
            let env = r.unwrap_or_else(|e| panic!("{kind:?} {name}: {e}"));
            assert_eq!(env.read().unwrap().txid().get(), expect, "{kind:?} {name}");
            verify(&env, &states[expect as usize]);
            (img, env)
        };
        let corrupted = |name: &str, damage: &dyn Fn(&Db)| {
            let (img, r) = case(name, damage);
            match r {
                Err(Error::Corrupted { .. }) => {}
                Err(e) => panic!("{kind:?} {name}: {e:?}"),
                Ok(_) => panic!("{kind:?} {name}: opened"),
            }
            img.remove();
        };

        // Control.
        let (img, env) = ok("intact", &|_| {}, 5);
        drop(env);
        img.remove();

        // A torn last record ends the log: the earlier commits are all there.
        let (img, env) = ok("last-payload", &|d| flip_payload(d, &rec(5)), 4);
        // And the log goes on from there: a new transaction 5 is not confused with the old one.
        let mut tx = env.write().unwrap();
        let a = *states[4].iter().find(|(_, v)| **v == 4).unwrap().0;
        fill(&mut tx, a, 55);
        assert_eq!(tx.commit().unwrap().txid, 5);
        let again = img.image("jrnl-again");
        drop(env);
        let env = again.open().unwrap();
        let mut s = states[4].clone();
        s.insert(a, 55);
        verify(&env, &s);
        drop(env);
        again.remove();
        img.remove();

        let r5 = rec(5);
        let (img, env) = ok("last-header", &|d| d.edit(&format!("journal/{}", r5.file), |b| b[r5.off + 40] ^= 1), 4);
        drop(env);
        img.remove();
        let (img, env) = ok(
            "last-zeroed",
            &|d| d.edit(&format!("journal/{}", r5.file), |b| b[r5.off..r5.off + r5.len()].fill(0)),
            4,
        );
        drop(env);
        img.remove();
        let (img, env) = ok(
            "last-two",
            &|d| {
                flip_payload(d, &rec(4));
                flip_payload(d, &rec(5));
            },
            3,
        );
        drop(env);
        img.remove();

        // A damaged record with a valid one after it: records went missing.
        corrupted("middle", &|d| flip_payload(d, &rec(3)));
        corrupted("first", &|d| flip_payload(d, &rec(1)));
        corrupted("fourth", &|d| flip_payload(d, &rec(4)));
        base.remove();
        db.remove();
    }
}

/// A header whose `journal_offset` is forged near the end of the `u64` range (checksum valid):
/// recovery's positions are checked, not wrapped, so open gives a committed state whole or
/// `Corrupted`, never an I/O error from a wrapped offset, a panic or a hang. (Built with overflow
/// checks, as `cargo test` without `--release` is, the wrapping additions before `d87747b`
/// panicked here; a release build wrapped them into a search that found nothing.)
#[test]
fn forged_journal_offset_near_u64_max() {
    for kind in KINDS {
        let db = Db::new(kind, "jofs");
        let (base, states) = journal_crash_image(&db, "jofs-base");
        for forged in [u64::MAX, u64::MAX - 63, u64::MAX - 4095, 1u64 << 63] {
            let img = base.image(&format!("jofs-{forged:x}"));
            img.edit("data.jdb", |b| {
                for slot in [0, PS] {
                    b[slot + 56..slot + 64].copy_from_slice(&forged.to_le_bytes());
                    reseal(&mut b[slot..slot + 128]);
                }
            });
            match img.open() {
                Ok(env) => {
                    let t = env.read().unwrap().txid().get();
                    verify(&env, &states[t as usize]);
                }
                Err(Error::Corrupted { .. }) => {}
                Err(e) => panic!("{kind:?} journal_offset {forged:#x}: {e:?}"),
            }
        }
        db.remove();
    }
}

#[test]
fn stray_journal_files_are_ignored() {
    let seed = seed_or("stray_journal_files_are_ignored", 0x57a7);
    let mut rng = Rng::new(seed);
    for kind in KINDS {
        let db = Db::new(kind, "stray");
        let (live, _) = make_db(&db);
        let mut junk = vec![0u8; 256 << 10];
        rng.fill_bytes(&mut junk);
        db.write("journal/0000000000000099.jnl", &junk);
        db.write("journal/0000000000000100.jnl.tmp", &junk[..4096]);
        db.write("journal/notes.txt", b"not a journal");
        let env = db.open().unwrap();
        verify(&env, &live);
        let mut tx = env.write().unwrap();
        let p = alloc(&mut tx, 9);
        tx.commit().unwrap();
        // The commit went to a journal file of this database (a clean close leaves none).
        assert!(!db.journal_files().is_empty());
        let mut live2 = live.clone();
        live2.insert(p, 9);
        verify(&env, &live2);
        drop(env);
        let env = db.open().unwrap();
        verify(&env, &live2);
        drop(env);
        db.remove();
    }
}
