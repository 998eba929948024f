//! `freedb bench` (the bench workload `freedb-import`): the same albums, parsed once into
//! memory, written into Jackdaw, SQLite and LMDB in the same batches with a durable commit per
//! batch; then each query kind `--queries` times on keys drawn from the data, the same queries in
//! every engine. Reports per engine: albums/s of the write stage, database size, device bytes per
//! album, query p50/p99 per kind; beside them the parse-only rate (read + parse, nothing written:
//! the post's `/dev/null` destination) and the wall time of the whole `freedb import` pipeline on
//! Jackdaw from the archive.
//!
//! The layouts:
//! - Jackdaw: the import's schema (`albums` `TypedTree<u64, _>`, multi-value `ix_*`
//!   `TypedTree<String, u64>`), one `WriteBatch` per batch through `Env::write_batch`
//!   (`Durability::Sync`: durable when it returns); `jackdaw-txn`: one write transaction per
//!   batch instead.
//! - SQLite (bundled, WAL, `synchronous=FULL`: durable at commit): `albums(id INTEGER PRIMARY
//!   KEY, data BLOB)` and per index `ix_*(key BLOB, album INTEGER, PRIMARY KEY(key, album))
//!   WITHOUT ROWID`, one `BEGIN ... COMMIT` per batch through prepared statements.
//! - LMDB (heed, default flags: `fdatasync` at commit): `albums` with 8-byte big-endian keys and
//!   per index a `DUP_SORT | DUP_FIXED` database (key → 8-byte big-endian album ids), one write
//!   transaction per batch.
//!
//! Every engine stores the same record bytes ([`crate::codec`]) and the same index keys
//! (lower-cased, cut to 255 bytes), computed once before the timed part; each batch writes its
//! albums in id order, then its index entries sorted by (index, key, album), as the import does.
#![allow(unsafe_code)]

use crate::codec::encode;
use crate::db::{Index, MAX_INDEX_KEY};
use crate::device::Window;
use crate::input::read_entries;
use crate::parse::{parse, Album};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `freedb bench` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Albums to generate (ignored with --source).
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=crate::MAX_ALBUMS))]
    pub albums: u64,
    /// Generator seed (also draws the queries).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Use this dump instead of generating one.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Directory for the archive and the databases (on the disk to measure; removed afterwards
    /// unless --keep).
    #[arg(long, default_value = "freedb-bench-tmp")]
    pub dir: PathBuf,
    /// Albums per batch (one durable commit each).
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=crate::MAX_BATCH))]
    pub batch: usize,
    /// Queries per kind.
    #[arg(long, default_value_t = 10_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    pub queries: usize,
    /// Albums a query returns at most.
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub limit: usize,
    /// Engines, comma-separated: jackdaw (WriteBatch), jackdaw-txn (write transactions), sqlite,
    /// lmdb.
    #[arg(long, value_delimiter = ',', default_value = "jackdaw,sqlite,lmdb")]
    pub engines: Vec<String>,
    /// Also build and query the track index.
    #[arg(long)]
    pub track_index: bool,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the databases and the archive.
    #[arg(long)]
    pub keep: bool,
    /// Query the databases an earlier `--keep` run left in `--dir` instead of importing anew
    /// (the same `--source` or `--albums`, `--seed`, `--track-index` and `--batch`, checked: the
    /// queries are drawn from the data): no write stage, no pipeline; the queries run twice on
    /// the reopened database. Implies `--keep`.
    #[arg(long)]
    pub reuse: bool,
    /// Rounds (every engine once a round, the order rotated); figures are medians.
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub rounds: usize,
    /// LMDB's map size, GiB (address space reserved, not disk; lower it to run under valgrind).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub lmdb_map_gib: u64,
}

/// One album ready to write: id, record, index keys (index position in the set, key).
struct Prepared {
    id: u64,
    record: Vec<u8>,
    keys: Vec<(usize, String)>,
}

/// A query kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
enum Kind {
    DiscId,
    Artist,
    Title,
    Track,
}

impl Kind {
    fn index(self) -> Index {
        match self {
            Kind::DiscId => Index::Diskids,
            Kind::Artist => Index::Artists,
            Kind::Title => Index::Titles,
            Kind::Track => Index::Tracks,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::DiscId => "discid (exact)",
            Kind::Artist => "artist prefix",
            Kind::Title => "title prefix",
            Kind::Track => "track prefix",
        }
    }
}

