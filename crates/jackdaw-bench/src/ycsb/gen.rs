//! YCSB's number generators, ported from their definitions in YCSB's `site.ycsb.generator`
//! package (0.17.0) so that a YCSB user recognises the key sets and the skew: the 64-bit FNV hash
//! that turns key numbers into keys, the Zipfian generator of Gray et al. with its incremental
//! zeta, the scrambled Zipfian generator (zeta of 10^10 items, FNV scrambling), the latest
//! generator over an acknowledged insert counter, the uniform, hotspot, sequential and
//! exponential generators, and the discrete chooser of operations.
//!
//! Two deliberate differences from Java: the random source is the harness's seeded splitmix64
//! ([`Rng`], one stream per thread) rather than `ThreadLocalRandom`, so that a run can be
//! repeated from its seed; and [`AcknowledgedCounter::acknowledge`] takes its lock instead of
//! trying it (YCSB's `tryLock` lets a contended acknowledgement leave the limit behind until the
//! next one; here the limit is always the highest contiguously acknowledged value).
//!
//! The tests pin every deterministic quantity (FNV-64 values, zeta sums, eta, the first keys in
//! hashed order, the scrambled generator's item count) to values computed independently with
//! YCSB's own jar (`site.ycsb:core:0.17.0`), and the random ones by the frequency of the most
//! popular items against the closed form.

use crate::gen::Rng;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// YCSB's `Utils.FNV_OFFSET_BASIS_64`.
pub const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325u64 as i64;
/// YCSB's `Utils.FNV_PRIME_64`.
pub const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV over the 8 low-to-high bytes of `val`, then `Math.abs` (which
/// leaves `i64::MIN` as it is, as Java's does).
pub fn fnvhash64(mut val: i64) -> i64 {
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    h.wrapping_abs()
}

/// Java's `Random.nextDouble()` on our stream: 53 random bits in `[0, 1)`.
#[inline]
pub fn next_double(r: &mut Rng) -> f64 {
    (r.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Java's `Random.nextLong()` on our stream.
#[inline]
pub fn next_long(r: &mut Rng) -> i64 {
    r.next_u64() as i64
}

/// `ZipfianGenerator.ZIPFIAN_CONSTANT`.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// `ZipfianGenerator.zetastatic(st, n, theta, initialsum)`: `initialsum + Σ_{i=st}^{n-1} 1/(i+1)^θ`.
pub fn zeta_static(st: i64, n: i64, theta: f64, initial_sum: f64) -> f64 {
    let mut sum = initial_sum;
    let mut i = st;
    while i < n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
        i += 1;
    }
    sum
}

#[derive(Debug, Clone, Copy)]
struct ZetaState {
    count_for_zeta: i64,
    zetan: f64,
    eta: f64,
}

/// YCSB's `ZipfianGenerator`: values in `[min, max]`, item `min` the most popular, by the method
/// of Gray et al. ("Quickly generating billion-record synthetic databases", SIGMOD 1994). When
/// asked for more items than its zeta covers ([`ZipfianGenerator::next_long`] with a larger
/// count), it extends the zeta sum incrementally, as YCSB does (and, as YCSB does, keeps the
/// `2/items` term of eta at the item count it was built with).
#[derive(Debug)]
pub struct ZipfianGenerator {
    items: i64,
    base: i64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    state: Mutex<ZetaState>,
}

impl ZipfianGenerator {
    /// `new ZipfianGenerator(min, max)`, with `zipfianconstant` 0.99.
    pub fn new(min: i64, max: i64) -> ZipfianGenerator {
        Self::with_constant(min, max, ZIPFIAN_CONSTANT)
    }

    /// `new ZipfianGenerator(items)`: values in `[0, items - 1]`.
    pub fn with_items(items: i64) -> ZipfianGenerator {
        Self::new(0, items - 1)
    }

    /// `new ZipfianGenerator(min, max, zipfianconstant)`: computes zeta(max - min + 1).
    pub fn with_constant(min: i64, max: i64, constant: f64) -> ZipfianGenerator {
        let zetan = zeta_static(0, max - min + 1, constant, 0.0);
        Self::with_zetan(min, max, constant, zetan)
    }

    /// `new ZipfianGenerator(min, max, zipfianconstant, zetan)`: with a precomputed zeta.
    pub fn with_zetan(min: i64, max: i64, constant: f64, zetan: f64) -> ZipfianGenerator {
        let items = max - min + 1;
        let theta = constant;
        let zeta2theta = zeta_static(0, 2, theta, 0.0);
        let alpha = 1.0 / (1.0 - theta);
        let eta = Self::eta(items, theta, zeta2theta, zetan);
        ZipfianGenerator {
            items,
            base: min,
            theta,
            alpha,
            zeta2theta,
            state: Mutex::new(ZetaState { count_for_zeta: items, zetan, eta }),
        }
    }

    fn eta(items: i64, theta: f64, zeta2theta: f64, zetan: f64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan)
    }

    /// How many items the generator was built for.
    pub fn items(&self) -> i64 {
        self.items
    }

    /// The current zeta sum and eta (for tests against YCSB's figures).
    pub fn zetan_eta(&self) -> (f64, f64) {
        let s = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.zetan, s.eta)
    }

    /// `nextLong(itemcount)`: a value in `[min, min + itemcount)`, extending zeta when
    /// `itemcount` grew (a smaller count keeps the larger zeta, as YCSB's default
    /// `allowitemcountdecrease=false` does).
    pub fn next_long(&self, item_count: i64, r: &mut Rng) -> i64 {
        let (zetan, eta) = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if item_count > s.count_for_zeta {
                s.zetan = zeta_static(s.count_for_zeta, item_count, self.theta, s.zetan);
                s.count_for_zeta = item_count;
                s.eta = Self::eta(self.items, self.theta, self.zeta2theta, s.zetan);
            }
            (s.zetan, s.eta)
        };
        let u = next_double(r);
        let uz = u * zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (eta * u - eta + 1.0).powf(self.alpha)) as i64
    }

    /// `nextValue()`: `next_long(items)`.
    pub fn next_value(&self, r: &mut Rng) -> i64 {
        self.next_long(self.items, r)
    }
}

