//! The xmcd parser: one FreeDB entry (the bytes of one file of the dump) into an [`Album`] plus
//! the [`Warning`]s its dirty data raised. No storage engine here.
//!
//! What it does, following "THE FREEDB FILE FORMAT" (DBFORMAT) and the dirt seen in real files:
//! - the entry must start with `# xmcd` (else [`ParseError::NotXmcd`]: the file is skipped);
//! - the encoding is chosen per entry: all bytes < 0x80 → ASCII, valid UTF-8 → UTF-8, otherwise
//!   ISO-8859-1 (every byte one character); lines end in LF or CRLF;
//! - header comments: `# Track frame offsets:` then one offset line per track, `# Disc length: N`
//!   (anything may follow the number), `# Revision: N`;
//! - body `KEYWORD=data`: lines of the same keyword are concatenated (continuations) *before*
//!   anything else, then the `\n`, `\t`, `\\` escapes are decoded, then the value is trimmed;
//! - `DISCID` is a comma-separated list; `DTITLE` is split on the first `" / "` (none: artist =
//!   title); `TTITLEn`, `EXTD`, `EXTTn`, `DYEAR` (more than 4 digits: the last 4 are kept, as
//!   Ayende's importer did), `DGENRE`;
//! - dirty data (bad offsets, missing tracks, a disc id whose last byte disagrees with the track
//!   count...) is a [`Warning`], never an error.

use std::collections::BTreeMap;
use std::fmt;

/// How an entry's bytes were decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum Encoding {
    /// Every byte below 0x80.
    #[default]
    Ascii,
    /// Valid UTF-8 with at least one multi-byte character.
    Utf8,
    /// Not valid UTF-8: read as ISO-8859-1 (one character per byte).
    Latin1,
}

impl Encoding {
    /// The byte stored in an album's encoding.
    pub fn code(self) -> u8 {
        match self {
            Encoding::Ascii => 0,
            Encoding::Utf8 => 1,
            Encoding::Latin1 => 2,
        }
    }
    /// The inverse of [`code`](Self::code).
    pub fn from_code(c: u8) -> Option<Encoding> {
        match c {
            0 => Some(Encoding::Ascii),
            1 => Some(Encoding::Utf8),
            2 => Some(Encoding::Latin1),
            _ => None,
        }
    }
}

/// One track of a disc.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Track {
    /// `TTITLEn` (continuations merged, escapes decoded, trimmed). May be "Artist / Title".
    pub title: String,
    /// Length in seconds from the frame offsets and the disc length; `None` when they do not give
    /// one (a bad or missing offset, a bad disc length).
    pub seconds: Option<u32>,
    /// `EXTTn`.
    pub ext: String,
}

/// One FreeDB entry: a disc.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Album {
    /// The archive directory it came from (`rock`, `misc`, ...).
    pub category: String,
    /// `DISCID`, split on commas, lower-cased (linked entries have several).
    pub discids: Vec<String>,
    /// The artist (the part of `DTITLE` before the first `" / "`, or all of it).
    pub artist: String,
    /// The title (after the first `" / "`, or all of `DTITLE`).
    pub title: String,
    /// `DYEAR`, when it is a number.
    pub year: Option<u16>,
    /// `DGENRE` (free text).
    pub genre: String,
    /// `# Disc length:` in seconds.
    pub disc_seconds: Option<u32>,
    /// `# Revision:` (missing = 0).
    pub revision: u32,
    /// The tracks, `TTITLE0..n-1`.
    pub tracks: Vec<Track>,
    /// `EXTD`.
    pub extd: String,
    /// How the entry's bytes were decoded.
    pub encoding: Encoding,
}

/// Dirty data found in an entry: counted, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Warning {
    /// A track frame offset that is not a number, or not greater than the one before it.
    BadOffset,
    /// The number of offset lines differs from the number of tracks.
    OffsetCount,
    /// A `TTITLEn` missing for a track the offsets or a higher `TTITLE` say exists.
    MissingTrack,
    /// The first disc id's last byte (the track count) differs from the number of tracks.
    DiscIdTrackCount,
    /// `# Disc length:` missing or not a number, or shorter than the last offset.
    BadDiscLength,
    /// `DYEAR` not a number, or more than 4 digits (the last 4 are kept).
    BadYear,
    /// `DTITLE` without `" / "` (artist = title).
    NoSeparator,
    /// A disc id that is not 8 hex digits.
    BadDiscId,
    /// A body line that is not `KEYWORD=data`, or an unknown keyword.
    BadLine,
    /// `DTITLE` empty or missing.
    NoTitle,
}