/// An engine under test.
trait Store {
    /// Write these albums and these index entries (index position, key, album id; sorted);
    /// durable on return.
    fn write(&mut self, batch: &[Prepared], entries: &[(usize, String, u64)]) -> Result<()>;
    /// Run one query: album ids (distinct, first `limit` in key order) into `ids`, then read
    /// and decode each album record, as `freedb search` does before it prints an album (LMDB
    /// hands out a pointer into its map, so a query that only took a record's length would not
    /// read it there at all); returns the record bytes read.
    fn query(&mut self, kind: Kind, key: &str, limit: usize, ids: &mut Vec<u64>) -> Result<usize>;
    /// Begin and end a read transaction (the fixed cost inside every query).
    fn empty_read(&mut self) -> Result<()>;
}

/// Add `id` to `ids` unless it is there (a prefix finds an album once per matching key); true
/// once `ids` holds `limit` albums.
fn push_distinct(ids: &mut Vec<u64>, id: u64, limit: usize) -> bool {
    if !ids.contains(&id) {
        ids.push(id);
    }
    ids.len() >= limit
}

/// Decode an album record (the work every engine's query does per album); its length.
fn decoded_len(record: &[u8]) -> Result<usize> {
    std::hint::black_box(crate::codec::decode(record)?);
    Ok(record.len())
}

/// The smallest byte string greater than every string starting with `p` (p has no 0xff: UTF-8).
fn successor(p: &[u8]) -> Vec<u8> {
    let mut s = p.to_vec();
    while let Some(&last) = s.last() {
        if last == 0xff {
            s.pop();
        } else {
            *s.last_mut().expect("non-empty") += 1;
            break;
        }
    }
    s
}

// ---------------------------------------------------------------- Jackdaw

struct Jackdaw {
    /// Plain write transactions instead of `WriteBatch`es (engine `jackdaw-txn`).
    txn: bool,
    env: jackdaw::Env,
    albums: jackdaw::TypedTree<u64, Vec<u8>>,
    ix: Vec<(Index, jackdaw::TypedTree<String, u64>)>,
}

impl Jackdaw {
    fn open(dir: &Path, set: &[Index], txn: bool) -> Result<Jackdaw> {
        let env = jackdaw::Env::open(dir, jackdaw::Options::default())?;
        let mut tx = env.write()?;
        let albums = tx.create_typed("albums")?;
        let ix = set.iter().map(|&i| Ok((i, tx.create_typed_multi(i.tree_name())?))).collect::<Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(Jackdaw { txn, env, albums, ix })
    }
    fn tree(&self, i: Index) -> Result<&jackdaw::TypedTree<String, u64>> {
        self.ix.iter().find(|(x, _)| *x == i).map(|(_, t)| t).context("index not built")
    }
}

impl Store for Jackdaw {
    fn write(&mut self, batch: &[Prepared], entries: &[(usize, String, u64)]) -> Result<()> {
        if self.txn {
            let mut tx = self.env.write()?;
            for p in batch {
                self.albums.put(&mut tx, &p.id, &p.record[..])?;
            }
            for (i, k, id) in entries {
                self.ix[*i].1.multi_put(&mut tx, k.as_str(), id)?;
            }
            tx.commit()?;
            return Ok(());
        }
        let mut b = jackdaw::WriteBatch::new();
        for p in batch {
            b.put(&self.albums, &p.id, &p.record[..]);
        }
        for (i, k, id) in entries {
            b.multi_put(&self.ix[*i].1, k.as_str(), id);
        }
        self.env.write_batch(b)?;
        Ok(())
    }
    fn query(&mut self, kind: Kind, key: &str, limit: usize, ids: &mut Vec<u64>) -> Result<usize> {
        let r = self.env.read()?;
        let t = self.tree(kind.index())?;
        ids.clear();
        if kind == Kind::DiscId {
            for v in t.multi_get(&r, key)?.take(limit) {
                ids.push(v?);
            }
        } else {
            // The raw entries under the typed range: the key is not decoded (no String per
            // entry), the value is the 8-byte id.
            for e in t.prefix_str(&r, key)?.into_inner() {
                let id = <u64 as jackdaw::Value>::decode_value(&e?.1)?;
                if push_distinct(ids, id, limit) {
                    break;
                }
            }
        }
        let mut bytes = 0;
        for id in ids.iter() {
            if let Some(v) = r.get(self.albums.tree(), id.to_be_bytes())? {
                bytes += decoded_len(&v)?;
            }
        }
        Ok(bytes)
    }
    fn empty_read(&mut self) -> Result<()> {
        drop(self.env.read()?);
        Ok(())
    }
}