/// `ScrambledZipfianGenerator.ZETAN`: zeta(10^10) at 0.99, precomputed by YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.46902820178302;
/// `ScrambledZipfianGenerator.ITEM_COUNT`.
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;

/// YCSB's `ScrambledZipfianGenerator`: a Zipfian draw over 10^10 items, hashed with FNV-64 and
/// folded into `[min, max]`, so that the popular items are spread over the key space and stay
/// put when `max` is the key count expected after the run's inserts.
#[derive(Debug)]
pub struct ScrambledZipfianGenerator {
    gen: ZipfianGenerator,
    min: i64,
    item_count: i64,
}

impl ScrambledZipfianGenerator {
    pub fn new(min: i64, max: i64) -> ScrambledZipfianGenerator {
        Self::with_constant(min, max, ZIPFIAN_CONSTANT)
    }

    pub fn with_constant(min: i64, max: i64, constant: f64) -> ScrambledZipfianGenerator {
        let gen = if constant == ZIPFIAN_CONSTANT {
            ZipfianGenerator::with_zetan(0, SCRAMBLED_ITEM_COUNT, constant, SCRAMBLED_ZETAN)
        } else {
            ZipfianGenerator::with_constant(0, SCRAMBLED_ITEM_COUNT, constant)
        };
        ScrambledZipfianGenerator { gen, min, item_count: max - min + 1 }
    }

    /// The size of the range values are folded into (`max - min + 1`).
    pub fn item_count(&self) -> i64 {
        self.item_count
    }

