//! The synthetic dump: a tar archive (optionally bzip2-compressed) of `category/discid` xmcd
//! entries shaped like `freedb-complete` (the figures and their sources are in the crate's
//! README, section "Generator"). Deterministic for a seed.

use anyhow::{Context, Result};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::codec::CATEGORIES;

/// Entries per category in the 2005 dump (same order as [`CATEGORIES`]); 1,871,542 in all.
pub const CATEGORY_COUNTS_2005: [u64; 11] =
    [97_594, 161_561, 48_886, 19_209, 133_737, 108_090, 599_479, 71_832, 24_004, 539_808, 67_342];

/// The rates of the generated data, in parts per 10,000 entries.
pub mod rates {
    /// Artist "Various" with "Artist / Title" track titles (a sampler).
    pub const VARIOUS: u32 = 400;
    /// A DISCID line with 2 or 3 linked ids.
    pub const LINKED_IDS: u32 = 100;
    /// The disc id of an earlier entry reused in another category (other content).
    pub const SAME_ID_OTHER_CATEGORY: u32 = 50;
    /// DTITLE without `" / "`.
    pub const NO_SEPARATOR: u32 = 200;
    /// A DTITLE or TTITLE split over two lines (continuation).
    pub const SPLIT_CONTINUATION: u32 = 300;
    /// Names with accented letters written as ISO-8859-1 bytes.
    pub const LATIN1: u32 = 300;
    /// Names with accented letters written as UTF-8.
    pub const UTF8: u32 = 400;
    /// A non-numeric or missing track frame offset.
    pub const BROKEN_OFFSETS: u32 = 50;
    /// CRLF line ends.
    pub const CRLF: u32 = 100;
    /// DYEAR empty.
    pub const NO_YEAR: u32 = 3_000;
    /// DYEAR with more than 4 digits.
    pub const LONG_YEAR: u32 = 10;
    /// EXTD carrying `YEAR: yyyy`.
    pub const EXTD_YEAR: u32 = 2_000;
    /// A file that is not xmcd at all (skipped by the importer).
    pub const NOT_XMCD: u32 = 1;
}

/// What was generated.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GenReport {
    /// Entries written (files in the archive), not-xmcd files included.
    pub entries: u64,
    /// Of which not xmcd.
    pub not_xmcd: u64,
    /// Tracks in all.
    pub tracks: u64,
    /// Bytes of entry data (before tar framing and compression).
    pub entry_bytes: u64,
    /// Entries per category.
    pub per_category: Vec<(String, u64)>,
}

/// SplitMix64: small, fast, deterministic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// True with probability `per10k` / 10,000.
    pub fn chance(&mut self, per10k: u32) -> bool {
        self.below(10_000) < per10k as u64
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// Skewed towards 0 in `0..n`: a few popular values, a long tail.
    pub fn skewed(&mut self, n: u64) -> u64 {
        let u = self.below(1 << 20) as f64 / (1u64 << 20) as f64;
        ((u * u * u) * n as f64) as u64 % n.max(1)
    }
}

const ONSETS: [&str; 24] = [
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "st", "br", "ch", "tr",
    "gr", "sh",
];
const VOWELS: [&str; 8] = ["a", "e", "i", "o", "u", "ea", "ou", "y"];
const CODAS: [&str; 10] = ["", "", "", "n", "r", "s", "l", "m", "ck", "rd"];
const ACCENTED: [char; 12] = ['é', 'è', 'ü', 'ö', 'ä', 'ñ', 'ç', 'å', 'ø', 'í', 'ó', 'â'];

/// A pronounceable word of 1 to 3 syllables; with `accent`, one vowel becomes an accented letter.
fn word(r: &mut Rng, accent: bool) -> String {
    let mut w = String::new();
    for _ in 0..r.range(1, 3) {
        w.push_str(ONSETS[r.below(ONSETS.len() as u64) as usize]);
        w.push_str(VOWELS[r.below(VOWELS.len() as u64) as usize]);
        w.push_str(CODAS[r.below(CODAS.len() as u64) as usize]);
    }
    if accent {
        let c = ACCENTED[r.below(ACCENTED.len() as u64) as usize];
        let i = w.find(['a', 'e', 'i', 'o', 'u']).unwrap_or(0);
        let end = (i + 1).min(w.len());
        w.replace_range(i..end, &c.to_string());
    }
    let mut cs = w.chars();
    match cs.next() {
        Some(c) => c.to_uppercase().chain(cs).collect(),
        None => w,
    }
}

fn words(r: &mut Rng, lo: u64, hi: u64, accent: bool) -> String {
    let n = r.range(lo, hi);
    (0..n).map(|i| word(r, accent && i == 0)).collect::<Vec<_>>().join(" ")
}

