//! `freedb search` and `freedb stats`.
//!
//! A search is exact on a disc id and a case-insensitive prefix (Unicode lower-case) on artist,
//! title or track title: the index entries whose key starts with the lower-cased prefix, in key
//! order (and, within a key, album id order), each album once, at most `limit`. With `words`,
//! every word of the query is a prefix of some word of the field (`"jam"` finds "Pearl Jam"):
//! the albums in all the words' sets, in album id order.

use crate::db::{index_key, words, Db, Index};
use crate::parse::Album;
use anyhow::{bail, Result};
use jackdaw::{ReadTxn, TypedTree};
use std::collections::{BTreeSet, HashSet};

/// What to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// An exact disc id.
    DiscId(String),
    /// An artist prefix.
    Artist(String),
    /// A title prefix.
    Title(String),
    /// A track title prefix.
    Track(String),
}

impl Query {
    fn index(&self, word_index: bool) -> Result<Index> {
        Ok(match (self, word_index) {
            (Query::DiscId(_), _) => Index::Diskids,
            (Query::Artist(_), false) => Index::Artists,
            (Query::Title(_), false) => Index::Titles,
            (Query::Track(_), false) => Index::Tracks,
            (Query::Artist(_), true) => Index::ArtistWords,
            (Query::Title(_), true) => Index::TitleWords,
            (Query::Track(_), true) => bail!("--words searches artists and titles (there is no track word index)"),
        })
    }
    /// The text searched for (the disc id, or the prefix).
    pub fn text(&self) -> &str {
        match self {
            Query::DiscId(s) | Query::Artist(s) | Query::Title(s) | Query::Track(s) => s,
        }
    }
}

fn open_index(db: &Db, r: &ReadTxn, i: Index) -> Result<TypedTree<String, u64>> {
    match db.index(r, i)? {
        Some(t) => Ok(t),
        None => bail!(
            "the database has no {} index: import with {} or run `freedb reindex DB --index {}`",
            i.tree_name(),
            match i {
                Index::Tracks => "--track-index",
                Index::ArtistWords | Index::TitleWords => "--words",
                _ => "the default options",
            },
            i.tree_name()
        ),
    }
}

/// The album ids matching `q` (see the module documentation), at most `limit`.
pub fn search_ids(db: &Db, r: &ReadTxn, q: &Query, words_mode: bool, limit: usize) -> Result<Vec<u64>> {
    let t = open_index(db, r, q.index(words_mode && !matches!(q, Query::DiscId(_)))?)?;
    let mut out = Vec::new();
    if let Query::DiscId(id) = q {
        let Some(k) = index_key(id) else { return Ok(out) };
        for v in t.multi_get(r, &k)?.take(limit) {
            out.push(v?);
        }
        return Ok(out);
    }
    if words_mode {
        let ws: Vec<String> = words(q.text()).collect();
        let mut acc: Option<BTreeSet<u64>> = None;
        for w in ws {
            let mut set = BTreeSet::new();
            for e in t.prefix_str(r, &w)?.into_inner() {
                set.insert(<u64 as jackdaw::Value>::decode_value(&e?.1)?);
            }
            acc = Some(match acc {
                None => set,
                Some(a) => a.intersection(&set).copied().collect(),
            });
        }
        return Ok(acc.unwrap_or_default().into_iter().take(limit).collect());
    }
    let Some(p) = index_key(q.text()) else { return Ok(out) };
    let mut seen = HashSet::new();
    // The raw entries under the typed range: keys are not decoded (no String per entry).
    for e in t.prefix_str(r, &p)?.into_inner() {
        let id = <u64 as jackdaw::Value>::decode_value(&e?.1)?;
        if seen.insert(id) {
            out.push(id);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// The albums matching `q`, with their ids.
pub fn search(db: &Db, q: &Query, words_mode: bool, limit: usize) -> Result<Vec<(u64, Album)>> {
    let r = db.env.read()?;
    let ids = search_ids(db, &r, q, words_mode, limit)?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        match db.albums.get(&r, &id)? {
            Some(a) => out.push((id, a)),
            None => bail!("index entry for album {id}, which is not in `albums`: run `freedb reindex`"),
        }
    }
    Ok(out)
}

/// One album as a line: id, disc ids, category, artist / title, year, genre.
pub fn album_line(id: u64, a: &Album) -> String {
    format!(
        "{id:>9}  {:<26} {:<10} {} / {}{}{}",
        a.discids.join(","),
        a.category,
        a.artist,
        a.title,
        a.year.map(|y| format!(" ({y})")).unwrap_or_default(),
        if a.genre.is_empty() { String::new() } else { format!(" [{}]", a.genre) }
    )
}

/// `freedb stats`: album count, entries per index, size, the import mark.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DbStats {
    /// Albums.
    pub albums: u64,
    /// Entries per index tree present.
    pub indexes: std::collections::BTreeMap<String, u64>,
    /// Database files' bytes.
    pub db_bytes: u64,
    /// The import's mark (how far it got, warnings).
    pub import: Option<crate::db::ImportMark>,
}

/// Gather [`DbStats`].
pub fn stats(db: &Db) -> Result<DbStats> {
    let r = db.env.read()?;
    let mut indexes = std::collections::BTreeMap::new();
    for i in Index::ALL {
        if let Some(t) = db.index(&r, i)? {
            indexes.insert(i.tree_name().to_string(), t.len(&r)?);
        }
    }
    Ok(DbStats { albums: db.albums.len(&r)?, indexes, db_bytes: db.size_bytes(), import: db.mark(&r)? })
}