    /// The Zipfian generator underneath.
    pub fn inner(&self) -> &ZipfianGenerator {
        &self.gen
    }

    pub fn next_value(&self, r: &mut Rng) -> i64 {
        let v = self.gen.next_value(r);
        // Java's `%` on longs: the sign of the dividend (fnvhash64 is negative only for i64::MIN).
        self.min + fnvhash64(v) % self.item_count
    }
}

/// YCSB's `CounterGenerator`: hands out `start, start + 1, ...` to every thread.
#[derive(Debug)]
pub struct CounterGenerator {
    counter: AtomicI64,
}

impl CounterGenerator {
    pub fn new(start: i64) -> CounterGenerator {
        CounterGenerator { counter: AtomicI64::new(start) }
    }
    pub fn next_value(&self) -> i64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }
    /// The last value handed out.
    pub fn last_value(&self) -> i64 {
        self.counter.load(Ordering::Relaxed) - 1
    }
}

/// `AcknowledgedCounterGenerator.WINDOW_SIZE`.
pub const ACK_WINDOW: usize = 1 << 20;

#[derive(Debug)]
struct AckState {
    limit: i64,
    window: Vec<bool>,
}

/// YCSB's `AcknowledgedCounterGenerator`: the insert counter of the run phase. `next_value`
/// hands out key numbers; `last_value` is the highest number below which every insert has been
/// acknowledged (so a reader never asks for a key whose insert is still in flight).
#[derive(Debug)]
pub struct AcknowledgedCounter {
    counter: CounterGenerator,
    state: Mutex<AckState>,
    limit: AtomicI64,
}

/// More than [`ACK_WINDOW`] inserts in flight (YCSB: "Too many unacknowledged insertion keys").
#[derive(Debug, thiserror::Error)]
#[error("too many unacknowledged insertion keys (more than {ACK_WINDOW} inserts in flight)")]
pub struct TooManyUnacknowledged;

impl AcknowledgedCounter {
    pub fn new(start: i64) -> AcknowledgedCounter {
        AcknowledgedCounter {
            counter: CounterGenerator::new(start),
            state: Mutex::new(AckState { limit: start - 1, window: vec![false; ACK_WINDOW] }),
            limit: AtomicI64::new(start - 1),
        }
    }
    pub fn next_value(&self) -> i64 {
        self.counter.next_value()
    }
    /// The acknowledged limit.
    pub fn last_value(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }
    /// Mark `value` inserted; moves the limit over every contiguous acknowledged value.
    pub fn acknowledge(&self, value: i64) -> Result<(), TooManyUnacknowledged> {
        let mask = ACK_WINDOW as i64 - 1;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (value & mask) as usize;
        if s.window[slot] {
            return Err(TooManyUnacknowledged);
        }
        s.window[slot] = true;
        let before_first = s.limit & mask;
        let mut index = s.limit + 1;
        while index != before_first {
            let slot = (index & mask) as usize;
            if !s.window[slot] {
                break;
            }
            s.window[slot] = false;
            index += 1;
        }
        s.limit = index - 1;
        self.limit.store(s.limit, Ordering::Release);
        Ok(())
    }
}

/// YCSB's `SkewedLatestGenerator`: `max − zipfian(max)` where `max` is the acknowledged insert
/// counter's last value: the latest records are the most popular.
#[derive(Debug)]
pub struct SkewedLatestGenerator {
    zipfian: ZipfianGenerator,
}

impl SkewedLatestGenerator {
    pub fn new(basis: &AcknowledgedCounter) -> SkewedLatestGenerator {
        SkewedLatestGenerator { zipfian: ZipfianGenerator::with_items(basis.last_value()) }
    }
    pub fn next_value(&self, basis: &AcknowledgedCounter, r: &mut Rng) -> i64 {
        let max = basis.last_value();
        max - self.zipfian.next_long(max, r)
    }
}