/// The FreeDB disc id of a disc: the digit-sum checksum of the track start times, the playing
/// time and the track count.
pub fn disc_id(offsets: &[u32], disc_seconds: u32) -> u32 {
    let digit_sum = |mut n: u32| {
        let mut s = 0;
        while n > 0 {
            s += n % 10;
            n /= 10;
        }
        s
    };
    let sum: u32 = offsets.iter().map(|o| digit_sum(o / 75)).sum();
    let first = offsets.first().map_or(0, |o| o / 75);
    ((sum % 255) << 24) | ((disc_seconds.saturating_sub(first) & 0xffff) << 8) | (offsets.len() as u32 & 0xff)
}

fn tracks_per_disc(r: &mut Rng) -> u64 {
    match r.below(100) {
        0..=7 => r.range(1, 4),
        8..=87 => r.range(8, 16),
        _ => r.range(17, 30),
    }
}

/// The artists: a pool the entries draw from with a skew (a few artists with many discs).
struct Pool {
    artists: Vec<String>,
}

/// Write one entry's text. Returns it as bytes (Latin-1 entries are re-encoded) and the track
/// count.
fn entry(r: &mut Rng, pool: &Pool, discid_override: Option<u32>) -> (Vec<u8>, u32, u64) {
    let latin1 = r.chance(rates::LATIN1);
    let utf8 = !latin1 && r.chance(rates::UTF8);
    let accent = latin1 || utf8;
    let n = tracks_per_disc(r);
    let mut offsets = Vec::with_capacity(n as usize);
    let mut at = 150u32;
    for _ in 0..n {
        offsets.push(at);
        at += r.range(60, 480) as u32 * 75 + r.below(75) as u32;
    }
    let disc_seconds = at / 75;
    let id = discid_override.unwrap_or_else(|| disc_id(&offsets, disc_seconds));
    let various = r.chance(rates::VARIOUS);
    let artist = if various {
        "Various".to_string()
    } else if accent {
        words(r, 1, 3, true)
    } else {
        pool.artists[r.skewed(pool.artists.len() as u64) as usize].clone()
    };
    let title = words(r, 1, 5, accent);
    let nl = if r.chance(rates::CRLF) { "\r\n" } else { "\n" };
    let mut s = String::with_capacity(1024);
    let line = |s: &mut String, l: &str| {
        s.push_str(l);
        s.push_str(nl);
    };
    line(&mut s, "# xmcd");
    line(&mut s, "#");
    line(&mut s, "# Track frame offsets:");
    let broken = r.chance(rates::BROKEN_OFFSETS);
    let broken_at = r.below(n);
    let drop_last = broken && r.chance(5_000);
    for (i, o) in offsets.iter().enumerate() {
        if broken && i as u64 == broken_at && !drop_last {
            line(&mut s, &format!("#\t{o}x"));
        } else if drop_last && i + 1 == offsets.len() {
            // The last offset line is missing.
        } else {
            line(&mut s, &format!("#\t{o}"));
        }
    }
    line(&mut s, "#");
    line(&mut s, &format!("# Disc length: {disc_seconds} seconds"));
    line(&mut s, "#");
    line(&mut s, &format!("# Revision: {}", r.below(5)));
    line(&mut s, "# Processed by: cddbd v1.5.2PL0 Copyright (c) Steve Scherf et al.");
    line(&mut s, "# Submitted via: jackdaw-freedb-generate 1.0");
    line(&mut s, "#");
    let mut ids = vec![format!("{id:08x}")];
    if r.chance(rates::LINKED_IDS) {
        for _ in 0..r.range(1, 2) {
            ids.push(format!("{:08x}", r.next_u64() as u32));
        }
    }
    line(&mut s, &format!("DISCID={}", ids.join(",")));
    let dtitle =
        if r.chance(rates::NO_SEPARATOR) { format!("{artist} - {title}") } else { format!("{artist} / {title}") };
    let split = r.chance(rates::SPLIT_CONTINUATION);
    if split && dtitle.len() > 4 {
        let mut cut = dtitle.len() / 2;
        while !dtitle.is_char_boundary(cut) {
            cut += 1;
        }
        line(&mut s, &format!("DTITLE={}", &dtitle[..cut]));
        line(&mut s, &format!("DTITLE={}", &dtitle[cut..]));
    } else {
        line(&mut s, &format!("DTITLE={dtitle}"));
    }
    let year = if r.chance(rates::NO_YEAR) {
        String::new()
    } else if r.chance(rates::LONG_YEAR) {
        format!("1{}", r.range(1950, 2013))
    } else {
        r.range(1950, 2013).to_string()
    };
    line(&mut s, &format!("DYEAR={year}"));
    let genre = ["Rock", "Pop", "Classical", "Jazz", "Blues", "Misc", "Soundtrack", "Metal", "Folk", "other", ""]
        [r.below(11) as usize];
    line(&mut s, &format!("DGENRE={genre}"));
    for i in 0..n {
        let t = if various {
            let a = &pool.artists[r.skewed(pool.artists.len() as u64) as usize];
            format!("{a} / {}", words(r, 1, 4, false))
        } else {
            let acc = accent && r.chance(3_000);
            words(r, 1, 6, acc)
        };
        line(&mut s, &format!("TTITLE{i}={t}"));
    }
    if !year.is_empty() && r.chance(rates::EXTD_YEAR) {
        line(&mut s, &format!("EXTD= YEAR: {year}"));
    } else {
        line(&mut s, "EXTD=");
    }
    for i in 0..n {
        line(&mut s, &format!("EXTT{i}="));
    }
    line(&mut s, "PLAYORDER=");
    let bytes = if latin1 {
        // Every generated character is below U+0100.
        s.chars().map(|c| u8::try_from(c as u32).unwrap_or(b'?')).collect()
    } else {
        s.into_bytes()
    };
    (bytes, id, n)
}