impl Warning {
    /// Every kind, in summary order.
    pub const ALL: [Warning; 10] = [
        Warning::BadOffset,
        Warning::OffsetCount,
        Warning::MissingTrack,
        Warning::DiscIdTrackCount,
        Warning::BadDiscLength,
        Warning::BadYear,
        Warning::NoSeparator,
        Warning::BadDiscId,
        Warning::BadLine,
        Warning::NoTitle,
    ];
    /// A short snake_case name (summary and JSON).
    pub fn name(self) -> &'static str {
        match self {
            Warning::BadOffset => "bad_offset",
            Warning::OffsetCount => "offset_count",
            Warning::MissingTrack => "missing_track",
            Warning::DiscIdTrackCount => "discid_track_count",
            Warning::BadDiscLength => "bad_disc_length",
            Warning::BadYear => "bad_year",
            Warning::NoSeparator => "no_separator",
            Warning::BadDiscId => "bad_discid",
            Warning::BadLine => "bad_line",
            Warning::NoTitle => "no_title",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an entry was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The file does not start with `# xmcd`.
    #[error("not an xmcd entry (it does not start with \"# xmcd\")")]
    NotXmcd,
    /// No `DISCID=` line, or an empty one.
    #[error("no DISCID")]
    NoDiscId,
}

/// A parsed entry and its warnings (one per occurrence, in the order found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The disc.
    pub album: Album,
    /// Dirty data found.
    pub warnings: Vec<Warning>,
}

/// Decode an entry's bytes: ASCII, UTF-8, or ISO-8859-1 when it is not valid UTF-8.
pub fn decode(bytes: &[u8]) -> (String, Encoding) {
    if bytes.is_ascii() {
        // Cannot fail: ASCII is UTF-8.
        return (String::from_utf8_lossy(bytes).into_owned(), Encoding::Ascii);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), Encoding::Utf8),
        Err(_) => (bytes.iter().map(|&b| b as char).collect(), Encoding::Latin1),
    }
}