/// YCSB's `UniformLongGenerator`: `|nextLong| % (ub - lb + 1) + lb`.
#[derive(Debug, Clone, Copy)]
pub struct UniformLongGenerator {
    lb: i64,
    interval: i64,
}

impl UniformLongGenerator {
    pub fn new(lb: i64, ub: i64) -> UniformLongGenerator {
        UniformLongGenerator { lb, interval: ub - lb + 1 }
    }
    pub fn next_value(&self, r: &mut Rng) -> i64 {
        next_long(r).wrapping_abs() % self.interval + self.lb
    }
}

/// YCSB's `HotspotIntegerGenerator`: a fraction `hot_opn` of the draws falls uniformly in the
/// first `hot_set` fraction of `[lb, ub]`, the rest uniformly in the remainder.
#[derive(Debug, Clone, Copy)]
pub struct HotspotIntegerGenerator {
    lb: i64,
    hot_interval: i64,
    cold_interval: i64,
    hot_opn_fraction: f64,
}

impl HotspotIntegerGenerator {
    /// Fractions outside `[0, 1]` become 0, as in YCSB (which prints a warning; so do we).
    pub fn new(mut lb: i64, mut ub: i64, mut hot_set: f64, mut hot_opn: f64) -> HotspotIntegerGenerator {
        if !(0.0..=1.0).contains(&hot_set) {
            eprintln!("warning: hotspotdatafraction {hot_set} is out of range [0, 1]: using 0.0");
            hot_set = 0.0;
        }
        if !(0.0..=1.0).contains(&hot_opn) {
            eprintln!("warning: hotspotopnfraction {hot_opn} is out of range [0, 1]: using 0.0");
            hot_opn = 0.0;
        }
        if lb > ub {
            std::mem::swap(&mut lb, &mut ub);
        }
        let interval = ub - lb + 1;
        // Java: `(int) (interval * hotsetFraction)`.
        let hot_interval = ((interval as f64 * hot_set) as i32) as i64;
        HotspotIntegerGenerator { lb, hot_interval, cold_interval: interval - hot_interval, hot_opn_fraction: hot_opn }
    }
    pub fn next_value(&self, r: &mut Rng) -> i64 {
        // A draw into an empty set would divide by zero in Java too; fall to the other set.
        if (next_double(r) < self.hot_opn_fraction && self.hot_interval > 0) || self.cold_interval == 0 {
            self.lb + next_long(r).wrapping_abs() % self.hot_interval.max(1)
        } else {
            self.lb + self.hot_interval + next_long(r).wrapping_abs() % self.cold_interval
        }
    }
}

/// YCSB's `SequentialGenerator`: `start, start + 1, ..., end, start, ...` across all threads.
#[derive(Debug)]
pub struct SequentialGenerator {
    counter: AtomicI64,
    start: i64,
    interval: i64,
}

impl SequentialGenerator {
    pub fn new(start: i64, end: i64) -> SequentialGenerator {
        SequentialGenerator { counter: AtomicI64::new(start), start, interval: end - start + 1 }
    }
    pub fn next_value(&self) -> i64 {
        (self.counter.fetch_add(1, Ordering::Relaxed) - self.start) % self.interval + self.start
    }
}

/// YCSB's `ExponentialGenerator(percentile, range)`: `percentile`% of the draws fall below
/// `range`.
#[derive(Debug, Clone, Copy)]
pub struct ExponentialGenerator {
    gamma: f64,
}

impl ExponentialGenerator {
    pub fn new(percentile: f64, range: f64) -> ExponentialGenerator {
        ExponentialGenerator { gamma: -(1.0 - percentile / 100.0).ln() / range }
    }
    pub fn next_value(&self, r: &mut Rng) -> i64 {
        (-next_double(r).ln() / self.gamma) as i64
    }
}

