//! Reading the dump in its three forms (directory tree, `.tar`, `.tar.bz2`) gives the same
//! entries; skipping resumes at the right entry; the generator's archive has the stated shape.

use jackdaw_freedb::gen::{category_counts, generate};
use jackdaw_freedb::input::{printable, read_entries, source_kind, RawEntry, SourceKind};
use jackdaw_freedb::parse::{parse, Warning};
use std::collections::BTreeMap;

fn all(p: &std::path::Path, skip: u64) -> Vec<RawEntry> {
    let mut v = Vec::new();
    read_entries(p, skip, |e| {
        v.push(e);
        true
    })
    .unwrap();
    v
}

#[test]
fn tar_bz2_and_directory_tree_read_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("a.tar");
    let bz = dir.path().join("a.tar.bz2");
    let r1 = generate(3000, 7, &tar, |_| {}).unwrap();
    let r2 = generate(3000, 7, &bz, |_| {}).unwrap();
    assert_eq!((r1.entries, r1.tracks), (r2.entries, r2.tracks));
    assert_eq!(r1.entries, 3000);
    assert_eq!(source_kind(&tar).unwrap(), SourceKind::Tar);
    assert_eq!(source_kind(&bz).unwrap(), SourceKind::TarBz2);
    assert!(std::fs::metadata(&bz).unwrap().len() * 3 < std::fs::metadata(&tar).unwrap().len());
    let a = all(&tar, 0);
    let b = all(&bz, 0);
    assert_eq!(a.len(), 3000);
    assert_eq!(a, b);
    // Unpack into category/discid and read the tree: same entries (in sorted order).
    let tree = dir.path().join("tree");
    tar::Archive::new(std::fs::File::open(&tar).unwrap()).unpack(&tree).unwrap();
    assert_eq!(source_kind(&tree).unwrap(), SourceKind::Dir);
    let t = all(&tree, 0);
    let key = |e: &RawEntry| (e.category.clone(), e.name.clone(), e.data.clone());
    let mut ak: Vec<_> = a.iter().map(key).collect();
    ak.sort();
    assert_eq!(t.iter().map(key).collect::<Vec<_>>(), ak);
    assert!(t.iter().enumerate().all(|(i, e)| e.seq == i as u64));
    // Skipping: the entries from number k on, numbered as before, in every form.
    for (src, full) in [(&tar, &a), (&bz, &b), (&tree, &t)] {
        let rest = all(src, 1234);
        assert_eq!(&rest[..], &full[1234..]);
        assert_eq!(rest[0].seq, 1234);
    }
    assert!(all(&tar, 5000).is_empty());
}

#[test]
fn generated_archive_has_the_stated_shape() {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("b.tar");
    let n = 20_000;
    let rep = generate(n, 42, &tar, |_| {}).unwrap();
    let entries = all(&tar, 0);
    let mut per_cat: BTreeMap<String, u64> = BTreeMap::new();
    let mut warn: BTreeMap<Warning, u64> = BTreeMap::new();
    let (mut skipped, mut tracks, mut various, mut linked, mut latin1) = (0, 0u64, 0, 0, 0);
    let mut ids: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &entries {
        *per_cat.entry(e.category.clone()).or_default() += 1;
        match parse(&e.data, &e.category) {
            Ok(p) => {
                for w in p.warnings {
                    *warn.entry(w).or_default() += 1;
                }
                tracks += p.album.tracks.len() as u64;
                various += (p.album.artist == "Various") as u64;
                linked += (p.album.discids.len() > 1) as u64;
                latin1 += (p.album.encoding == jackdaw_freedb::parse::Encoding::Latin1) as u64;
                ids.entry(e.name.clone()).or_default().push(e.category.clone());
            }
            Err(_) => skipped += 1,
        }
    }
    let want = category_counts(n);
    for (i, c) in jackdaw_freedb::codec::CATEGORIES.iter().enumerate() {
        assert_eq!(per_cat.get(*c).copied().unwrap_or(0), want[i], "{c}");
    }
    assert_eq!(skipped, rep.not_xmcd);
    let avg = tracks as f64 / (n - skipped) as f64;
    assert!((10.5..14.0).contains(&avg), "tracks per disc {avg}");
    let rate = |x: u64| x as f64 * 10_000.0 / n as f64;
    assert!((250.0..550.0).contains(&rate(various)), "various {various}");
    assert!((50.0..160.0).contains(&rate(linked)), "linked {linked}");
    assert!((200.0..400.0).contains(&rate(latin1)), "latin1 {latin1}");
    assert!(rate(warn[&Warning::NoSeparator]) > 120.0);
    assert!(warn[&Warning::BadOffset] + warn.get(&Warning::OffsetCount).unwrap_or(&0) > 20);
    assert!(warn.get(&Warning::BadYear).copied().unwrap_or(0) > 3);
    // The same disc id in two categories.
    assert!(ids.values().filter(|c| c.len() > 1).count() > 20);
}

/// Random bytes (the seed is printed) under a `.tar.bz2` and a `.tar` name: refused with a
/// message a person can read: which file, that it is not a tar archive, the missing bzip2
/// signature for the `.bz2` name, and no control characters or undecodable bytes copied from
/// the file.
#[test]
fn a_file_of_random_bytes_is_refused_with_a_readable_message() {
    let seed: u64 = std::env::var("FREEDB_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_f00d);
    println!("seed {seed} (FREEDB_TEST_SEED to repeat)");
    let mut x = seed;
    let junk: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for name in ["junk.tar.bz2", "junk.tar"] {
        let p = dir.path().join(name);
        std::fs::write(&p, &junk).unwrap();
        let err = read_entries(&p, 0, |_| true).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains(name) && msg.contains("not a tar archive"), "{msg}");
        assert_eq!(msg.contains("BZh"), name.ends_with(".bz2"), "{msg}");
        assert!(!msg.chars().any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER), "{msg:?}");
        assert!(msg.chars().count() < 400, "{msg}");
    }
    assert_eq!(printable("a\u{1b}[2Jb\u{fffd}c", 100), "a\\u{1b}[2Jb\\u{fffd}c");
    assert_eq!(printable("abcdef", 3), "abc…");
}

/// A source with no entry at all is an error, not an import of nothing: an empty archive, an
/// archive of directories only, category directories with no file, and a directory that is
/// something else (a Jackdaw database: `journal/` looked like a category).
#[test]
fn a_source_with_no_entry_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("cats/rock")).unwrap();
    std::fs::create_dir_all(d.join("db/journal")).unwrap();
    std::fs::write(d.join("db/data.jdb"), vec![0u8; 8192]).unwrap();
    // A tar of one directory and an empty tar, written by the tar crate.
    let mut b = tar::Builder::new(Vec::new());
    b.append_dir("rock", d.join("cats/rock")).unwrap();
    std::fs::write(d.join("dirs.tar"), b.into_inner().unwrap()).unwrap();
    std::fs::write(d.join("empty.tar"), tar::Builder::new(Vec::new()).into_inner().unwrap()).unwrap();
    for name in ["cats", "db", "dirs.tar", "empty.tar"] {
        let p = d.join(name);
        let mut seen = 0;
        let err = read_entries(&p, 0, |_| {
            seen += 1;
            true
        })
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains(name) && msg.contains("holds no file to import"), "{name}: {msg}");
        assert_eq!(seen, 0, "{name}");
    }
}