/// How many of `n` entries go to each category: the 2005 proportions, rounded, the remainder
/// to the largest (misc).
pub fn category_counts(n: u64) -> [u64; 11] {
    let total: u64 = CATEGORY_COUNTS_2005.iter().sum();
    let mut out = [0u64; 11];
    for (o, c) in out.iter_mut().zip(CATEGORY_COUNTS_2005) {
        *o = n * c / total;
    }
    out[6] += n - out.iter().sum::<u64>();
    out
}

/// Write `albums` entries generated from `seed` as a tar archive to `out` (bzip2-compressed
/// when the name ends in `.bz2`). `progress` is called with the number of entries written.
pub fn generate(albums: u64, seed: u64, out: &Path, mut progress: impl FnMut(u64)) -> Result<GenReport> {
    if albums > crate::MAX_ALBUMS {
        anyhow::bail!("at most {} albums can be generated, not {albums}", crate::MAX_ALBUMS);
    }
    let file = std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let w = std::io::BufWriter::with_capacity(1 << 20, file);
    let name = out.to_string_lossy();
    let report = if name.ends_with(".bz2") || name.ends_with(".tbz2") {
        let enc = bzip2::write::BzEncoder::new(w, bzip2::Compression::new(6));
        let (report, enc) = write_tar(albums, seed, enc, &mut progress)?;
        enc.finish().context("finish the bzip2 stream")?.flush()?;
        report
    } else {
        let (report, mut w) = write_tar(albums, seed, w, &mut progress)?;
        w.flush()?;
        report
    };
    Ok(report)
}

fn write_tar<W: Write>(albums: u64, seed: u64, w: W, progress: &mut dyn FnMut(u64)) -> Result<(GenReport, W)> {
    let mut r = Rng::new(seed);
    let pool = Pool { artists: (0..(albums / 6).max(50)).map(|_| words(&mut r, 1, 3, false)).collect() };
    let mut tar = tar::Builder::new(w);
    let mut report = GenReport::default();
    let mut seen: HashSet<(usize, u32)> = HashSet::new();
    let mut recent_ids: Vec<u32> = Vec::new();
    let counts = category_counts(albums);
    let mut written = 0u64;
    for (ci, &count) in counts.iter().enumerate() {
        let cat = CATEGORIES[ci];
        for _ in 0..count {
            let reuse = if !recent_ids.is_empty() && r.chance(rates::SAME_ID_OTHER_CATEGORY) {
                Some(recent_ids[r.below(recent_ids.len() as u64) as usize])
            } else {
                None
            };
            let (mut data, mut id, mut n) = entry(&mut r, &pool, reuse.filter(|id| !seen.contains(&(ci, *id))));
            // A disc id is unique within its category directory.
            while seen.contains(&(ci, id)) {
                (data, id, n) = entry(&mut r, &pool, None);
            }
            if r.chance(rates::NOT_XMCD) {
                data = b"<html><body>This entry was replaced by an error page.</body></html>\n".to_vec();
                report.not_xmcd += 1;
                n = 0;
            }
            seen.insert((ci, id));
            if recent_ids.len() < 4096 {
                recent_ids.push(id);
            } else {
                let i = r.below(4096) as usize;
                recent_ids[i] = id;
            }
            let mut h = tar::Header::new_ustar();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(1_378_000_000);
            h.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut h, format!("{cat}/{id:08x}"), &data[..]).context("write the archive")?;
            report.entries += 1;
            report.tracks += n;
            report.entry_bytes += data.len() as u64;
            written += 1;
            if written.is_multiple_of(4096) {
                progress(written);
            }
        }
        report.per_category.push((cat.to_string(), count));
    }
    progress(written);
    let w = tar.into_inner().context("finish the archive")?;
    Ok((report, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_counts_sum_and_follow_2005() {
        let c = category_counts(1_871_542);
        assert_eq!(c, CATEGORY_COUNTS_2005);
        let c = category_counts(1000);
        assert_eq!(c.iter().sum::<u64>(), 1000);
        assert!(c[6] > c[9] && c[9] > c[1] && c[3] < c[8] + 10);
    }

    #[test]
    fn disc_id_last_byte_is_track_count() {
        assert_eq!(disc_id(&[150, 20000, 40000], 700) & 0xff, 3);
    }
}
