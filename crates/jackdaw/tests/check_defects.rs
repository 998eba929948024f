//! `Env::check()` finds what it claims to find.
//!
//! Each test builds a small database through the API (tree "t": 3,000 keys, so depth >= 2, plus
//! one 10 KB overflow value; tree "u": a few keys), asserts that `check()` is clean, plants one
//! defect, and asserts that `check()` returns `Ok(report)` whose `problems` hold the expected
//! `ProblemKind`s at the expected pages, and whose `into_result()` is `Err(Corrupted)` with a
//! reason naming the problem (and the page, where there is one). Defects are planted through the raw page API of a write
//! transaction (`page_mut`: bytes from 32 on; commit re-stamps the checksum, so the page is
//! structurally wrong but not torn), or, for the checksum, by flipping a byte of the closed data
//! file. Pages are found by walking from the meta page, decoding the formats documented in
//! `tree/node.rs`, `tree/overflow.rs` and `tree/mod.rs` independently of the engine's code.
//! Reads of a damaged database must return errors, never panic.

mod common;

use common::*;
use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{CheckReport, Env, Error, FlusherMode, ProblemKind, Tree, WriteTxn};

const PS: usize = 4096;
const META: u64 = 3;
const N: u32 = 3000;
const BIG_LEN: usize = 10_000;

// ---------------------------------------------------------------------------------------------
// The on-disk formats, decoded here.