// ---------------------------------------------------------------- SQLite

struct Sqlite {
    conn: rusqlite::Connection,
    names: Vec<&'static str>,
}

impl Sqlite {
    fn open(dir: &Path, set: &[Index]) -> Result<Sqlite> {
        std::fs::create_dir_all(dir)?;
        let conn = rusqlite::Connection::open(dir.join("freedb.sqlite"))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS albums(id INTEGER PRIMARY KEY, data BLOB NOT NULL);")?;
        let names: Vec<&'static str> = set.iter().map(|i| i.tree_name()).collect();
        for n in &names {
            conn.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {n}(key BLOB NOT NULL, album INTEGER NOT NULL, PRIMARY KEY(key, album)) WITHOUT ROWID;"
            ))?;
        }
        Ok(Sqlite { conn, names })
    }
}

impl Store for Sqlite {
    fn write(&mut self, batch: &[Prepared], entries: &[(usize, String, u64)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut ins = tx.prepare_cached("INSERT INTO albums(id, data) VALUES (?1, ?2)")?;
            let mut ix: Vec<_> = self
                .names
                .iter()
                .map(|n| tx.prepare_cached(&format!("INSERT OR IGNORE INTO {n}(key, album) VALUES (?1, ?2)")))
                .collect::<rusqlite::Result<_>>()?;
            for p in batch {
                ins.execute((p.id as i64, &p.record[..]))?;
            }
            for (i, k, id) in entries {
                ix[*i].execute((k.as_bytes(), *id as i64))?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn query(&mut self, kind: Kind, key: &str, limit: usize, ids: &mut Vec<u64>) -> Result<usize> {
        let n = kind.index().tree_name();
        ids.clear();
        if kind == Kind::DiscId {
            let mut st = self.conn.prepare_cached(&format!("SELECT album FROM {n} WHERE key = ?1 ORDER BY album"))?;
            let mut rows = st.query([key.as_bytes()])?;
            while let Some(row) = rows.next()? {
                ids.push(row.get::<_, i64>(0)? as u64);
                if ids.len() >= limit {
                    break;
                }
            }
        } else {
            let hi = successor(key.as_bytes());
            let mut st = self
                .conn
                .prepare_cached(&format!("SELECT album FROM {n} WHERE key >= ?1 AND key < ?2 ORDER BY key, album"))?;
            let mut rows = st.query((key.as_bytes(), &hi[..]))?;
            while let Some(row) = rows.next()? {
                let id = row.get::<_, i64>(0)? as u64;
                if push_distinct(ids, id, limit) {
                    break;
                }
            }
        }
        let mut st = self.conn.prepare_cached("SELECT data FROM albums WHERE id = ?1")?;
        let mut bytes = 0;
        for id in ids.iter() {
            let mut rows = st.query([*id as i64])?;
            if let Some(row) = rows.next()? {
                bytes += decoded_len(row.get_ref(0)?.as_blob()?)?;
            }
        }
        Ok(bytes)
    }
    fn empty_read(&mut self) -> Result<()> {
        self.conn.execute_batch("BEGIN; SELECT 1 FROM albums LIMIT 0; COMMIT;")?;
        Ok(())
    }
}

// ---------------------------------------------------------------- LMDB

type Raw = heed::types::Bytes;

struct Lmdb {
    env: heed::Env,
    albums: heed::Database<Raw, Raw>,
    ix: Vec<(Index, heed::Database<Raw, Raw>)>,
}

impl Lmdb {
    fn open(dir: &Path, set: &[Index], map_gib: u64) -> Result<Lmdb> {
        std::fs::create_dir_all(dir)?;
        let mut o = heed::EnvOpenOptions::new();
        o.map_size((map_gib << 30) as usize).max_dbs(16);
        // SAFETY: default flags (durable commits); the directory is this benchmark's alone and
        // no other process maps it.
        let env = unsafe { o.open(dir) }.with_context(|| format!("lmdb: open {}", dir.display()))?;
        let mut w = env.write_txn()?;
        let albums = env.create_database(&mut w, Some("albums"))?;
        let mut ix = Vec::new();
        for &i in set {
            let db = env
                .database_options()
                .types::<Raw, Raw>()
                .flags(heed::DatabaseFlags::DUP_SORT | heed::DatabaseFlags::DUP_FIXED)
                .name(i.tree_name())
                .create(&mut w)?;
            ix.push((i, db));
        }
        w.commit()?;
        Ok(Lmdb { env, albums, ix })
    }
}

impl Store for Lmdb {
    fn write(&mut self, batch: &[Prepared], entries: &[(usize, String, u64)]) -> Result<()> {
        let mut w = self.env.write_txn()?;
        for p in batch {
            self.albums.put(&mut w, &p.id.to_be_bytes(), &p.record)?;
        }
        for (i, k, id) in entries {
            self.ix[*i].1.put(&mut w, k.as_bytes(), &id.to_be_bytes())?;
        }
        w.commit()?;
        Ok(())
    }
    fn query(&mut self, kind: Kind, key: &str, limit: usize, ids: &mut Vec<u64>) -> Result<usize> {
        let r = self.env.read_txn()?;
        let db = self.ix.iter().find(|(x, _)| *x == kind.index()).map(|(_, d)| *d).context("index not built")?;
        ids.clear();
        let be = |v: &[u8]| -> Result<u64> { Ok(u64::from_be_bytes(v.try_into().context("album id is 8 bytes")?)) };
        if kind == Kind::DiscId {
            if let Some(it) = db.get_duplicates(&r, key.as_bytes())? {
                for e in it.take(limit) {
                    ids.push(be(e?.1)?);
                }
            }
        } else {
            for e in db.prefix_iter(&r, key.as_bytes())? {
                let id = be(e?.1)?;
                if push_distinct(ids, id, limit) {
                    break;
                }
            }
        }
        let mut bytes = 0;
        for id in ids.iter() {
            if let Some(v) = self.albums.get(&r, &id.to_be_bytes())? {
                bytes += decoded_len(v)?;
            }
        }
        Ok(bytes)
    }
    fn empty_read(&mut self) -> Result<()> {
        drop(self.env.read_txn()?);
        Ok(())
    }
}

// ---------------------------------------------------------------- the run

/// One engine's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EngineResult {
    /// Engine name.
    pub engine: String,
    /// Albums per second, write stage (durable commit per batch).
    pub albums_per_s: f64,
    /// Seconds of the write stage.
    pub write_seconds: f64,
    /// Database size on disk (allocated blocks, every file), bytes.
    pub db_bytes: u64,
    /// The same without the write-ahead files (Jackdaw's journal directory, SQLite's `-wal` and
    /// `-shm`, LMDB's `lock.mdb`), bytes.
    pub data_bytes: u64,
    /// Bytes written to the block device per album (None: no block device).
    pub device_bytes_per_album: Option<f64>,
    /// Per query kind: (kind, p50 µs, p99 µs, albums returned in all), right after the import
    /// on the same open database (for Jackdaw, pages not yet flushed are read from memory).
    pub queries: Vec<(String, f64, f64, u64)>,
    /// The same after the database was closed and opened again (as `freedb search` reads it).
    pub queries_reopened: Vec<(String, f64, f64, u64)>,
    /// albums/s of every round.
    pub rounds_albums_per_s: Vec<f64>,
    /// p50 of beginning and ending an empty read transaction (10,000 times), µs: the fixed
    /// cost inside every query.
    pub read_txn_p50_us: f64,
}

fn median_result(mut rs: Vec<EngineResult>) -> EngineResult {
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rounds: Vec<f64> = rs.iter().map(|r| r.albums_per_s).collect();
    let mut out = rs.pop().expect("at least one round");
    rs.push(out.clone());
    out.albums_per_s = mid(rounds.clone());
    out.write_seconds = mid(rs.iter().map(|r| r.write_seconds).collect());
    out.read_txn_p50_us = mid(rs.iter().map(|r| r.read_txn_p50_us).collect());
    out.device_bytes_per_album = if rs.iter().all(|r| r.device_bytes_per_album.is_some()) {
        Some(mid(rs.iter().filter_map(|r| r.device_bytes_per_album).collect()))
    } else {
        None
    };
    for (i, q) in out.queries.iter_mut().enumerate() {
        q.1 = mid(rs.iter().map(|r| r.queries[i].1).collect());
        q.2 = mid(rs.iter().map(|r| r.queries[i].2).collect());
    }
    for (i, q) in out.queries_reopened.iter_mut().enumerate() {
        q.1 = mid(rs.iter().map(|r| r.queries_reopened[i].1).collect());
        q.2 = mid(rs.iter().map(|r| r.queries_reopened[i].2).collect());
    }
    out.rounds_albums_per_s = rounds;
    out
}

/// The engines `--engines` names.
const ENGINES: [&str; 4] = ["jackdaw", "jackdaw-txn", "sqlite", "lmdb"];

fn open_store(name: &str, dir: &Path, set: &[Index], lmdb_map_gib: u64) -> Result<Box<dyn Store>> {
    Ok(match name {
        "jackdaw" => Box::new(Jackdaw::open(dir, set, false)?),
        "jackdaw-txn" => Box::new(Jackdaw::open(dir, set, true)?),
        "sqlite" => Box::new(Sqlite::open(dir, set)?),
        "lmdb" => Box::new(Lmdb::open(dir, set, lmdb_map_gib)?),
        other => bail!("unknown engine {other:?}: {}", ENGINES.join(", ")),
    })
}

/// Each query of every kind once: per kind (name, p50 µs, p99 µs, albums returned); the ids
/// returned, in order, appended to `all_ids`.
fn run_queries(
    store: &mut dyn Store,
    queries: &[(Kind, Vec<String>)],
    limit: usize,
    all_ids: &mut Vec<u64>,
) -> Result<Vec<(String, f64, f64, u64)>> {
    let mut qres = Vec::new();
    let mut ids = Vec::new();
    for (k, qs) in queries {
        let mut lat = Vec::with_capacity(qs.len());
        let mut returned = 0u64;
        for q in qs {
            let t = Instant::now();
            store.query(*k, q, limit, &mut ids)?;
            lat.push(t.elapsed().as_nanos() as u64);
            returned += ids.len() as u64;
            all_ids.extend_from_slice(&ids);
        }
        qres.push((k.name().to_string(), pct(&mut lat, 50), pct(&mut lat, 99), returned));
    }
    Ok(qres)
}

/// Write `prepared` into `store` (engine `name`) in batches of `batch` albums, each batch's
/// index entries sorted by (index, key, id) as the import writes them: seconds taken, and device
/// bytes written (when the device can be read).
fn write_stage(
    store: &mut dyn Store,
    name: &str,
    dir: &Path,
    batch: usize,
    prepared: &[Prepared],
) -> Result<(f64, Option<u64>)> {
    let sorted: Vec<Vec<(usize, String, u64)>> = prepared
        .chunks(batch)
        .map(|c| {
            let mut e: Vec<(usize, String, u64)> =
                c.iter().flat_map(|p| p.keys.iter().map(move |(i, k)| (*i, k.clone(), p.id))).collect();
            e.sort_unstable();
            e
        })
        .collect();
    let window = Window::open(dir);
    let t = Instant::now();
    for (chunk, entries) in prepared.chunks(batch).zip(&sorted) {
        store.write(chunk, entries)?;
    }
    drop(sorted);
    let seconds = t.elapsed().as_secs_f64();
    let device = window.close();
    eprintln!("  {name}: {:.0} albums/s; queries", prepared.len() as f64 / seconds);
    Ok((seconds, device))
}

/// One engine, one round: write every batch (durable), then the queries, then the queries again
/// on the database closed and opened anew.
fn run_engine(
    name: &str,
    a: &BenchArgs,
    set: &[Index],
    prepared: &[Prepared],
    queries: &[(Kind, Vec<String>)],
) -> Result<(EngineResult, Vec<u64>)> {
    let dir = a.dir.join(format!("db-{name}"));
    if a.reuse {
        if !dir.is_dir() {
            bail!("--reuse: no database {} (run once with --keep first)", dir.display());
        }
    } else {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
    }
    let mut store = open_store(name, &dir, set, a.lmdb_map_gib)?;
    // The write stage (none with --reuse: the databases hold the albums already).
    let (write_seconds, device) = if a.reuse {
        eprintln!("  {name}: queries");
        (0.0, None)
    } else {
        write_stage(&mut *store, name, &dir, a.batch, prepared)?
    };
    let mut all_ids = Vec::new();
    let qres = run_queries(&mut *store, queries, a.limit, &mut all_ids)?;
    // As `freedb search` finds it: the database closed after the import and opened by a new
    // reader (for Jackdaw: every page in the data file, none held in memory since a commit).
    drop(store);
    let mut store = open_store(name, &dir, set, a.lmdb_map_gib)?;
    let mut again = Vec::new();
    let queries_reopened = run_queries(&mut *store, queries, a.limit, &mut again)?;
    if again != all_ids {
        bail!("{name} returned other albums after it was reopened");
    }
    let mut lat = Vec::with_capacity(10_000);
    for _ in 0..10_000 {
        let t = Instant::now();
        store.empty_read()?;
        lat.push(t.elapsed().as_nanos() as u64);
    }
    let read_txn_p50_us = pct(&mut lat, 50);
    drop(store);
    let r = EngineResult {
        read_txn_p50_us,
        engine: name.to_string(),
        // No write stage with --reuse: 0.
        albums_per_s: if a.reuse { 0.0 } else { prepared.len() as f64 / write_seconds },
        write_seconds,
        db_bytes: du(&dir, false),
        data_bytes: du(&dir, true),
        device_bytes_per_album: device.map(|b| b as f64 / prepared.len() as f64),
        queries: qres,
        queries_reopened,
        rounds_albums_per_s: Vec::new(),
    };
    if !a.keep && !a.reuse {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok((r, all_ids))
}

/// All figures of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    /// Albums written.
    pub albums: u64,
    /// Index entries written per album, on average.
    pub index_entries: u64,
    /// Albums per batch.
    pub batch: usize,
    /// Read + parse only on one thread, nothing written, albums/s.
    pub parse_only_per_s: f64,
    /// `freedb import` on Jackdaw from the archive: wall seconds, albums/s.
    pub pipeline_seconds: f64,
    /// The pipeline's albums/s.
    pub pipeline_per_s: f64,
    /// Seconds the pipeline's writer was busy (building batches, waiting for commits).
    pub pipeline_writer_busy: f64,
    /// Rounds run (every figure is the median over them).
    pub rounds: usize,
    /// The archive's size.
    pub archive_bytes: u64,
    /// Per engine.
    pub engines: Vec<EngineResult>,
}

fn du(dir: &Path, data_only: bool) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            !data_only || !(n == "journal" || n.ends_with("-wal") || n.ends_with("-shm") || n == "lock.mdb")
        })
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => du(&e.path(), data_only),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

