//! The schema on Jackdaw (Voron's, plus the track and word indexes) and the resume mark.
//!
//! | tree | kind | key | value |
//! |---|---|---|---|
//! | `albums` | plain | album id, `u64` (big-endian: ids in import order) | the [`Album`] record ([`crate::codec`]) |
//! | `ix_diskids` | multi-value | disc id, lower-case hex | album ids |
//! | `ix_artists` | multi-value | artist, Unicode lower-case, ≤ 255 bytes | album ids |
//! | `ix_titles` | multi-value | title, the same | album ids |
//! | `ix_tracks` (`--track-index`) | multi-value | each track title, the same | album ids |
//! | `ix_artist_words`, `ix_title_words` (`--words`) | multi-value | each word of the artist / title | album ids |
//! | `meta` | plain | `"import"` | the [`ImportMark`] as JSON |
//!
//! Index keys are strings in the typed layer's order-preserving encoding, so a prefix search is
//! `TypedTree::prefix_str`. The album ids of a key are kept in numeric order.

use crate::codec::EncodedAlbum;
use crate::parse::Album;
use anyhow::{bail, Context, Result};
use jackdaw::{Env, Options, ReadTxn, TypedTree, WriteBatch, WriteTxn};
use std::collections::BTreeMap;
use std::path::Path;

/// The albums tree's name.
pub const ALBUMS: &str = "albums";
/// The meta tree's name.
pub const META: &str = "meta";
/// The resume mark's key in `meta`.
pub const MARK_KEY: &str = "import";
/// Index keys are cut to this many bytes (at a character boundary), in every engine.
pub const MAX_INDEX_KEY: usize = 255;

/// A secondary index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Index {
    /// Disc id → album.
    Diskids,
    /// Artist → album.
    Artists,
    /// Title → album.
    Titles,
    /// Track title → album.
    Tracks,
    /// Each word of the artist → album.
    ArtistWords,
    /// Each word of the title → album.
    TitleWords,
}

impl Index {
    /// Every index.
    pub const ALL: [Index; 6] =
        [Index::Diskids, Index::Artists, Index::Titles, Index::Tracks, Index::ArtistWords, Index::TitleWords];

    /// The tree's name.
    pub fn tree_name(self) -> &'static str {
        match self {
            Index::Diskids => "ix_diskids",
            Index::Artists => "ix_artists",
            Index::Titles => "ix_titles",
            Index::Tracks => "ix_tracks",
            Index::ArtistWords => "ix_artist_words",
            Index::TitleWords => "ix_title_words",
        }
    }

    /// The index named `name` (`ix_artists` or `artists`).
    pub fn from_name(name: &str) -> Option<Index> {
        let n = name.strip_prefix("ix_").unwrap_or(name);
        Index::ALL.into_iter().find(|i| i.tree_name().strip_prefix("ix_") == Some(n))
    }

    /// The indexes an import with these options builds.
    pub fn set(track_index: bool, words: bool) -> Vec<Index> {
        let mut v = vec![Index::Diskids, Index::Artists, Index::Titles];
        if track_index {
            v.push(Index::Tracks);
        }
        if words {
            v.extend([Index::ArtistWords, Index::TitleWords]);
        }
        v
    }

    /// The keys of `album` in this index (deduplicated, in order), appended to `out`.
    pub fn keys(self, a: &Album, out: &mut Vec<String>) {
        let start = out.len();
        match self {
            Index::Diskids => out.extend(a.discids.iter().filter_map(|d| index_key(d))),
            Index::Artists => out.extend(index_key(&a.artist)),
            Index::Titles => out.extend(index_key(&a.title)),
            Index::Tracks => out.extend(a.tracks.iter().filter_map(|t| index_key(&t.title))),
            Index::ArtistWords => out.extend(words(&a.artist)),
            Index::TitleWords => out.extend(words(&a.title)),
        }
        let mut seen = std::collections::HashSet::new();
        let mut i = start;
        while i < out.len() {
            if seen.insert(out[i].clone()) {
                i += 1;
            } else {
                out.remove(i);
            }
        }
    }
}

/// Cut `s` to at most `max` bytes at a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The index key of a text: Unicode lower-case, cut to [`MAX_INDEX_KEY`] bytes; `None` if empty.
pub fn index_key(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    Some(truncate(&t.to_lowercase(), MAX_INDEX_KEY).to_string())
}

/// The words of a text (split on anything not alphanumeric), lower-cased and cut like keys.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).filter_map(index_key)
}

/// An album ready to write: its record and its index keys (position in the index list, key),
/// made by the import's parse stage so that the writer only copies bytes.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The encoded album.
    pub record: EncodedAlbum,
    /// (position in the index list, key).
    pub keys: Vec<(usize, String)>,
}

impl Prepared {
    /// Encode `a` and compute its keys in `indexes`.
    pub fn new(a: &Album, indexes: &[Index]) -> Prepared {
        let mut keys = Vec::new();
        let mut tmp = Vec::new();
        for (pos, i) in indexes.iter().enumerate() {
            tmp.clear();
            i.keys(a, &mut tmp);
            keys.extend(tmp.drain(..).map(|k| (pos, k)));
        }
        Prepared { record: EncodedAlbum(crate::codec::encode(a)), keys }
    }
}

/// How far an import got: written in the same batch as the albums it counts, so after a crash
/// it says exactly which entries are in the database.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImportMark {
    /// The source's file name (a resume from another file is refused).
    pub source: String,
    /// Entries of the source consumed (written or skipped): the next one to read.
    pub position: u64,
    /// The next album id.
    pub next_id: u64,
    /// Albums written.
    pub albums: u64,
    /// Entries skipped (not xmcd, no disc id, too large).
    pub skipped: u64,
    /// Warnings by kind.
    pub warnings: BTreeMap<String, u64>,
    /// The indexes this import maintains.
    pub indexes: Vec<Index>,
    /// The whole source was read.
    pub done: bool,
}