/// Decode the `\n`, `\t` and `\\` escapes; any other backslash stays as it is.
pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek() {
                Some('n') => {
                    out.push('\n');
                    it.next();
                }
                Some('t') => {
                    out.push('\t');
                    it.next();
                }
                Some('\\') => {
                    out.push('\\');
                    it.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Split "Artist / Title" on the first `" / "`; without one, artist = title. Both trimmed.
pub fn split_title(s: &str) -> (String, String, bool) {
    match s.find(" / ") {
        Some(i) => (s[..i].trim().to_string(), s[i + 3..].trim().to_string(), true),
        None => (s.trim().to_string(), s.trim().to_string(), false),
    }
}

fn is_hex8(s: &str) -> bool {
    s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parse one entry (`bytes`, the whole file) from archive directory `category`.
pub fn parse(bytes: &[u8], category: &str) -> Result<Parsed, ParseError> {
    if !bytes.starts_with(b"# xmcd") {
        return Err(ParseError::NotXmcd);
    }
    let (text, encoding) = decode(bytes);
    let mut warnings = Vec::new();
    let mut offsets: Vec<Option<u32>> = Vec::new();
    let mut offset_lines = 0usize;
    let mut disc_seconds = None;
    let mut disc_length_seen = false;
    let mut revision = 0;
    // Keyword → concatenated raw (still escaped) value; TTITLE/EXTT by index.
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut ttitle: BTreeMap<usize, String> = BTreeMap::new();
    let mut extt: BTreeMap<usize, String> = BTreeMap::new();
    let mut in_offsets = false;
    for raw_line in text.split('\n') {
        let line = raw_line.strip_suffix('\r').unwrap_or(raw_line);
        if let Some(rest) = line.strip_prefix('#') {
            let body = rest.trim();
            if in_offsets {
                if body.is_empty() {
                    in_offsets = false;
                    continue;
                }
                if !body.contains(':') {
                    offset_lines += 1;
                    let v = body.parse::<u32>().ok();
                    let ok = match (v, offsets.iter().rev().flatten().next()) {
                        (Some(v), Some(&prev)) => v > prev,
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                    if !ok {
                        warnings.push(Warning::BadOffset);
                    }
                    offsets.push(if ok { v } else { None });
                    continue;
                }
                in_offsets = false;
            }
            let lower = body.to_ascii_lowercase();
            if lower.starts_with("track frame offsets") {
                in_offsets = true;
            } else if let Some(v) = lower.strip_prefix("disc length:") {
                disc_length_seen = true;
                let digits: String = v.trim().chars().take_while(|c| c.is_ascii_digit()).collect();
                match digits.parse::<u32>() {
                    Ok(n) => disc_seconds = Some(n),
                    Err(_) => warnings.push(Warning::BadDiscLength),
                }
            } else if let Some(v) = lower.strip_prefix("revision:") {
                revision = v.trim().parse().unwrap_or(0);
            }
            continue;
        }
        in_offsets = false;
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            warnings.push(Warning::BadLine);
            continue;
        };
        let key = key.trim();
        let indexed = |prefix: &str| key.strip_prefix(prefix).and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = indexed("TTITLE") {
            ttitle.entry(n).or_default().push_str(value);
        } else if let Some(n) = indexed("EXTT") {
            extt.entry(n).or_default().push_str(value);
        } else if matches!(key, "DISCID" | "DTITLE" | "DYEAR" | "DGENRE" | "EXTD" | "PLAYORDER") {
            fields.entry(key).or_default().push_str(value);
        } else {
            warnings.push(Warning::BadLine);
        }
    }
    let field = |k: &str| fields.get(k).map(|v| unescape(v).trim().to_string()).unwrap_or_default();

    let discids: Vec<String> =
        field("DISCID").split(',').map(|s| s.trim().to_ascii_lowercase()).filter(|s| !s.is_empty()).collect();
    if discids.is_empty() {
        return Err(ParseError::NoDiscId);
    }
    if discids.iter().any(|d| !is_hex8(d)) {
        warnings.push(Warning::BadDiscId);
    }
    let dtitle = field("DTITLE");
    if dtitle.is_empty() {
        warnings.push(Warning::NoTitle);
    }
    let (artist, title, had_sep) = split_title(&dtitle);
    if !had_sep && !dtitle.is_empty() {
        warnings.push(Warning::NoSeparator);
    }
    let year_text = field("DYEAR");
    let year = if year_text.is_empty() {
        None
    } else if year_text.bytes().all(|b| b.is_ascii_digit()) {
        if year_text.len() > 4 {
            warnings.push(Warning::BadYear);
        }
        year_text[year_text.len().saturating_sub(4)..].parse::<u16>().ok()
    } else {
        warnings.push(Warning::BadYear);
        None
    };
    if !disc_length_seen {
        warnings.push(Warning::BadDiscLength);
    }

    // Tracks: as many as the offsets say, or as the highest TTITLE index says, whichever is more.
    let max_title = ttitle.keys().next_back().map(|n| n + 1).unwrap_or(0);
    let n = offset_lines.max(max_title);
    if (0..n).any(|i| !ttitle.contains_key(&i)) {
        warnings.push(Warning::MissingTrack);
    }
    if offset_lines != n {
        warnings.push(Warning::OffsetCount);
    }
    if let Some(first) = discids.first().filter(|d| is_hex8(d)) {
        let count = u32::from_str_radix(&first[6..8], 16).unwrap_or(0) as usize;
        if count != n {
            warnings.push(Warning::DiscIdTrackCount);
        }
    }
    let end_frames = disc_seconds.map(|s| s.saturating_mul(75));
    if let (Some(end), Some(Some(last))) = (end_frames, offsets.last()) {
        if end <= *last {
            warnings.push(Warning::BadDiscLength);
        }
    }
    let mut tracks = Vec::with_capacity(n);
    for i in 0..n {
        let start = offsets.get(i).copied().flatten();
        let next = if i + 1 < offsets.len() {
            offsets[i + 1]
        } else if i + 1 == offsets.len() {
            end_frames
        } else {
            None
        };
        let seconds = match (start, next) {
            (Some(a), Some(b)) if b > a => Some((b - a) / 75),
            _ => None,
        };
        tracks.push(Track {
            title: ttitle.get(&i).map(|v| unescape(v).trim().to_string()).unwrap_or_default(),
            seconds,
            ext: extt.get(&i).map(|v| unescape(v).trim().to_string()).unwrap_or_default(),
        });
    }
    let album = Album {
        category: category.to_string(),
        discids,
        artist,
        title,
        year,
        genre: field("DGENRE"),
        disc_seconds,
        revision,
        tracks,
        extd: field("EXTD"),
        encoding,
    };
    Ok(Parsed { album, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_and_unknown_ones_stay() {
        assert_eq!(unescape(r"a\nb\tc\\d\xe"), "a\nb\tc\\d\\xe");
        assert_eq!(unescape(r"end\"), "end\\");
    }

    #[test]
    fn split_on_the_first_spaced_slash_only() {
        assert_eq!(split_title("AC/DC / Back in Black"), ("AC/DC".into(), "Back in Black".into(), true));
        assert_eq!(split_title("A / B / C"), ("A".into(), "B / C".into(), true));
        assert_eq!(split_title("Just One"), ("Just One".into(), "Just One".into(), false));
    }

    #[test]
    fn encoding_is_chosen_per_entry() {
        assert_eq!(decode(b"abc").1, Encoding::Ascii);
        assert_eq!(decode("Björk".as_bytes()), ("Björk".to_string(), Encoding::Utf8));
        assert_eq!(decode(b"Bj\xf6rk"), ("Björk".to_string(), Encoding::Latin1));
    }
}
