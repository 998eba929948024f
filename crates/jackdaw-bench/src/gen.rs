//! Seeded data: a splitmix64 generator, the keys `seq(i)` and `rnd`, random values, and the
//! checksum the read workloads fold over the values they copy out.

/// splitmix64: tiny, fast, and good enough to make keys and incompressible values.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// An independent stream for `label` (same seed, different purpose → different data).
    pub fn stream(seed: u64, label: &str) -> Rng {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in label.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        Rng(seed ^ h)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by 128-bit multiply (bias negligible for our n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let b = self.next_u64().to_le_bytes();
            let n = rest.len();
            rest.copy_from_slice(&b[..n]);
        }
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

pub const KEY_LEN: usize = 16;
pub type Key = [u8; KEY_LEN];

/// `n` as 16 ASCII decimal digits, zero-padded.
#[inline]
pub fn digits16(mut n: u64) -> Key {
    let mut k = [b'0'; KEY_LEN];
    for i in (0..KEY_LEN).rev() {
        k[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// `seq(i)`.
#[inline]
pub fn seq_key(i: u64) -> Key {
    digits16(i)
}

/// A random 16-digit decimal key.
#[inline]
pub fn rnd_key(rng: &mut Rng) -> Key {
    digits16(rng.below(10_000_000_000_000_000))
}

/// `n` values of `len` random bytes each, one contiguous buffer.
pub struct Values {
    buf: Vec<u8>,
    len: usize,
}

impl Values {
    pub fn new(rng: &mut Rng, n: usize, len: usize) -> Values {
        let mut buf = vec![0u8; n * len];
        rng.fill(&mut buf);
        Values { buf, len }
    }
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        &self.buf[i * self.len..(i + 1) * self.len]
    }
    pub fn count(&self) -> usize {
        self.buf.len().checked_div(self.len).unwrap_or(0)
    }
    pub fn value_len(&self) -> usize {
        self.len
    }
}

/// A pass over every byte of `v` (a sum of its 8-byte words): what a reader of a value it did
/// not copy does at least once.
#[inline]
pub fn read_every_byte(v: &[u8]) -> u64 {
    let mut words = v.chunks_exact(8);
    let sum = words.by_ref().fold(0u64, |a, w| a.wrapping_add(u64::from_le_bytes(w.try_into().unwrap_or([0; 8]))));
    words.remainder().iter().fold(sum, |a, b| a.wrapping_add(*b as u64))
}

/// What the read loops fold over each value they copy out: cheap, order-independent when summed,
/// and different for a wrong or truncated value with overwhelming probability.
#[inline]
pub fn value_sum(v: &[u8]) -> u64 {
    let n = v.len();
    let mut head = [0u8; 8];
    let mut tail = [0u8; 8];
    let h = n.min(8);
    head[..h].copy_from_slice(&v[..h]);
    tail[..h].copy_from_slice(&v[n - h..]);
    u64::from_le_bytes(head)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(u64::from_le_bytes(tail).rotate_left(17))
        .wrapping_add(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(&seq_key(42), b"0000000000000042");
        let mut r = Rng::new(1);
        let k = rnd_key(&mut r);
        assert!(k.iter().all(u8::is_ascii_digit));
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
    }
}
