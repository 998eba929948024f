//! The compact encoding of an [`Album`] stored in the `albums` tree (the same bytes in every
//! engine of the peer comparison).
//!
//! Layout: a format byte (1), the encoding code, the category (one byte: its index in
//! [`CATEGORIES`], or 255 followed by the name), then varint-length-prefixed strings and varints:
//! disc ids (count, each), artist, title, year (0 = none, else year + 1), genre, disc length
//! (0 = none, else seconds + 1), revision, extd, track count, and per track: title, seconds
//! (0 = none, else + 1), ext. Decoding checks every length and returns [`CodecError`] (or, through
//! the typed tree, `jackdaw::Error::Corrupted`) for bytes that do not decode: never a panic.

use crate::parse::{Album, Encoding, Track};

/// The 11 category directories of the dump, in `cddb lscat` order.
pub const CATEGORIES: [&str; 11] =
    ["blues", "classical", "country", "data", "folk", "jazz", "misc", "newage", "reggae", "rock", "soundtrack"];

const FORMAT: u8 = 1;

/// Bytes that are not an encoded album.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("album record does not decode: {0}")]
pub struct CodecError(pub &'static str);

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn opt(v: Option<u32>) -> u64 {
    v.map_or(0, |x| x as u64 + 1)
}

/// Append the encoding of `a` to `out`.
pub fn encode_into(a: &Album, out: &mut Vec<u8>) {
    out.push(FORMAT);
    out.push(a.encoding.code());
    match CATEGORIES.iter().position(|c| *c == a.category) {
        Some(i) => out.push(i as u8),
        None => {
            out.push(255);
            put_str(out, &a.category);
        }
    }
    put_varint(out, a.discids.len() as u64);
    for d in &a.discids {
        put_str(out, d);
    }
    put_str(out, &a.artist);
    put_str(out, &a.title);
    put_varint(out, opt(a.year.map(u32::from)));
    put_str(out, &a.genre);
    put_varint(out, opt(a.disc_seconds));
    put_varint(out, a.revision as u64);
    put_str(out, &a.extd);
    put_varint(out, a.tracks.len() as u64);
    for t in &a.tracks {
        put_str(out, &t.title);
        put_varint(out, opt(t.seconds));
        put_str(out, &t.ext);
    }
}

/// The encoding of `a`.
pub fn encode(a: &Album) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + a.tracks.len() * 24);
    encode_into(a, &mut out);
    out
}

struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    fn byte(&mut self) -> Result<u8, CodecError> {
        let (&b, rest) = self.0.split_first().ok_or(CodecError("truncated"))?;
        self.0 = rest;
        Ok(b)
    }
    fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(CodecError("varint too long"))
    }
    fn str(&mut self) -> Result<String, CodecError> {
        let n = self.varint()?;
        if n > self.0.len() as u64 {
            return Err(CodecError("string longer than the record"));
        }
        let (s, rest) = self.0.split_at(n as usize);
        self.0 = rest;
        String::from_utf8(s.to_vec()).map_err(|_| CodecError("string not UTF-8"))
    }
    fn opt_u32(&mut self) -> Result<Option<u32>, CodecError> {
        match self.varint()? {
            0 => Ok(None),
            v => u32::try_from(v - 1).map(Some).map_err(|_| CodecError("number out of range")),
        }
    }
    fn count(&mut self) -> Result<usize, CodecError> {
        let n = self.varint()?;
        // Every counted item takes at least one byte.
        if n > self.0.len() as u64 {
            return Err(CodecError("count larger than the record"));
        }
        Ok(n as usize)
    }
}

/// Decode an album record.
pub fn decode(bytes: &[u8]) -> Result<Album, CodecError> {
    let mut r = Rd(bytes);
    if r.byte()? != FORMAT {
        return Err(CodecError("unknown format byte"));
    }
    let encoding = Encoding::from_code(r.byte()?).ok_or(CodecError("unknown encoding"))?;
    let category = match r.byte()? {
        255 => r.str()?,
        i => CATEGORIES.get(i as usize).ok_or(CodecError("unknown category"))?.to_string(),
    };
    let n = r.count()?;
    let mut discids = Vec::with_capacity(n);
    for _ in 0..n {
        discids.push(r.str()?);
    }
    let artist = r.str()?;
    let title = r.str()?;
    let year = match r.opt_u32()? {
        None => None,
        Some(y) => Some(u16::try_from(y).map_err(|_| CodecError("year out of range"))?),
    };
    let genre = r.str()?;
    let disc_seconds = r.opt_u32()?;
    let revision = u32::try_from(r.varint()?).map_err(|_| CodecError("revision out of range"))?;
    let extd = r.str()?;
    let n = r.count()?;
    let mut tracks = Vec::with_capacity(n);
    for _ in 0..n {
        tracks.push(Track { title: r.str()?, seconds: r.opt_u32()?, ext: r.str()? });
    }
    if !r.0.is_empty() {
        return Err(CodecError("trailing bytes"));
    }
    Ok(Album { category, discids, artist, title, year, genre, disc_seconds, revision, tracks, extd, encoding })
}

/// An album already encoded (by the import's parse stage), stored as an [`Album`] value as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedAlbum(pub Vec<u8>);

impl jackdaw::AsValue<Album> for EncodedAlbum {
    fn encode_value(&self, out: &mut Vec<u8>) -> jackdaw::Result<()> {
        out.extend_from_slice(&self.0);
        Ok(())
    }
}

impl jackdaw::AsValue<Album> for Album {
    fn encode_value(&self, out: &mut Vec<u8>) -> jackdaw::Result<()> {
        encode_into(self, out);
        Ok(())
    }
}

impl jackdaw::Value for Album {
    fn decode_value(bytes: &[u8]) -> jackdaw::Result<Self> {
        decode(bytes).map_err(|e| jackdaw::Error::Corrupted { page: None, reason: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Album {
        Album {
            category: "rock".into(),
            discids: vec!["470a6507".into(), "490a6407".into()],
            artist: "Sigur Rós".into(),
            title: "Ágætis byrjun".into(),
            year: Some(1999),
            genre: "Post\nRock".into(),
            disc_seconds: Some(4000),
            revision: 3,
            tracks: vec![
                Track { title: "Intro".into(), seconds: Some(98), ext: String::new() },
                Track { title: String::new(), seconds: None, ext: "x".into() },
            ],
            extd: "YEAR: 1999".into(),
            encoding: Encoding::Utf8,
        }
    }

    #[test]
    fn round_trips_including_unknown_category_and_empty_fields() {
        let a = sample();
        assert_eq!(decode(&encode(&a)).unwrap(), a);
        let mut b = sample();
        b.category = "unknown-dir".into();
        b.year = None;
        b.disc_seconds = None;
        b.tracks.clear();
        b.encoding = Encoding::Latin1;
        assert_eq!(decode(&encode(&b)).unwrap(), b);
    }

    #[test]
    fn every_truncation_and_trailing_byte_is_an_error_not_a_panic() {
        let bytes = encode(&sample());
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(decode(&long), Err(CodecError("trailing bytes")));
        // Flipped bytes: an error or some album, never a panic.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = decode(&b);
        }
    }
}