fn pct(v: &mut [u64], p: usize) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    v[(v.len() * p / 100).min(v.len() - 1)] as f64 / 1000.0
}

/// Run the comparison.
pub fn run(a: BenchArgs) -> Result<()> {
    if a.batch == 0 || a.queries == 0 {
        bail!("--batch and --queries must be at least 1");
    }
    // Before anything is generated or made.
    if let Some(other) = a.engines.iter().find(|e| !ENGINES.contains(&e.as_str())) {
        bail!("unknown engine {other:?}: {}", ENGINES.join(", "));
    }
    let made_dir = !a.dir.exists();
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let archive = match &a.source {
        Some(s) => s.clone(),
        None => {
            let p = a.dir.join(format!("freedb-{}.tar", a.albums));
            eprintln!("generating {} albums into {}", a.albums, p.display());
            crate::gen::generate(a.albums, a.seed, &p, |_| {})?;
            p
        }
    };
    let archive_bytes = std::fs::metadata(&archive).map(|m| m.len()).unwrap_or(0);

    // Parse only (read + parse, nothing kept but the albums).
    eprintln!("parsing {} into memory", archive.display());
    let t = Instant::now();
    let mut albums: Vec<Album> = Vec::new();
    read_entries(&archive, 0, |e| {
        if let Ok(p) = parse(&e.data, &e.category) {
            albums.push(p.album);
        }
        true
    })?;
    if albums.is_empty() {
        bail!("{} holds no xmcd entry: nothing to compare", archive.display());
    }
    let parse_only_per_s = albums.len() as f64 / t.elapsed().as_secs_f64();
    let set = Index::set(a.track_index, false);
    let mut keys = Vec::new();
    let prepared: Vec<Prepared> = albums
        .iter()
        .enumerate()
        .map(|(id, al)| {
            let mut ks = Vec::new();
            for (pos, i) in set.iter().enumerate() {
                keys.clear();
                i.keys(al, &mut keys);
                ks.extend(keys.drain(..).map(|k| (pos, k)));
            }
            Prepared { id: id as u64, record: encode(al), keys: ks }
        })
        .collect();
    let index_entries: u64 = prepared.iter().map(|p| p.keys.len() as u64).sum();

    // The queries, drawn from the data (the same for every engine).
    let mut rng = crate::gen::Rng::new(a.seed ^ 0x5eed);
    let mut kinds = vec![Kind::DiscId, Kind::Artist, Kind::Title];
    if a.track_index {
        kinds.push(Kind::Track);
    }
    let prefix = |s: &str, rng: &mut crate::gen::Rng| -> String {
        let k = crate::db::index_key(s).unwrap_or_default();
        let n = k.chars().count() as u64;
        let take = if n <= 3 { n } else { rng.range(3, n) };
        crate::db::truncate(&k.chars().take(take as usize).collect::<String>(), MAX_INDEX_KEY).to_string()
    };
    let mut queries: Vec<(Kind, Vec<String>)> = Vec::new();
    for &k in &kinds {
        let mut qs = Vec::with_capacity(a.queries);
        let mut draws = 0usize;
        while qs.len() < a.queries {
            draws += 1;
            if draws > a.queries * 100 {
                bail!("too few albums with data for {} queries", k.name());
            }
            let al = &albums[rng.below(albums.len() as u64) as usize];
            let q = match k {
                Kind::DiscId => al.discids[rng.below(al.discids.len() as u64) as usize].clone(),
                Kind::Artist => prefix(&al.artist, &mut rng),
                Kind::Title => prefix(&al.title, &mut rng),
                Kind::Track => match al.tracks.get(rng.below(al.tracks.len().max(1) as u64) as usize) {
                    Some(t) => prefix(&t.title, &mut rng),
                    None => continue,
                },
            };
            if !q.is_empty() {
                qs.push(q);
            }
        }
        queries.push((k, qs));
    }
    // Only the prepared records and the queries are needed from here on (at full size the parsed
    // albums take gigabytes).
    drop(albums);

    // What `--keep` leaves and `--reuse` needs: the same albums and queries (a database of other
    // albums would answer other queries with nothing, and be measured as if it were right).
    let mark_path = a.dir.join(KEPT_MARK);
    let mark = format!(
        "albums {} index entries {} seed {} track index {} batch {}\n",
        prepared.len(),
        index_entries,
        a.seed,
        a.track_index,
        a.batch
    );
    if a.reuse {
        let kept = std::fs::read_to_string(&mark_path).unwrap_or_default();
        if kept != mark {
            bail!(
                "--reuse: the databases in {} were not kept by a run of these albums (kept: {:?}; now: {:?}); \
                 pass the --source or --albums, --seed, --track-index and --batch of the --keep run",
                a.dir.display(),
                kept.trim(),
                mark.trim()
            );
        }
    }

    // Rounds: every engine once a round, the order rotated, medians reported (the machine is
    // shared: one round's figures can be off by a factor).
    let mut per: Vec<(String, Vec<EngineResult>)> = a.engines.iter().map(|e| (e.clone(), Vec::new())).collect();
    let mut reference: Option<(String, Vec<u64>)> = None;
    let mut pipeline = Vec::new();
    for round in 0..a.rounds.max(1) {
        let n = a.engines.len();
        for k in 0..n {
            let name = &a.engines[(k + round) % n];
            eprintln!("round {}/{}: {name}", round + 1, a.rounds.max(1));
            let (r, ids) = run_engine(name, &a, &set, &prepared, &queries)?;
            match &reference {
                None => reference = Some((name.clone(), ids)),
                Some((rn, rids)) if *rids != ids => {
                    bail!("{rn} and {name} returned different albums for the same queries")
                }
                Some(_) => {}
            }
            if let Some(slot) = per.iter_mut().find(|(e, _)| e == name) {
                slot.1.push(r);
            }
        }
        if a.reuse {
            continue;
        }
        // The whole pipeline on Jackdaw, from the archive.
        let pdir = a.dir.join("db-pipeline");
        if pdir.exists() {
            std::fs::remove_dir_all(&pdir)?;
        }
        eprintln!("round {}: pipeline: freedb import {} (batch {})", round + 1, archive.display(), a.batch);
        let s = crate::import::import(
            &archive,
            &pdir,
            &crate::import::ImportOptions { batch: a.batch, track_index: a.track_index, ..Default::default() },
        )?;
        pipeline.push(s);
        std::fs::remove_dir_all(&pdir).ok();
    }
    if a.keep && !a.reuse {
        std::fs::write(&mark_path, &mark).with_context(|| format!("cannot write {}", mark_path.display()))?;
    }
    if !a.keep && !a.reuse && a.source.is_none() {
        std::fs::remove_file(&archive).ok();
    }
    if made_dir && !a.keep && !a.reuse {
        // The directory this run made, if nothing else is in it now.
        std::fs::remove_dir(&a.dir).ok();
    }
    let results: Vec<EngineResult> = per.into_iter().map(|(_, rs)| median_result(rs)).collect();
    // Medians (0 for none: `--reuse` runs no pipeline).
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let pipeline_seconds = mid(pipeline.iter().map(|s| s.seconds).collect());
    let pipeline_writer_busy = mid(pipeline.iter().map(|s| s.write_busy_seconds).collect());
    let pipeline_albums = pipeline.first().map_or(0, |s| s.albums);
    let res = BenchResult {
        albums: prepared.len() as u64,
        index_entries,
        batch: a.batch,
        parse_only_per_s,
        pipeline_seconds,
        pipeline_per_s: if pipeline_seconds > 0.0 { pipeline_albums as f64 / pipeline_seconds } else { 0.0 },
        pipeline_writer_busy,
        rounds: a.rounds.max(1),
        archive_bytes,
        engines: results,
    };
    print_report(&res, &a);
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&res)?)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// The file `--keep` writes beside the databases, naming the albums they hold (`--reuse` checks it).
const KEPT_MARK: &str = "bench-kept.txt";

