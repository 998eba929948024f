//! Support for the fault tests (`powerloss.rs`, `io_errors.rs`, `corrupt_sweep.rs`, `kills.rs`):
//!
//! - the seeded RNG and `JACKDAW_SEED` handling of `tests/common`, re-exported;
//! - a model of the tree contents (`Model`), its digest, and reading a whole database back;
//! - `sim`: the power-loss simulator (`SimStorage`);
//! - `inject`: the I/O-error injector (`FaultStorage`).
//!
//! Written against the public API only (`jackdaw::internals` traits, `Env`, transactions).
#![allow(dead_code)]

pub mod inject;
pub mod sim;

use jackdaw::{Env, Error, ReadTxn};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Seeds and randomness.

// The generator and `JACKDAW_SEED` handling are the other tests' (`tests/common`), so a seed
// means the same stream everywhere. A test file with `mod fault;` has `mod common;` too.
#[allow(unused_imports)]
pub use crate::common::{env_seed, seed_or, seeds, OnPanic, Rng};

/// Keep large allocations (the in-memory files' 1 MiB chunks) on the heap, so that the many
/// short-lived images of a sweep reuse memory instead of mapping and faulting in fresh pages
/// every time (glibc only; elsewhere a no-op).
pub fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// An environment variable as a number, or `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------
// The model of a database's contents.

/// Tree name -> key -> value. A tree that exists but is empty is present with no keys.
pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A digest of a model (or of a database read back): equal digests mean equal contents.
pub fn digest(m: &Model) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(m.len() as u64).to_le_bytes());
    for (name, t) in m {
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update(&(t.len() as u64).to_le_bytes());
        for (k, v) in t {
            h.update(&(k.len() as u64).to_le_bytes());
            h.update(k);
            h.update(&(v.len() as u64).to_le_bytes());
            h.update(v);
        }
    }
    h.digest128()
}

/// Read every tree of a snapshot in full.
pub fn read_all(r: &ReadTxn) -> Result<Model, Error> {
    let mut m = Model::new();
    for name in r.list_trees()? {
        let t = r.open_tree(&name)?.ok_or_else(|| Error::Invalid(format!("listed tree {name} does not open")))?;
        let mut kv = BTreeMap::new();
        for item in r.range::<[u8], _>(&t, ..)? {
            let (k, v) = item?;
            kv.insert(k.to_vec(), v.to_vec());
        }
        m.insert(name, kv);
    }
    Ok(m)
}

/// (txid, contents) of the current state of `env`.
pub fn read_db(env: &Env) -> Result<(u64, Model), Error> {
    let r = env.read()?;
    let m = read_all(&r)?;
    Ok((r.txid().get(), m))
}

/// A value of `len` bytes determined by `(seed, salt)`: noise, or (one time in three) a run of
/// one repeated byte, so that large payloads sometimes compress.
pub fn value(seed: u64, salt: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut v = vec![0u8; len];
    if r.chance(1, 3) {
        v.fill(r.next_u64() as u8);
        if len > 0 {
            let i = r.below(len as u64) as usize;
            v[i] = v[i].wrapping_add(1);
        }
    } else {
        r.fill_bytes(&mut v);
    }
    v
}

/// A length drawn from the classes the tests want: tiny, small, medium (close to the inline
/// limit), overflow (a few pages), big overflow.
pub fn value_len(r: &mut Rng) -> usize {
    match r.below(20) {
        0..=5 => r.range(0, 16) as usize,
        6..=11 => r.range(17, 300) as usize,
        12..=15 => r.range(301, 1900) as usize,
        16..=18 => r.range(2000, 12_000) as usize,
        _ => r.range(12_000, 40_000) as usize,
    }
}

/// Classify an error for the tallies.
pub fn err_kind(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Corrupted { .. } => "Corrupted",
        Error::Locked { .. } => "Locked",
        Error::Poisoned(_) => "Poisoned",
        Error::NotADatabase(_) => "NotADatabase",
        Error::IncompatibleFormat(_) => "IncompatibleFormat",
        Error::Closed => "Closed",
        Error::Invalid(_) => "Invalid",
        Error::NoSuchTree(_) => "NoSuchTree",
        Error::KeyTooLarge { .. } => "KeyTooLarge",
        Error::ValueTooLarge { .. } => "ValueTooLarge",
        Error::Busy(_) => "Busy",
        Error::PinnedLimit { .. } => "PinnedLimit",
        Error::WrongTreeKind(_) => "WrongTreeKind",
        Error::TreeExists(_) => "TreeExists",
        _ => "other",
    }
}

/// A panic payload as text.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".into()
    }
}

/// Print a tally as `name count` lines under a title.
pub fn print_tally<K: std::fmt::Display>(title: &str, t: &BTreeMap<K, u64>) {
    println!("{title}:");
    for (k, v) in t {
        println!("    {k:<40} {v:>9}");
    }
}