/// YCSB's `DiscreteGenerator`: picks one of the values with probability weight / Σ weights,
/// trying them in the order they were added.
#[derive(Debug, Clone)]
pub struct DiscreteGenerator<T: Copy> {
    values: Vec<(f64, T)>,
}

impl<T: Copy> DiscreteGenerator<T> {
    pub fn new() -> DiscreteGenerator<T> {
        DiscreteGenerator { values: Vec::new() }
    }
    pub fn add(&mut self, weight: f64, value: T) {
        self.values.push((weight, value));
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    pub fn next(&self, r: &mut Rng) -> T {
        let sum: f64 = self.values.iter().map(|v| v.0).sum();
        let mut val = next_double(r);
        for (w, v) in &self.values {
            let pw = w / sum;
            if val < pw {
                return *v;
            }
            val -= pw;
        }
        // Rounding left `val` a hair above the last share: the last value, as the sum says.
        self.values.last().map(|v| v.1).expect("DiscreteGenerator::next on no values")
    }
}

impl<T: Copy> Default for DiscreteGenerator<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// YCSB's `RandomByteIterator` data: printable bytes, six from each random 32-bit int with the
/// same masks (so that the values compress as YCSB's do, which matters to an engine that
/// compresses its journal).
pub fn fill_random_bytes(r: &mut Rng, buf: &mut [u8]) {
    for chunk in buf.chunks_mut(6) {
        let b = r.next_u64() as i32;
        let vals = [b & 31, (b >> 5) & 63, (b >> 10) & 95, (b >> 15) & 31, (b >> 20) & 63, (b >> 25) & 95];
        for (o, v) in chunk.iter_mut().zip(vals) {
            *o = (v + b' ' as i32) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> u64 {
        let s = std::env::var("JACKDAW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20_261_125);
        eprintln!("seed {s} (set JACKDAW_SEED to repeat)");
        s
    }

    #[test]
    fn fnv64_matches_ycsb() {
        // Computed with YCSB 0.17.0's `site.ycsb.Utils.fnvhash64` (Java), written here as literals.
        let expected: [(i64, i64); 10] = [
            (0, 6284781860667377211),
            (1, 8517097267634966620),
            (2, 1820151046732198393),
            (3, 4052466453699787802),
            (999, 2071219101098386137),
            (1000, 5952875239596136740),
            (123456789, 2350796791908741607),
            (-1, 8289690350564177859),
            (i64::MAX, 8289549613075766851),
            (9999999999, 3605131173811637474),
        ];
        for (x, h) in expected {
            assert_eq!(fnvhash64(x), h, "fnvhash64({x})");
        }
    }

    #[test]
    fn zeta_and_eta_match_ycsb() {
        // `ZipfianGenerator.zetastatic(n, 0.99)` from YCSB 0.17.0.
        let expected = [
            (1, 1.0),
            (2, 1.5034777750283594),
            (10, 2.9561075165103636),
            (1000, 7.728953217284729),
            (1101, 7.832054533835023),
            (100000, 12.778338062551246),
        ];
        for (n, z) in expected {
            let got = zeta_static(0, n, ZIPFIAN_CONSTANT, 0.0);
            assert!((got - z).abs() <= 1e-12 * z, "zeta({n}) = {got}, YCSB {z}");
        }
        // new ZipfianGenerator(0, 999): zetan, eta.
        let z = ZipfianGenerator::new(0, 999);
        let (zetan, eta) = z.zetan_eta();
        assert!((zetan - 7.728953217284729).abs() < 1e-12);
        assert!((eta - 0.07480608670689805).abs() < 1e-14, "eta {eta}");
        // The scrambled generator's inner Zipfian: 10^10 + 1 items, YCSB's eta.
        let s = ScrambledZipfianGenerator::new(0, 999);
        assert_eq!(s.inner().items(), 10_000_000_001);
        let (zetan, eta) = s.inner().zetan_eta();
        assert_eq!(zetan, SCRAMBLED_ZETAN);
        assert!((eta - 0.21220003380967406).abs() < 1e-14, "eta {eta}");
        // Incremental zeta: new ZipfianGenerator(1000), then nextLong(1500).
        let z = ZipfianGenerator::with_items(1000);
        let mut r = Rng::new(1);
        z.next_long(1500, &mut r);
        let (zetan, eta) = z.zetan_eta();
        assert!((zetan - 8.164121812765377).abs() < 1e-12, "zetan {zetan}");
        assert!((eta - 0.07385536241151996).abs() < 1e-14, "eta {eta}");
    }

    /// 5 standard deviations of a binomial proportion over `n` draws.
    fn tol(p: f64, n: f64) -> f64 {
        5.0 * (p * (1.0 - p) / n).sqrt()
    }

    #[test]
    fn zipfian_popular_items_follow_the_closed_form() {
        let mut r = Rng::new(seed());
        let n = 1_000_000usize;
        let items = 1000i64;
        let z = ZipfianGenerator::new(0, items - 1);
        let mut counts = vec![0u64; items as usize];
        for _ in 0..n {
            let v = z.next_value(&mut r);
            assert!((0..items).contains(&v), "{v}");
            counts[v as usize] += 1;
        }
        let zetan = zeta_static(0, items, ZIPFIAN_CONSTANT, 0.0);
        // Items 0 and 1 are exact in Gray's method: P(i) = (1/(i+1)^θ) / zeta(n).
        for (i, c) in counts.iter().enumerate().take(2) {
            let p = 1.0 / ((i + 1) as f64).powf(ZIPFIAN_CONSTANT) / zetan;
            let f = *c as f64 / n as f64;
            assert!((f - p).abs() <= tol(p, n as f64), "item {i}: {f} vs closed form {p} (± {})", tol(p, n as f64));
        }
        // Beyond them Gray's method is an approximation of Zipf's law (item 2 comes out ~16%
        // above 1/3^θ/zeta(n), as in YCSB): items 2..10 against the method's own closed form,
        // the measure of the u that map to item i.
        let (_, eta) = z.zetan_eta();
        let alpha = 1.0 / (1.0 - ZIPFIAN_CONSTANT);
        let u_of = |x: f64| ((x / items as f64).powf(1.0 / alpha) - 1.0 + eta) / eta;
        let low = (1.0 + 0.5f64.powf(ZIPFIAN_CONSTANT)) / zetan;
        for (i, c) in counts.iter().enumerate().take(10).skip(2) {
            let (a, b) = (u_of(i as f64).max(low), u_of(i as f64 + 1.0).max(low));
            let p = (b - a).max(0.0);
            let f = *c as f64 / n as f64;
            assert!((f - p).abs() <= tol(p, n as f64), "item {i}: {f} vs Gray's closed form {p}");
        }
    }

    #[test]
    fn scrambled_zipfian_spreads_the_popular_item_by_fnv() {
        let mut r = Rng::new(seed());
        let n = 1_000_000usize;
        // CoreWorkload for recordcount 1000, operationcount 1000, insertproportion 0.05 builds
        // ScrambledZipfianGenerator(0, 1000 + 100): YCSB's item count 1101 (checked in Java).
        let s = ScrambledZipfianGenerator::new(0, 1100);
        assert_eq!(s.item_count(), 1101);
        let mut counts = vec![0u64; 1101];
        for _ in 0..n {
            let v = s.next_value(&mut r);
            assert!((0..1101).contains(&v), "{v}");
            counts[v as usize] += 1;
        }
        // The most popular item is fnv(0) % 1101 = 903 (YCSB, Java), with probability
        // 1/ZETAN plus what other Zipfian items fold onto the same slot (at most their share:
        // (1 − 1/ZETAN)/1101 on average, allowed 3×).
        let top = counts.iter().enumerate().max_by_key(|c| c.1).map(|c| c.0).unwrap();
        assert_eq!(top, 903);
        let p0 = 1.0 / SCRAMBLED_ZETAN;
        let f = counts[903] as f64 / n as f64;
        let extra = 3.0 * (1.0 - p0) / 1101.0;
        assert!(f >= p0 - tol(p0, n as f64) && f <= p0 + extra + tol(p0, n as f64), "top item share {f}, p0 {p0}");
    }

    #[test]
    fn latest_prefers_the_newest_acknowledged_insert() {
        let mut r = Rng::new(seed());
        let c = AcknowledgedCounter::new(1000);
        assert_eq!(c.last_value(), 999);
        let g = SkewedLatestGenerator::new(&c);
        let n = 1_000_000;
        let mut at_max = 0;
        for _ in 0..n {
            let v = g.next_value(&c, &mut r);
            assert!((1..=999).contains(&v), "{v}");
            at_max += (v == 999) as u64;
        }
        // next = max − zipfian(max): P(max) = P(zipfian = 0) = 1/zeta(999).
        let p = 1.0 / zeta_static(0, 999, ZIPFIAN_CONSTANT, 0.0);
        let f = at_max as f64 / n as f64;
        assert!((f - p).abs() <= tol(p, n as f64), "P(latest) {f} vs {p}");
        // Out-of-order acknowledgements: the limit moves only over contiguous values.
        let (a, b, d) = (c.next_value(), c.next_value(), c.next_value());
        assert_eq!((a, b, d), (1000, 1001, 1002));
        c.acknowledge(1001).unwrap();
        assert_eq!(c.last_value(), 999);
        c.acknowledge(1000).unwrap();
        assert_eq!(c.last_value(), 1001);
        let v = g.next_value(&c, &mut r);
        assert!((1..=1001).contains(&v));
        c.acknowledge(1002).unwrap();
        assert_eq!(c.last_value(), 1002);
    }

    #[test]
    fn uniform_hotspot_and_discrete_frequencies() {
        let mut r = Rng::new(seed());
        let n = 1_000_000;
        let u = UniformLongGenerator::new(1, 100);
        let h = HotspotIntegerGenerator::new(0, 999, 0.2, 0.8);
        let mut d = DiscreteGenerator::new();
        d.add(0.95, 'r');
        d.add(0.05, 'i');
        let (mut u_lo, mut u_min, mut u_max, mut hot, mut ins) = (0u64, i64::MAX, i64::MIN, 0u64, 0u64);
        for _ in 0..n {
            let x = u.next_value(&mut r);
            u_min = u_min.min(x);
            u_max = u_max.max(x);
            u_lo += (x <= 50) as u64;
            let y = h.next_value(&mut r);
            assert!((0..1000).contains(&y));
            hot += (y < 200) as u64;
            ins += (d.next(&mut r) == 'i') as u64;
        }
        assert_eq!((u_min, u_max), (1, 100));
        let nf = n as f64;
        assert!((u_lo as f64 / nf - 0.5).abs() <= tol(0.5, nf));
        assert!((hot as f64 / nf - 0.8).abs() <= tol(0.8, nf), "hot share {}", hot as f64 / nf);
        assert!((ins as f64 / nf - 0.05).abs() <= tol(0.05, nf));
    }

    #[test]
    fn random_bytes_are_printable_as_ycsb_makes_them() {
        let mut r = Rng::new(seed());
        let mut b = vec![0u8; 100];
        fill_random_bytes(&mut r, &mut b);
        assert!(b.iter().all(|c| (b' '..=b' ' + 95).contains(c)), "{b:?}");
        // Byte 0 of each six takes 5 bits (mask 31), byte 2 up to 95.
        assert!(b.chunks(6).all(|c| c[0] <= b' ' + 31));
        let mut seen = std::collections::HashSet::new();
        seen.extend(b.iter().copied());
        assert!(seen.len() > 20, "values vary: {} distinct bytes", seen.len());
    }
}