/// What the first pass of queries ran on.
fn first_pass(a: &BenchArgs) -> &'static str {
    if a.reuse {
        "opened (--reuse)"
    } else {
        "after import"
    }
}

fn print_report(r: &BenchResult, a: &BenchArgs) {
    println!(
        "freedb-import: {} albums ({} index entries), batches of {}, {} queries per kind (limit {}), archive {:.0} MB",
        r.albums,
        r.index_entries,
        r.batch,
        a.queries,
        a.limit,
        r.archive_bytes as f64 / 1e6
    );
    println!(
        "parse only (read + parse, one thread): {:.0} albums/s; freedb import pipeline on Jackdaw: {:.1}s, {:.0} albums/s (writer busy {:.1}s); medians of {} round(s)",
        r.parse_only_per_s, r.pipeline_seconds, r.pipeline_per_s, r.pipeline_writer_busy, r.rounds
    );
    println!();
    println!("| engine | albums/s, write stage (each round) | db size MB (all files) | without journal / WAL MB | device bytes/album |");
    println!("|---|---:|---:|---:|---:|");
    for e in &r.engines {
        println!(
            "| {} | {:.0} ({}) | {:.1} | {:.1} | {} |",
            e.engine,
            e.albums_per_s,
            e.rounds_albums_per_s.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", "),
            e.db_bytes as f64 / 1e6,
            e.data_bytes as f64 / 1e6,
            e.device_bytes_per_album.map_or("-".into(), |b| format!("{b:.0}"))
        );
    }
    println!();
    println!("| engine | query | when | p50 µs | p99 µs | albums returned |");
    println!("|---|---|---|---:|---:|---:|");
    for e in &r.engines {
        for (when, qs) in [(first_pass(a), &e.queries), ("reopened", &e.queries_reopened)] {
            for (k, p50, p99, n) in qs {
                println!("| {} | {k} | {when} | {p50:.1} | {p99:.1} | {n} |", e.engine);
            }
        }
    }
    for e in &r.engines {
        println!("| {} | empty read transaction | reopened | {:.2} | | |", e.engine, e.read_txn_p50_us);
    }
    if let Some(j) = r.engines.iter().find(|e| e.engine == "jackdaw") {
        println!();
        for e in r.engines.iter().filter(|e| e.engine != "jackdaw") {
            let speedup = |js: &[(String, f64, f64, u64)], es: &[(String, f64, f64, u64)]| {
                js.iter()
                    .zip(es)
                    .map(|(a, b)| format!("{} {:.2}x", a.0, b.1 / a.1.max(1e-9)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // No import with --reuse: no ratio.
            let import = if a.reuse { "n/a".to_string() } else { format!("{:.2}x", j.albums_per_s / e.albums_per_s) };
            println!(
                "jackdaw vs {}: import {import}, size {:.2}x (without journal / WAL {:.2}x), query p50 speed-up {}: {}; reopened: {}",
                e.engine,
                j.db_bytes as f64 / e.db_bytes.max(1) as f64,
                j.data_bytes as f64 / e.data_bytes.max(1) as f64,
                first_pass(a),
                speedup(&j.queries, &e.queries),
                speedup(&j.queries_reopened, &e.queries_reopened)
            );
        }
    }
}
