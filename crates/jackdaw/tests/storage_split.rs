//! `StorageFile::read_split_at` (the positional read of an overflow run) against its definition,
//! for the file backend (`preadv`, several calls past 512 blocks) and the memory backend (the
//! trait's default, block by block). Random layouts: the seed is printed and `JACKDAW_SEED`
//! repeats a run.
mod common;
use common::*;
use jackdaw::internals::{FsStorage, MemStorage, OpenMode, Split, Storage, StorageFile};
use std::sync::Arc;

/// What `read_split_at` must produce, computed from the file's bytes.
fn expected(bytes: &[u8], offset: usize, stride: usize, head: usize, count: usize, tail: usize) -> (Vec<u8>, Vec<u8>) {
    let (mut heads, mut out) = (Vec::new(), Vec::new());
    for i in 0..count {
        let b = &bytes[offset + i * stride..];
        heads.extend_from_slice(&b[..head]);
        let len = if i + 1 == count { tail } else { stride - head };
        out.extend_from_slice(&b[head..head + len]);
    }
    (heads, out)
}

fn exercise(name: &str, storage: &dyn Storage) {
    let dir = tmpdir(&format!("split_{name}"));
    storage.create_dir_all(&dir).unwrap();
    let f: Arc<dyn StorageFile> = storage.open(&dir.join("f"), OpenMode::CreateReadWrite).unwrap();
    let seed = seed();
    let mut rng = Rng::new(seed);
    println!("{name}: seed {seed}");
    let bytes: Vec<u8> = (0..3 << 20).map(|_| rng.next_u64() as u8).collect();
    f.write_all_at(&bytes, 0).unwrap();
    for round in 0..200 {
        let stride = [64, 512, 4096][rng.below(3) as usize];
        let head = rng.below(stride as u64 / 2) as usize + 1;
        let count = 1 + rng.below(if round % 10 == 0 { 700 } else { 20 }) as usize;
        let tail = rng.below((stride - head + 1) as u64) as usize;
        let span = (count - 1) * stride + head + tail;
        if span > bytes.len() {
            continue;
        }
        let offset = rng.below((bytes.len() - span + 1) as u64) as usize;
        let mut heads = vec![0u8; count * head];
        let mut out = b"prefix".to_vec();
        f.read_split_at(offset as u64, Split { stride, head, count, tail }, &mut heads, &mut out).unwrap();
        let (eh, eo) = expected(&bytes, offset, stride, head, count, tail);
        assert!(heads == eh, "{name} seed {seed} round {round}: heads differ");
        assert!(&out[..6] == b"prefix" && out[6..] == eo[..], "{name} seed {seed} round {round}: data differs");
    }
    // Past the end of the file: an error, and `out` keeps its length.
    let mut heads = vec![0u8; 4 * 48];
    let mut out = b"keep".to_vec();
    let end = bytes.len() as u64 - 2 * 4096;
    assert!(f.read_split_at(end, Split { stride: 4096, head: 48, count: 4, tail: 100 }, &mut heads, &mut out).is_err());
    assert_eq!(out, b"keep");
    // A layout that does not add up is refused.
    for (stride, head, count, tail, heads_len) in
        [(4096, 48, 0, 0, 0), (4096, 48, 2, 4049, 96), (4096, 48, 2, 10, 95), (40, 48, 1, 0, 48)]
    {
        let mut heads = vec![0u8; heads_len];
        let e = f.read_split_at(0, Split { stride, head, count, tail }, &mut heads, &mut out).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{stride} {head} {count} {tail} {heads_len}");
        assert_eq!(out, b"keep");
    }
}

#[test]
fn read_split_at_matches_its_definition_on_disk() {
    exercise("fs", &FsStorage);
}

#[test]
fn read_split_at_matches_its_definition_in_memory() {
    exercise("mem", &MemStorage::new());
}