/// The database: the environment and its typed trees.
pub struct Db {
    /// The environment.
    pub env: Env,
    /// `albums`.
    pub albums: TypedTree<u64, Album>,
    /// `meta`.
    pub meta: TypedTree<String, Vec<u8>>,
}

impl Db {
    /// Open (or create) the database in `dir`, with `albums` and `meta`.
    pub fn open(dir: &Path) -> Result<Db> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the database directory {}", dir.display()))?;
        let env = Env::open(dir, Options::default())
            .with_context(|| format!("cannot open the database {}", dir.display()))?;
        let mut tx = env.write()?;
        let albums = tx.create_typed(ALBUMS)?;
        let meta = tx.create_typed(META)?;
        tx.commit()?;
        Ok(Db { env, albums, meta })
    }

    /// Open an existing database (refusing a directory that holds none).
    pub fn open_existing(dir: &Path) -> Result<Db> {
        if !dir.is_dir() {
            bail!("{} is not a database directory (run `freedb import SOURCE {}` first)", dir.display(), dir.display());
        }
        let env = Env::open(dir, Options::default())
            .with_context(|| format!("cannot open the database {}", dir.display()))?;
        let r = env.read()?;
        let (Some(albums), Some(meta)) = (TypedTree::open(&r, ALBUMS)?, TypedTree::open(&r, META)?) else {
            bail!("{} holds no FreeDB import (no `albums` tree)", dir.display());
        };
        drop(r);
        Ok(Db { env, albums, meta })
    }

    /// Create (or open) the index trees.
    pub fn create_indexes(&self, which: &[Index]) -> Result<Vec<(Index, TypedTree<String, u64>)>> {
        let mut tx = self.env.write()?;
        let v = which.iter().map(|&i| Ok((i, tx.create_typed_multi(i.tree_name())?))).collect::<Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(v)
    }

    /// An index tree, if it exists.
    pub fn index(&self, r: &ReadTxn, i: Index) -> Result<Option<TypedTree<String, u64>>> {
        Ok(TypedTree::open(r, i.tree_name())?)
    }

    /// The resume mark, if an import was started.
    pub fn mark<X: jackdaw::ReadAccess>(&self, r: X) -> Result<Option<ImportMark>> {
        match self.meta.get(r, MARK_KEY)? {
            None => Ok(None),
            Some(b) => Ok(Some(serde_json::from_slice(&b).context("the import mark in `meta` does not decode")?)),
        }
    }

    /// The index entries of `albums`: (index position, key, album id), sorted.
    pub fn entries(albums: &[(u64, Prepared)]) -> Vec<(usize, &str, u64)> {
        let mut e: Vec<(usize, &str, u64)> =
            albums.iter().flat_map(|(id, p)| p.keys.iter().map(move |(i, k)| (*i, k.as_str(), *id))).collect();
        e.sort_unstable();
        e
    }

    /// Add `albums` (id, prepared album) and their index entries to `batch`: the albums in the
    /// given order, then the index entries sorted by (index, key, id).
    pub fn batch_albums(
        &self,
        batch: &mut WriteBatch,
        ix: &[(Index, TypedTree<String, u64>)],
        albums: &[(u64, Prepared)],
    ) {
        for (id, p) in albums {
            batch.put(&self.albums, id, &p.record);
        }
        for (i, k, id) in Self::entries(albums) {
            batch.multi_put(&ix[i].1, k, &id);
        }
    }

    /// As [`batch_albums`](Self::batch_albums), in a write transaction.
    pub fn txn_albums(
        &self,
        tx: &mut WriteTxn,
        ix: &[(Index, TypedTree<String, u64>)],
        albums: &[(u64, Prepared)],
    ) -> Result<()> {
        for (id, p) in albums {
            self.albums.put(tx, id, &p.record)?;
        }
        for (i, k, id) in Self::entries(albums) {
            ix[i].1.multi_put(tx, k, &id)?;
        }
        Ok(())
    }

    /// Bytes of the database's files on disk (data file and journal).
    pub fn size_bytes(&self) -> u64 {
        dir_bytes(self.env.path())
    }
}

/// Sum of the sizes of the files in a directory tree.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unicode_lower_case_and_cut_at_a_char_boundary() {
        assert_eq!(index_key("  ÉMILIE Simon "), Some("émilie simon".into()));
        assert_eq!(index_key(""), None);
        let long = "é".repeat(200); // 400 bytes
        let k = index_key(&long).unwrap();
        assert_eq!(k.len(), 254);
        assert!(k.chars().all(|c| c == 'é'));
        assert_eq!(words("Pearl Jam - Ten!").collect::<Vec<_>>(), ["pearl", "jam", "ten"]);
        assert_eq!(Index::from_name("ix_tracks"), Some(Index::Tracks));
        assert_eq!(Index::from_name("artists"), Some(Index::Artists));
        assert_eq!(Index::from_name("nope"), None);
    }

    #[test]
    fn album_keys_are_deduplicated() {
        let mut a = Album { discids: vec!["ABCDEF01".into(), "abcdef01".into()], ..Default::default() };
        a.tracks = vec![
            crate::parse::Track { title: "Intro".into(), ..Default::default() },
            crate::parse::Track { title: "INTRO".into(), ..Default::default() },
        ];
        let mut out = vec!["keep".to_string()];
        Index::Diskids.keys(&a, &mut out);
        Index::Tracks.keys(&a, &mut out);
        assert_eq!(out, ["keep", "abcdef01", "intro"]);
    }
}