fn u16_at(p: &[u8], o: usize) -> usize {
    u16::from_le_bytes([p[o], p[o + 1]]) as usize
}
fn u32_at(p: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(p[o..o + 4].try_into().unwrap())
}
fn u64_at(p: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(p[o..o + 8].try_into().unwrap())
}
fn put_u64(p: &mut [u8], o: usize, v: u64) {
    p[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

/// A tree descriptor (64 bytes).
#[derive(Debug, Clone, Copy)]
struct Desc {
    root: u64,
    entries: u64,
    depth: u32,
    leaf_pages: u64,
    overflow_pages: u64,
}

fn desc(b: &[u8]) -> Desc {
    assert_eq!(b.len(), 64, "a descriptor is 64 bytes");
    Desc {
        root: u64_at(b, 8),
        entries: u64_at(b, 16),
        depth: u32_at(b, 24),
        leaf_pages: u64_at(b, 40),
        overflow_pages: u64_at(b, 48),
    }
}

// Slotted pages: count at 32, level at 34, slots (u16 offsets) from 48.
fn count(p: &[u8]) -> usize {
    u16_at(p, 32)
}
fn level(p: &[u8]) -> usize {
    u16_at(p, 34)
}
fn slot_at(i: usize) -> usize {
    48 + 2 * i
}
fn slot(p: &[u8], i: usize) -> usize {
    u16_at(p, slot_at(i))
}
// Leaf entry: klen u16 | vlen u16 | flags u8 | key | value.
fn leaf_key(p: &[u8], i: usize) -> &[u8] {
    let o = slot(p, i);
    &p[o + 5..o + 5 + u16_at(p, o)]
}
/// (flags, offset of the value in the page, value length).
fn leaf_value(p: &[u8], i: usize) -> (u8, usize, usize) {
    let o = slot(p, i);
    (p[o + 4], o + 5 + u16_at(p, o), u16_at(p, o + 2))
}
// Branch entry: klen u16 | child u64 | key.
fn branch_key(p: &[u8], i: usize) -> &[u8] {
    let o = slot(p, i);
    &p[o + 10..o + 10 + u16_at(p, o)]
}
fn branch_child(p: &[u8], i: usize) -> u64 {
    u64_at(p, slot(p, i) + 2)
}
/// Offset of branch entry `i`'s child field.
fn branch_child_at(p: &[u8], i: usize) -> usize {
    slot(p, i) + 2
}

fn page(tx: &WriteTxn, pg: u64) -> Vec<u8> {
    tx.page(pg).unwrap().to_vec()
}

/// The root tree's descriptor, from the meta page.
fn root_tree(tx: &WriteTxn) -> Desc {
    let m = page(tx, META);
    assert_eq!(&m[32..40], b"JKDWTREE", "meta page magic");
    desc(&m[48..112])
}

/// The leaf of the tree rooted at `d` that holds `key`.
fn leaf_for(tx: &WriteTxn, d: &Desc, key: &[u8]) -> u64 {
    let mut pg = d.root;
    for _ in 1..d.depth {
        let p = page(tx, pg);
        let mut ci = 0;
        for i in 1..count(&p) {
            if branch_key(&p, i) <= key {
                ci = i;
            }
        }
        pg = branch_child(&p, ci);
    }
    pg
}

/// Where the descriptor of tree `name` lives: (root-tree leaf, offset of the value), and its
/// decoded value.
fn named(tx: &WriteTxn, name: &str) -> (u64, usize, Desc) {
    let leaf = leaf_for(tx, &root_tree(tx), name.as_bytes());
    let p = page(tx, leaf);
    let i = (0..count(&p)).find(|&i| leaf_key(&p, i) == name.as_bytes()).expect("tree in the root tree");
    let (flags, at, len) = leaf_value(&p, i);
    assert_eq!((flags, len), (0, 64), "descriptors are inline 64-byte values");
    (leaf, at, desc(&p[at..at + 64]))
}

/// Leaves of a tree of depth 2 in key order (the root's children).
fn leaves(tx: &WriteTxn, d: &Desc) -> Vec<u64> {
    assert_eq!(d.depth, 2);
    let r = page(tx, d.root);
    assert_eq!(level(&r), 1);
    (0..count(&r)).map(|i| branch_child(&r, i)).collect()
}

/// (leaf, entry, total length, first page) of the overflow value of `key`.
fn overflow_of(tx: &WriteTxn, d: &Desc, key: &[u8]) -> (u64, u64, u64) {
    let leaf = leaf_for(tx, d, key);
    let p = page(tx, leaf);
    let i = (0..count(&p)).find(|&i| leaf_key(&p, i) == key).unwrap();
    let (flags, at, len) = leaf_value(&p, i);
    assert_eq!((flags, len), (1, 16), "an overflow reference");
    (leaf, u64_at(&p, at), u64_at(&p, at + 8))
}

// ---------------------------------------------------------------------------------------------
// The database.

struct Db {
    env: Env,
    t: Tree,
    /// Dropped last: removes the directory.
    dir: TestDb,
}

fn key(i: u32) -> Vec<u8> {
    format!("{i:08}").into_bytes()
}

fn big_value() -> Vec<u8> {
    (0..BIG_LEN).map(|i| (i % 251) as u8).collect()
}

fn build(name: &str) -> Db {
    let dir = TestDb::dir(name);
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..N {
        tx.put(&t, key(i), [(i % 256) as u8; 40]).unwrap();
    }
    tx.put(&t, b"big", big_value()).unwrap();
    let u = tx.create_tree("u").unwrap();
    for i in 0..10u32 {
        tx.put(&u, key(i), b"u").unwrap();
    }
    tx.commit().unwrap();
    let st = env.read().unwrap().tree_stats(&t).unwrap();
    assert_eq!(st.depth, 2, "tree t has depth 2 ({st:?})");
    assert!(st.leaf_pages >= 10 && st.overflow_pages == 3, "{st:?}");
    env.check().and_then(CheckReport::into_result).expect("check() of the sound database");
    // The walk here agrees with the engine's stats.
    let tx = env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    assert_eq!((d.entries, d.depth, d.leaf_pages, d.overflow_pages), (N as u64 + 1, 2, st.leaf_pages, 3));
    assert_eq!(leaves(&tx, &d).len() as u64, st.leaf_pages);
    drop(tx);
    Db { env, t, dir }
}

/// Whether `reason` names page `pg` ("page 57" or "page Some(57)", not "page 571").
fn mentions_page(reason: &str, pg: u64) -> bool {
    let whole = |pat: String| {
        reason.match_indices(&pat).any(|(i, _)| !reason[i + pat.len()..].starts_with(|c: char| c.is_ascii_digit()))
    };
    whole(format!("page {pg}")) || reason.contains(&format!("page Some({pg})"))
}

/// `check()` is `Ok(report)` with problems: for each `(kind, page)` of `want`, a problem of that
/// kind (at that page, when one is given); and `into_result()` fails with `Corrupted`, its reason
/// containing every string of `needles` and naming every page of `want`. Returns the reason.
#[track_caller]
fn expect_corrupted(env: &Env, want: &[(ProblemKind, Option<u64>)], needles: &[&str]) -> String {
    let report = env.check().expect("check() runs on a damaged database");
    assert!(!report.is_clean(), "check() found nothing: {report:?}");
    for &(kind, page) in want {
        assert!(
            report.problems.iter().any(|p| p.kind == kind && (page.is_none() || p.page.map(|x| x.get()) == page)),
            "check() should report a {kind:?} problem at page {page:?}: {:#?}",
            report.problems
        );
    }
    let first = report.problems[0].page;
    let pages: Vec<u64> = want.iter().filter_map(|w| w.1).collect();
    match report.into_result() {
        Err(Error::Corrupted { reason, page }) => {
            assert_eq!(page, first, "into_result() carries the first problem's page");
            println!("check(): {reason}");
            for n in needles {
                assert!(reason.contains(n), "check() reason should mention {n:?}:\n{reason}");
            }
            for &pg in &pages {
                assert!(mentions_page(&reason, pg), "check() reason should name page {pg}:\n{reason}");
            }
            reason
        }
        other => panic!("into_result() should fail with Corrupted mentioning {needles:?}, got {other:?}"),
    }
}

/// Reading everything of a damaged tree returns (Ok or Err) without panicking or looping.
fn read_all(db: &Db) -> Vec<jackdaw::Result<()>> {
    let r = db.env.read().unwrap();
    let mut out = Vec::new();
    match r.range::<[u8], _>(&db.t, ..) {
        Ok(it) => out.extend(it.take(N as usize + 10).map(|x| x.map(|_| ()))),
        Err(e) => out.push(Err(e)),
    }
    match r.range::<[u8], _>(&db.t, ..) {
        Ok(it) => out.extend(it.rev().take(N as usize + 10).map(|x| x.map(|_| ()))),
        Err(e) => out.push(Err(e)),
    }
    for i in (0..N).step_by(97) {
        out.push(r.get(&db.t, key(i)).map(|_| ()));
    }
    out.push(r.get(&db.t, b"big").map(|_| ()));
    out
}

// ---------------------------------------------------------------------------------------------
// The defects.

#[test]
fn keys_out_of_order_in_a_leaf() {
    let db = build("chk-order");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let leaf = leaves(&tx, &d)[1];
    let p = tx.page_mut(leaf).unwrap();
    assert!(count(p) > 5);
    // Swap the offsets of entries 3 and 4.
    let (a, b) = (slot(p, 3), slot(p, 4));
    p[slot_at(3)..slot_at(3) + 2].copy_from_slice(&(b as u16).to_le_bytes());
    p[slot_at(4)..slot_at(4) + 2].copy_from_slice(&(a as u16).to_le_bytes());
    tx.commit().unwrap();
    expect_corrupted(&db.env, &[(ProblemKind::TreeOrder, Some(leaf))], &["out of order"]);
    read_all(&db);
}

#[test]
fn bad_fence_between_parent_and_child() {
    let db = build("chk-fence");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let child = leaves(&tx, &d)[2];
    // Raise the separator above child 2 to the child's second key: its first key now lies below
    // the low fence, while the separators stay in order.
    let second = leaf_key(&page(&tx, child), 1).to_vec();
    let root = d.root;
    let p = tx.page_mut(root).unwrap();
    let sep = branch_key(p, 2).to_vec();
    assert!(sep < second && second.len() == sep.len());
    assert!(branch_key(p, 3) > second.as_slice());
    let o = slot(p, 2) + 10;
    p[o..o + second.len()].copy_from_slice(&second);
    tx.commit().unwrap();
    expect_corrupted(&db.env, &[(ProblemKind::TreeOrder, Some(child))], &["fence"]);
    read_all(&db);
}

#[test]
fn page_referenced_twice() {
    let db = build("chk-twice");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let ls = leaves(&tx, &d);
    let (shared, lost) = (ls[1], ls[2]);
    let p = tx.page_mut(d.root).unwrap();
    let at = branch_child_at(p, 2);
    put_u64(p, at, shared);
    tx.commit().unwrap();
    let reason = expect_corrupted(
        &db.env,
        &[(ProblemKind::Reachability, Some(shared)), (ProblemKind::Reachability, Some(lost))],
        &["twice"],
    );
    // The child no longer referenced is in use but unreachable.
    assert!(reason.contains("leaked") && mentions_page(&reason, lost), "{reason}");
    read_all(&db);
}

#[test]
fn leaked_page() {
    let db = build("chk-leak");
    let mut tx = db.env.write().unwrap();
    let pg = tx.alloc_page(PageKind::Raw).unwrap();
    fill(&mut tx, pg, 0xabcd);
    tx.commit().unwrap();
    let reason = expect_corrupted(&db.env, &[(ProblemKind::Reachability, Some(pg))], &["leaked"]);
    assert_eq!(reason.lines().count(), 1, "only the leak is reported:\n{reason}");
    // Freeing it again makes the database sound.
    let mut tx = db.env.write().unwrap();
    tx.free_page(pg).unwrap();
    tx.commit().unwrap();
    db.env.check().and_then(CheckReport::into_result).unwrap();
}

#[test]
fn free_map_bit_set_for_a_page_in_use() {
    let db = build("chk-free-bit");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let leaf = leaves(&tx, &d)[3];
    tx.free_page(leaf).unwrap();
    tx.commit().unwrap();
    expect_corrupted(&db.env, &[(ProblemKind::Reachability, Some(leaf))], &["marked free"]);
    read_all(&db);
}

#[test]
fn free_map_bit_set_for_an_overflow_page() {
    let db = build("chk-free-bit-ovf");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let (_, _, first) = overflow_of(&tx, &d, b"big");
    tx.free_page(first).unwrap();
    tx.commit().unwrap();
    expect_corrupted(&db.env, &[(ProblemKind::Reachability, Some(first))], &["marked free"]);
}

#[test]
fn wrong_entry_count_in_a_descriptor() {
    let db = build("chk-entries");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (leaf, at, d) = named(&tx, "t");
    let p = tx.page_mut(leaf).unwrap();
    put_u64(p, at + 16, d.entries + 1);
    tx.commit().unwrap();
    let reason = expect_corrupted(&db.env, &[(ProblemKind::TreeOrder, None)], &["tree t", "entries"]);
    assert!(reason.contains(&(d.entries + 1).to_string()) && reason.contains(&d.entries.to_string()), "{reason}");
    // The engine's stats show the planted count; reads still work.
    assert_eq!(db.env.read().unwrap().tree_stats(&db.t).unwrap().entries, d.entries + 1);
    assert!(read_all(&db).iter().all(|r| r.is_ok()));
}

#[test]
fn wrong_page_count_in_a_descriptor() {
    let db = build("chk-pages");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (leaf, at, d) = named(&tx, "u");
    let p = tx.page_mut(leaf).unwrap();
    put_u64(p, at + 40, d.leaf_pages + 2);
    tx.commit().unwrap();
    expect_corrupted(&db.env, &[(ProblemKind::TreeOrder, None)], &["tree u", "pages"]);
}

#[test]
fn branch_child_of_the_wrong_kind() {
    let db = build("chk-kind");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let lost = leaves(&tx, &d)[1];
    let raw = tx.alloc_page(PageKind::Raw).unwrap();
    fill(&mut tx, raw, 0x0101_0101_0101_0101);
    let p = tx.page_mut(d.root).unwrap();
    let at = branch_child_at(p, 1);
    put_u64(p, at, raw);
    tx.commit().unwrap();
    let reason = expect_corrupted(
        &db.env,
        &[(ProblemKind::TreeOrder, Some(raw)), (ProblemKind::Reachability, Some(lost))],
        &["should be a Leaf"],
    );
    assert!(reason.contains("leaked") && mentions_page(&reason, lost), "{reason}");
    let res = read_all(&db);
    assert!(res.iter().any(|r| matches!(r, Err(Error::Corrupted { .. }))), "reads through the bad child fail");
}

#[test]
fn bad_checksum_in_the_data_file() {
    let db = build("chk-checksum");
    db.dir.skip_check("the test damages the database for check() to report");
    let tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let leaf = leaves(&tx, &d)[4];
    let k = leaf_key(&page(&tx, leaf), 0).to_vec();
    drop(tx);
    let Db { dir, env, t, .. } = db;
    env.close().unwrap();
    drop(env);
    // Flip one byte of the leaf in the data file.
    let path = dir.path().join("data.jdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let off = leaf as usize * PS + 100;
    assert!(off > leaf as usize * PS + PAGE_HEADER);
    bytes[off] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    expect_corrupted(&env, &[(ProblemKind::PageChecksum, Some(leaf))], &["checksum"]);
    // Reading the key in that leaf is an error, not a panic and not a wrong answer.
    let r = env.read().unwrap();
    let got = r.get(&t, &k);
    assert!(matches!(got, Err(Error::Corrupted { .. })), "get of a key in the damaged leaf: {got:?}");
    let got = r.get(&t, key(0));
    assert!(matches!(got, Ok(Some(_))), "a key in another leaf still reads: {got:?}");
    let scan: Vec<_> = r.range::<[u8], _>(&t, ..).unwrap().collect();
    assert!(scan.iter().any(|x| matches!(x, Err(Error::Corrupted { .. }))), "a full scan meets the damaged leaf");
    assert!(scan.len() <= N as usize + 1);
    // Still an error on a second look (the bad page is not cached as verified).
    assert!(matches!(env.read().unwrap().get(&t, &k), Err(Error::Corrupted { .. })));
    drop(r);
    expect_corrupted(&env, &[(ProblemKind::PageChecksum, Some(leaf))], &["checksum"]);
}

/// (name, how to damage the first page of the chain (its bytes, total length, first page),
/// what check() must say).
fn overflow_defect(name: &str, damage: impl FnOnce(&mut [u8], u64, u64), needles: &[&str]) {
    let db = build(name);
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let (_, len, first) = overflow_of(&tx, &d, b"big");
    assert_eq!(len, BIG_LEN as u64);
    let p = tx.page_mut(first).unwrap();
    assert_ne!(u64_at(p, 32), 0, "the chain has a second page");
    assert_eq!(u32_at(p, 40) as usize, PS - 48, "the first page is full");
    damage(p, len, first);
    tx.commit().unwrap();
    let reason = expect_corrupted(&db.env, &[(ProblemKind::Overflow, None)], needles);
    assert!(reason.contains("overflow"), "{reason}");
    // Reading the value is an error, in both kinds of transaction; other keys read fine.
    let got = db.env.read().unwrap().get(&db.t, b"big");
    assert!(
        matches!(got, Err(Error::Corrupted { .. })),
        "get of the broken value: {:?}",
        got.map(|o| o.map(|b| b.len()))
    );
    let mut r = db.env.read().unwrap().get_reader(&db.t, b"big").unwrap().expect("the key exists");
    let mut buf = Vec::new();
    assert!(
        std::io::Read::read_to_end(&mut r, &mut buf).is_err() || buf != big_value(),
        "streamed read of the broken value"
    );
    let tx = db.env.write().unwrap();
    assert!(matches!(tx.get(&db.t, b"big"), Err(Error::Corrupted { .. })));
    assert_eq!(tx.get(&db.t, key(7)).unwrap().unwrap().as_ref(), &[7u8; 40]);
    drop(tx);
}

#[test]
fn overflow_chain_cut_short() {
    // next = 0 on the first page: the chain holds one page of a three-page value, and the other
    // two pages leak.
    overflow_defect("chk-ovf-next", |p, _, _| put_u64(p, 32, 0), &["overflow chain", "leaked"]);
}

#[test]
fn overflow_chain_with_a_cycle() {
    // next = the page itself: the walk must stop (bounded by the recorded length).
    overflow_defect("chk-ovf-cycle", |p, _, first| put_u64(p, 32, first), &["overflow"]);
}

#[test]
fn overflow_page_with_a_wrong_length() {
    // len one short: the chain holds one byte less than the leaf says.
    overflow_defect(
        "chk-ovf-len",
        |p, _, _| {
            let l = u32_at(p, 40) - 1;
            p[40..44].copy_from_slice(&l.to_le_bytes());
        },
        &["overflow chain holds"],
    );
}

#[test]
fn overflow_page_length_past_the_page() {
    // A length larger than a page can hold must be an error, not a slice out of bounds.
    overflow_defect("chk-ovf-len-big", |p, _, _| p[40..44].copy_from_slice(&60_000u32.to_le_bytes()), &["overflow"]);
}

/// The sound database stays sound across reopen, and all the helpers above agree with it.
#[test]
fn sound_database_checks_clean() {
    let db = build("chk-sound");
    assert!(read_all(&db).iter().all(|r| r.is_ok()));
    let report = db.env.check().and_then(CheckReport::into_result).unwrap();
    assert!(report.reachable_pages > 0 && report.pages_checked >= report.reachable_pages, "{report:?}");
    let Db { dir, env, t, .. } = db;
    drop(env);
    let env = Env::open(&dir, test_opts()).unwrap();
    env.check().and_then(CheckReport::into_result).unwrap();
    assert_eq!(env.read().unwrap().get(&t, b"big").unwrap().unwrap().as_ref(), big_value().as_slice());
}

/// A damaged database is `Ok(report)` with typed problems (kind, page, tree) that read as
/// sentences; `into_result()` turns them into the old `Err(Corrupted)`.
#[test]
fn damaged_database_gives_typed_problems() {
    let db = build("chk-typed");
    db.dir.skip_check("the test damages the database for check() to report");
    let mut tx = db.env.write().unwrap();
    let (_, _, d) = named(&tx, "t");
    let leaf = leaves(&tx, &d)[1];
    let p = tx.page_mut(leaf).unwrap();
    let (a, b) = (slot(p, 3), slot(p, 4));
    p[slot_at(3)..slot_at(3) + 2].copy_from_slice(&(b as u16).to_le_bytes());
    p[slot_at(4)..slot_at(4) + 2].copy_from_slice(&(a as u16).to_le_bytes());
    let leak = tx.alloc_page(PageKind::Raw).unwrap();
    fill(&mut tx, leak, 0x5a5a);
    tx.commit().unwrap();
    let report = db.env.check().expect("check() runs");
    assert!(!report.is_clean());
    println!("{:#?}", report.problems);
    let order = report
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::TreeOrder)
        .unwrap_or_else(|| panic!("a tree order problem: {:#?}", report.problems));
    assert_eq!(order.page.map(|x| x.get()), Some(leaf));
    assert_eq!(order.tree.as_deref(), Some("t"));
    assert!(order.detail.contains("out of order"), "{order:?}");
    let leaked = report
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::Reachability)
        .unwrap_or_else(|| panic!("a reachability problem: {:#?}", report.problems));
    assert_eq!((leaked.page.map(|x| x.get()), leaked.tree.as_deref()), (Some(leak), None));
    assert!(leaked.detail.contains("leaked"), "{leaked:?}");
    assert_eq!(report.problems.len(), 2, "only the two planted defects: {:#?}", report.problems);
    for p in &report.problems {
        let m = p.to_string();
        assert!(!m.contains("Some(") && !m.contains("None") && m.contains(&p.detail), "{m}");
        assert!(m.contains(&format!("page {}", p.page.unwrap())), "{m}");
    }
    match report.clone().into_result() {
        Err(Error::Corrupted { page, reason }) => {
            assert_eq!(page, report.problems[0].page);
            assert_eq!(reason.lines().count(), 2, "{reason}");
        }
        other => panic!("into_result(): {other:?}"),
    }
}

/// `check()` (and `check_with`) of a closed environment cannot run: `Err(Closed)`.
#[test]
fn check_of_a_closed_env_is_closed() {
    let db = build("chk-closed");
    let other = db.env.clone();
    db.env.close().unwrap();
    let r = other.check();
    assert!(matches!(r, Err(Error::Closed)), "check() after close: {r:?}");
    let r = other.check_with(|_| Ok(Vec::new()));
    assert!(matches!(r, Err(Error::Closed)), "check_with() after close: {r:?}");
}
