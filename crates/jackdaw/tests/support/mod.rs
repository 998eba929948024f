//! Helpers shared by the randomized and crash tests: a tiny seeded RNG, `JACKDAW_SEED` handling,
//! a "print this on failure" guard and a recursive directory copy (crash images).
#![allow(dead_code)]

use std::path::Path;

/// xorshift64* seeded through splitmix64 (so seeds 0, 1, 2, ... give unrelated streams).
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        XorShift(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }
    /// In `[lo, hi]`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

/// The seed given in `JACKDAW_SEED` (decimal or 0x-hex), if any.
pub fn env_seed() -> Option<u64> {
    let s = std::env::var("JACKDAW_SEED").ok()?;
    let s = s.trim();
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        s.parse::<u64>()
    };
    Some(v.unwrap_or_else(|_| panic!("JACKDAW_SEED={s:?} is not a u64")))
}

/// `JACKDAW_SEED` if set, else `default` (fixed, so CI runs are reproducible). Prints it.
pub fn seed_or(test: &str, default: u64) -> u64 {
    let seed = env_seed().unwrap_or(default);
    println!("{test}: seed {seed} (replay with JACKDAW_SEED={seed})");
    seed
}

/// Prints its message if dropped while the thread panics (a failing test shows its seed even
/// when the assertion that failed knows nothing about it).
pub struct OnPanic(pub String);

impl Drop for OnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("\n*** {} ***\n", self.0);
        }
    }
}

/// Copy a directory tree (regular files and directories only). Used on a database that is still
/// open to get a crash image: everything the engine wrote to the OS is in it.
/// A missing `from` (a process killed before it created the database) copies as nothing.
pub fn copy_dir(from: &Path, to: &Path) {
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("read {}: {e}", from.display()),
    };
    std::fs::create_dir_all(to).unwrap();
    for e in entries {
        let e = e.unwrap();
        let ty = e.file_type().unwrap();
        let dst = to.join(e.file_name());
        if ty.is_dir() {
            copy_dir(&e.path(), &dst);
        } else if ty.is_file() {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}
