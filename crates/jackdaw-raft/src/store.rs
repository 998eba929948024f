//! The log store and the state machine on Jackdaw.

use crate::{NodeId, Request, Response, TypeConfig};
use jackdaw::{Durability, Env, Options, Tree, TxId};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{
    AnyError, BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftLogReader, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StorageIOError, StoredMembership, Vote,
};
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock};

type SE = StorageError<NodeId>;
type Membership = StoredMembership<NodeId, BasicNode>;

const LOG: &str = "log";
const META: &str = "meta";
const KV: &str = "kv";
const K_VOTE: &[u8] = b"vote";
const K_COMMITTED: &[u8] = b"committed";
const K_PURGED: &[u8] = b"purged";
const K_APPLIED: &[u8] = b"applied";
const K_MEMBERSHIP: &[u8] = b"membership";
const K_NODE: &[u8] = b"node";

fn any(e: impl std::fmt::Display) -> AnyError {
    AnyError::error(e.to_string())
}

/// Run blocking Jackdaw work off the async executor.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(format!("blocking task failed: {e}")),
    }
}

fn enc<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("openraft types serialize")
}

fn dec<T: DeserializeOwned>(b: &[u8]) -> Result<T, String> {
    serde_json::from_slice(b).map_err(|e| format!("undecodable record: {e}"))
}

fn tree(tx: &mut jackdaw::WriteTxn, name: &str) -> jackdaw::Result<Tree> {
    match tx.open_tree(name)? {
        Some(t) => Ok(t),
        None => tx.create_tree(name),
    }
}

fn bounds(r: &impl RangeBounds<u64>) -> (Bound<[u8; 8]>, Bound<[u8; 8]>) {
    let f = |b: Bound<&u64>| match b {
        Bound::Included(i) => Bound::Included(i.to_be_bytes()),
        Bound::Excluded(i) => Bound::Excluded(i.to_be_bytes()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (f(r.start_bound()), f(r.end_bound()))
}

// ------------------------------------------------------------------------------------------------
// Log store

/// Counters of the log store (for tests and the bench).
#[derive(Debug, Default)]
pub struct LogCounters {
    /// `append` calls.
    pub appends: AtomicU64,
    /// Entries appended.
    pub entries: AtomicU64,
    /// `Env::sync()` calls made by the syncer (one per group of appends).
    pub syncs: AtomicU64,
}

struct LogInner {
    env: Env,
    log: Tree,
    meta: Tree,
    syncer: Mutex<Option<mpsc::Sender<LogFlushed<TypeConfig>>>>,
    /// Taken by the syncer between a group's first callback and its sync (see `hold_syncer`).
    gate: Arc<Mutex<()>>,
    counters: Arc<LogCounters>,
}

/// openraft's log storage on one Jackdaw environment. Cheap to clone (the clone is the log reader).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<LogInner>,
}

impl LogStore {
    /// Open (or create) the log store in directory `dir`.
    pub fn open(dir: impl AsRef<Path>) -> jackdaw::Result<LogStore> {
        let env = Env::open(dir.as_ref(), Options::default().durability(Durability::Buffered))?;
        let mut tx = env.write()?;
        let log = tree(&mut tx, LOG)?;
        let meta = tree(&mut tx, META)?;
        tx.set_durability(Durability::Sync);
        tx.commit()?;
        let counters = Arc::new(LogCounters::default());
        let (send, recv) = mpsc::channel::<LogFlushed<TypeConfig>>();
        let gate = Arc::new(Mutex::new(()));
        let (e, g, c) = (env.clone(), gate.clone(), counters.clone());
        std::thread::Builder::new()
            .name("raft-log-sync".into())
            .spawn(move || syncer(e, recv, &g, c))
            .map_err(|e| jackdaw::Error::Io { op: "start log syncer thread", source: Arc::new(e) })?;
        let inner = LogInner { env, log, meta, syncer: Mutex::new(Some(send)), gate, counters };
        Ok(LogStore { inner: Arc::new(inner) })
    }

    /// Hold the group syncer before its next sync until the guard is dropped: the callbacks
    /// queued meanwhile all join that sync's group. For tests, which make a group this way
    /// instead of hoping the scheduler makes one.
    #[doc(hidden)]
    pub fn hold_syncer(&self) -> std::sync::MutexGuard<'_, ()> {
        self.inner.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The environment (for `check()` and statistics).
    pub fn env(&self) -> &Env {
        &self.inner.env
    }

    /// Counters of appends and group syncs.
    pub fn counters(&self) -> Arc<LogCounters> {
        self.inner.counters.clone()
    }

    /// Stop the syncer (callbacks still queued are completed first) and close the environment.
    pub fn close(&self) -> jackdaw::Result<()> {
        self.inner.syncer.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.inner.env.close()
    }

    /// Tie this log to node `id`: the first claim records it (durably); a later one by another id
    /// is refused. A node's vote and log are its own: the same files served under another id
    /// would let one history vote twice, which Raft's safety rests on never happening.
    pub fn claim(&self, id: NodeId) -> Result<(), String> {
        match self.get_meta::<NodeId>(K_NODE)? {
            Some(owner) if owner == id => Ok(()),
            Some(owner) => Err(format!(
                "this data directory belongs to node {owner}: start it with --id {owner}, or give node {id} a \
                 data directory of its own"
            )),
            None => self.put_meta(K_NODE, &id, Durability::Sync),
        }
    }

    fn get_meta<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, String> {
        let rtx = self.inner.env.read().map_err(|e| e.to_string())?;
        match rtx.get(&self.inner.meta, key).map_err(|e| e.to_string())? {
            Some(b) => Ok(Some(dec(&b)?)),
            None => Ok(None),
        }
    }

    fn put_meta<T: Serialize>(&self, key: &[u8], v: &T, durability: Durability) -> Result<(), String> {
        let i = &self.inner;
        let mut tx = i.env.write().map_err(|e| e.to_string())?;
        tx.set_durability(durability);
        tx.put(&i.meta, key, enc(v)).map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
        Ok(())
    }

    fn read_range(&self, r: (Bound<[u8; 8]>, Bound<[u8; 8]>)) -> Result<Vec<Entry<TypeConfig>>, String> {
        let rtx = self.inner.env.read().map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for kv in rtx.range(&self.inner.log, r).map_err(|e| e.to_string())? {
            let (_, v) = kv.map_err(|e| e.to_string())?;
            out.push(dec(&v)?);
        }
        Ok(out)
    }

    fn log_state(&self) -> Result<LogState<TypeConfig>, String> {
        let rtx = self.inner.env.read().map_err(|e| e.to_string())?;
        let purged: Option<LogId<NodeId>> = match rtx.get(&self.inner.meta, K_PURGED).map_err(|e| e.to_string())? {
            Some(b) => dec(&b)?,
            None => None,
        };
        let last = match rtx.range(&self.inner.log, ..).map_err(|e| e.to_string())?.next_back() {
            Some(kv) => {
                let (_, v) = kv.map_err(|e| e.to_string())?;
                Some(dec::<Entry<TypeConfig>>(&v)?.log_id)
            }
            None => None,
        };
        Ok(LogState { last_purged_log_id: purged, last_log_id: last.or(purged) })
    }

    fn write_entries(&self, entries: &[Entry<TypeConfig>]) -> Result<TxId, String> {
        let i = &self.inner;
        let mut tx = i.env.write().map_err(|e| e.to_string())?;
        for e in entries {
            tx.put(&i.log, e.log_id.index.to_be_bytes(), enc(e)).map_err(|e| e.to_string())?;
        }
        Ok(tx.commit().map_err(|e| e.to_string())?.txid)
    }

    /// Delete the entries in `range`; with `purged`, record it as the last purged log id in the
    /// same transaction. Durable when it returns.
    fn delete_range(
        &self,
        range: (Bound<[u8; 8]>, Bound<[u8; 8]>),
        purged: Option<LogId<NodeId>>,
    ) -> Result<(), String> {
        let i = &self.inner;
        let mut tx = i.env.write().map_err(|e| e.to_string())?;
        let keys: Vec<Vec<u8>> = tx
            .keys(&i.log, range)
            .map_err(|e| e.to_string())?
            .map(|k| k.map(|k| k.to_vec()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        for k in keys {
            tx.delete(&i.log, k).map_err(|e| e.to_string())?;
        }
        if let Some(p) = purged {
            tx.put(&i.meta, K_PURGED, enc(&Some(p))).map_err(|e| e.to_string())?;
        }
        tx.set_durability(Durability::Sync);
        tx.commit().map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The group syncer: takes every callback queued, makes the log durable with one `Env::sync()`,
/// then completes them in order. The callbacks queued while a sync runs form the next group.
fn syncer(env: Env, recv: mpsc::Receiver<LogFlushed<TypeConfig>>, gate: &Mutex<()>, counters: Arc<LogCounters>) {
    while let Ok(first) = recv.recv() {
        drop(gate.lock().unwrap_or_else(|p| p.into_inner()));
        let mut group = vec![first];
        while let Ok(more) = recv.try_recv() {
            group.push(more);
        }
        let r = env.sync();
        counters.syncs.fetch_add(1, Ordering::Relaxed);
        for cb in group {
            cb.log_io_completed(match &r {
                Ok(_) => Ok(()),
                Err(e) => Err(std::io::Error::other(format!("log sync failed: {e}"))),
            });
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, SE> {
        let (me, b) = (self.clone(), bounds(&range));
        blocking(move || me.read_range(b)).await.map_err(|e| StorageIOError::read_logs(any(e)).into())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, SE> {
        let me = self.clone();
        blocking(move || me.log_state()).await.map_err(|e| StorageIOError::read_logs(any(e)).into())
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), SE> {
        let (me, v) = (self.clone(), *vote);
        blocking(move || me.put_meta(K_VOTE, &v, Durability::Sync))
            .await
            .map_err(|e| StorageIOError::write_vote(any(e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, SE> {
        let me = self.clone();
        blocking(move || me.get_meta(K_VOTE)).await.map_err(|e| StorageIOError::read_vote(any(e)).into())
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<(), SE> {
        // Need not be durable: openraft only uses it to re-apply sooner after a restart.
        let me = self.clone();
        blocking(move || me.put_meta(K_COMMITTED, &committed, Durability::Buffered))
            .await
            .map_err(|e| StorageIOError::write(any(e)).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, SE> {
        let me = self.clone();
        blocking(move || Ok(me.get_meta::<Option<LogId<NodeId>>>(K_COMMITTED)?.flatten()))
            .await
            .map_err(|e| StorageIOError::read(any(e)).into())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), SE>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let n = entries.len() as u64;
        let me = self.clone();
        // Committed (Buffered) when this returns: readable at once, durable after the group sync.
        blocking(move || me.write_entries(&entries)).await.map_err(|e| StorageIOError::write_logs(any(e)))?;
        let guard = self.inner.syncer.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(s) if s.send(callback).is_ok() => {
                // Counted once queued, so that a test holding the syncer knows when all are.
                let c = &self.inner.counters;
                c.appends.fetch_add(1, Ordering::Relaxed);
                c.entries.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(StorageIOError::write_logs(any("the log store is closed")).into()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), SE> {
        let me = self.clone();
        let b = bounds(&(log_id.index..));
        blocking(move || me.delete_range(b, None)).await.map_err(|e| StorageIOError::write_logs(any(e)).into())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), SE> {
        let me = self.clone();
        let b = bounds(&(..=log_id.index));
        blocking(move || me.delete_range(b, Some(log_id))).await.map_err(|e| StorageIOError::write_logs(any(e)).into())
    }
}

// ------------------------------------------------------------------------------------------------
// State machine

/// The open state machine environment.
pub struct SmEnv {
    /// The environment.
    pub env: Env,
    /// The key-value tree.
    pub kv: Tree,
    meta: Tree,
    /// Its directory name under the state machine directory.
    name: String,
    /// The longest key it takes (`jackdaw::max_key_size` of its page size), read once at open:
    /// `Env::stats` takes the engine's locks, too much for every client write.
    max_key: usize,
}

struct CurrentSnapshot {
    meta: SnapshotMeta<NodeId, BasicNode>,
    data: Vec<u8>,
}

/// The applied log id and the membership a commit of the state machine wrote.
type AppliedAt = (Option<LogId<NodeId>>, Membership);

/// `SmShared::dump`: the applied log index and every key and value.
pub type Dump = (Option<u64>, Vec<(String, String)>);

/// What the state machine shares with the server (reads) and the snapshot builder.
pub struct SmShared {
    dir: PathBuf,
    cur: RwLock<SmEnv>,
    /// Transaction id of each recent commit -> the applied log id and membership it wrote (so a
    /// snapshot taken by `backup_to_writer`, which names its transaction, gets exact metadata).
    by_txid: Mutex<BTreeMap<u64, AppliedAt>>,
    snapshot: Mutex<Option<CurrentSnapshot>>,
    snap_seq: AtomicU64,
    /// Snapshots installed since this process opened the state machine.
    pub installed: AtomicU64,
}

/// openraft's state machine on a second Jackdaw environment. Cheap to clone.
#[derive(Clone)]
pub struct StateMachine {
    sh: Arc<SmShared>,
}

fn open_sm_env(path: &Path, name: String) -> jackdaw::Result<SmEnv> {
    let env = Env::open(path.join(&name), Options::default().durability(Durability::Buffered))?;
    let mut tx = env.write()?;
    let kv = tree(&mut tx, KV)?;
    let meta = tree(&mut tx, META)?;
    tx.set_durability(Durability::Sync);
    tx.commit()?;
    let max_key = jackdaw::max_key_size(env.stats().page_size);
    Ok(SmEnv { env, kv, meta, name, max_key })
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn read_applied(env: &SmEnv) -> Result<(u64, Option<LogId<NodeId>>, Membership), String> {
    let rtx = env.env.read().map_err(|e| e.to_string())?;
    let applied = match rtx.get(&env.meta, K_APPLIED).map_err(|e| e.to_string())? {
        Some(b) => dec(&b)?,
        None => None,
    };
    let m = match rtx.get(&env.meta, K_MEMBERSHIP).map_err(|e| e.to_string())? {
        Some(b) => dec(&b)?,
        None => Membership::default(),
    };
    Ok((rtx.txid().get(), applied, m))
}

impl StateMachine {
    /// Open (or create) the state machine in directory `dir` (it holds a `CURRENT` file naming the
    /// live database directory; leftovers of an interrupted snapshot install are removed).
    pub fn open(dir: impl AsRef<Path>) -> Result<StateMachine, String> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let current = dir.join("CURRENT");
        let name = match std::fs::read_to_string(&current) {
            Ok(s) => s.trim().to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let name = "db-0".to_string();
                write_current(&dir, &name).map_err(|e| format!("write {}: {e}", current.display()))?;
                name
            }
            Err(e) => return Err(format!("read {}: {e}", current.display())),
        };
        let env = open_sm_env(&dir, name.clone()).map_err(|e| e.to_string())?;
        // Other directories are leftovers of installs (finished or not): the pointer decides.
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for d in rd.flatten() {
                let n = d.file_name().to_string_lossy().to_string();
                if n != name && (n.starts_with("db-") || n.starts_with("incoming-")) {
                    let _ = std::fs::remove_dir_all(d.path());
                }
            }
        }
        let (txid, applied, m) = read_applied(&env)?;
        let seq = name.trim_start_matches("db-").parse::<u64>().unwrap_or(0);
        let mut by_txid = BTreeMap::new();
        by_txid.insert(txid, (applied, m));
        Ok(StateMachine {
            sh: Arc::new(SmShared {
                dir,
                cur: RwLock::new(env),
                by_txid: Mutex::new(by_txid),
                snapshot: Mutex::new(None),
                snap_seq: AtomicU64::new(seq),
                installed: AtomicU64::new(0),
            }),
        })
    }

    /// The shared part (reads, `check()`).
    pub fn shared(&self) -> Arc<SmShared> {
        self.sh.clone()
    }

    fn apply_blocking(&self, entries: Vec<Entry<TypeConfig>>) -> Result<Vec<Response>, String> {
        let cur = self.sh.cur.read().unwrap_or_else(|p| p.into_inner());
        let (_, mut applied, mut membership) = read_applied(&cur)?;
        let max_key = cur.max_key;
        let mut tx = cur.env.write().map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            if applied.is_some_and(|a| e.log_id.index <= a.index) {
                // Already applied (its effect is in this database): never twice.
                out.push(Response { ok: true, ..Default::default() });
                continue;
            }
            applied = Some(e.log_id);
            match e.payload {
                EntryPayload::Blank => out.push(Response { ok: true, ..Default::default() }),
                EntryPayload::Membership(m) => {
                    membership = StoredMembership::new(Some(e.log_id), m);
                    out.push(Response { ok: true, ..Default::default() });
                }
                EntryPayload::Normal(req) => {
                    out.push(apply_request(&mut tx, &cur.kv, req, max_key).map_err(|e| e.to_string())?)
                }
            }
        }
        tx.put(&cur.meta, K_APPLIED, enc(&applied)).map_err(|e| e.to_string())?;
        tx.put(&cur.meta, K_MEMBERSHIP, enc(&membership)).map_err(|e| e.to_string())?;
        let mut map = self.sh.by_txid.lock().unwrap_or_else(|p| p.into_inner());
        let txid = tx.commit().map_err(|e| e.to_string())?.txid.get();
        map.insert(txid, (applied, membership));
        while map.len() > 4096 {
            map.pop_first();
        }
        Ok(out)
    }

    fn build_blocking(&self) -> Result<CurrentSnapshot, String> {
        let cur = self.sh.cur.read().unwrap_or_else(|p| p.into_inner());
        // What the snapshot holds must survive a crash before the log is purged up to it.
        cur.env.sync().map_err(|e| e.to_string())?;
        let mut data = Vec::new();
        let stats = cur.env.backup_to_writer(&mut data).map_err(|e| e.to_string())?;
        let meta = self.sh.by_txid.lock().unwrap_or_else(|p| p.into_inner()).get(&stats.txid.get()).cloned();
        let (applied, membership) = match meta {
            Some(m) => m,
            None => {
                return Err(format!("snapshot of transaction {} has no recorded applied state", stats.txid.get()));
            }
        };
        let seq = self.sh.snap_seq.fetch_add(1, Ordering::Relaxed);
        let id = match applied {
            Some(a) => format!("{}-{}-{}", a.leader_id.term, a.index, seq),
            None => format!("none-{seq}"),
        };
        let meta = SnapshotMeta { last_log_id: applied, last_membership: membership, snapshot_id: id };
        Ok(CurrentSnapshot { meta, data })
    }

    fn install_blocking(&self, meta: SnapshotMeta<NodeId, BasicNode>, data: Vec<u8>) -> Result<(), String> {
        let dir = &self.sh.dir;
        let mut cur = self.sh.cur.write().unwrap_or_else(|p| p.into_inner());
        let next = self.sh.snap_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let name = format!("db-{next}");
        let target = dir.join(&name);
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(|e| format!("remove {}: {e}", target.display()))?;
        }
        jackdaw::restore_from(&data[..], &target).map_err(|e| format!("restore snapshot: {e}"))?;
        // Fault tests only: announce the install and hold it open, so that a SIGKILL lands
        // between the restore and the switch of CURRENT.
        if let Some(ms) = std::env::var("JACKDAW_RAFT_TEST_INSTALL_DELAY_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
            eprintln!("installing snapshot {} into {}", meta.snapshot_id, target.display());
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let env = open_sm_env(dir, name.clone()).map_err(|e| e.to_string())?;
        let (txid, applied, membership) = read_applied(&env)?;
        if applied != meta.last_log_id || membership != meta.last_membership {
            let _ = env.env.close();
            let _ = std::fs::remove_dir_all(&target);
            return Err(format!(
                "snapshot content (applied {applied:?}) does not match its metadata ({:?})",
                meta.last_log_id
            ));
        }
        // The switch: one atomic rename of the pointer file.
        write_current(dir, &name).map_err(|e| format!("switch CURRENT: {e}"))?;
        let old = std::mem::replace(&mut *cur, env);
        let _ = old.env.close();
        let _ = std::fs::remove_dir_all(dir.join(&old.name));
        let mut map = self.sh.by_txid.lock().unwrap_or_else(|p| p.into_inner());
        map.clear();
        map.insert(txid, (applied, membership));
        *self.sh.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = Some(CurrentSnapshot { meta, data });
        self.sh.installed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Close the environment.
    pub fn close(&self) -> jackdaw::Result<()> {
        self.sh.cur.read().unwrap_or_else(|p| p.into_inner()).env.close()
    }
}

fn write_current(dir: &Path, name: &str) -> std::io::Result<()> {
    let tmp = dir.join("CURRENT.tmp");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(name.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join("CURRENT"))?;
    sync_dir(dir)
}

/// Apply one command; a command `Request::check` refuses changes nothing and answers its error
/// (the same on every node), so that only a storage failure fails the apply.
fn apply_request(tx: &mut jackdaw::WriteTxn, kv: &Tree, req: Request, max_key: usize) -> jackdaw::Result<Response> {
    if !matches!(req, Request::Batch { .. }) {
        if let Err(e) = req.check(max_key) {
            return Ok(Response { ok: false, error: Some(e), ..Default::default() });
        }
    }
    let get = |tx: &jackdaw::WriteTxn, k: &str| -> jackdaw::Result<Option<String>> {
        Ok(tx.get(kv, k)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
    };
    Ok(match req {
        Request::Put { key, value } => {
            let previous = get(tx, &key)?;
            tx.put(kv, &key, &value)?;
            Response { ok: true, previous, ..Default::default() }
        }
        Request::Delete { key } => {
            let previous = get(tx, &key)?;
            tx.delete(kv, &key)?;
            Response { ok: true, previous, ..Default::default() }
        }
        Request::Cas { key, expected, new } => {
            let previous = get(tx, &key)?;
            if previous != expected {
                return Ok(Response { ok: false, previous, ..Default::default() });
            }
            match new {
                Some(v) => tx.put(kv, &key, &v)?,
                None => {
                    tx.delete(kv, &key)?;
                }
            }
            Response { ok: true, previous, ..Default::default() }
        }
        Request::MultiPut { pairs } => {
            for (k, v) in pairs {
                tx.put(kv, &k, &v)?;
            }
            Response { ok: true, ..Default::default() }
        }
        Request::Batch { ops } => {
            let mut results = Vec::with_capacity(ops.len());
            for op in ops {
                results.push(apply_request(tx, kv, op, max_key)?);
            }
            Response { ok: results.iter().all(|r| r.ok), results, ..Default::default() }
        }
    })
}

impl SmShared {
    /// The longest key the current database takes (`jackdaw::max_key_size` of its page size).
    pub fn max_key(&self) -> usize {
        self.cur.read().unwrap_or_else(|p| p.into_inner()).max_key
    }

    /// Node `id`'s address in the applied membership, if it is a member of it.
    pub fn member_addr(&self, id: NodeId) -> Result<Option<String>, String> {
        let cur = self.cur.read().unwrap_or_else(|p| p.into_inner());
        let (_, _, m) = read_applied(&cur)?;
        Ok(m.membership().get_node(&id).map(|n| n.addr.clone()))
    }

    /// Read one key (from the current database).
    pub fn get(&self, key: &str) -> Result<Option<String>, String> {
        let cur = self.cur.read().unwrap_or_else(|p| p.into_inner());
        let rtx = cur.env.read().map_err(|e| e.to_string())?;
        Ok(rtx.get(&cur.kv, key).map_err(|e| e.to_string())?.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Every key and value, and the applied log index.
    pub fn dump(&self) -> Result<Dump, String> {
        let cur = self.cur.read().unwrap_or_else(|p| p.into_inner());
        let (_, applied, _) = read_applied(&cur)?;
        let rtx = cur.env.read().map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for kv in rtx.range(&cur.kv, ..).map_err(|e| e.to_string())? {
            let (k, v) = kv.map_err(|e| e.to_string())?;
            out.push((String::from_utf8_lossy(&k).into_owned(), String::from_utf8_lossy(&v).into_owned()));
        }
        Ok((applied.map(|a| a.index), out))
    }

    /// `check()` of the current database, as an error when it finds a problem.
    pub fn check(&self) -> Result<(), String> {
        let cur = self.cur.read().unwrap_or_else(|p| p.into_inner());
        cur.env.check().and_then(|r| r.into_result()).map(|_| ()).map_err(|e| e.to_string())
    }
}

/// The snapshot builder: holds the state machine (the build reads a snapshot, applies go on).
pub struct SnapshotBuilder {
    sm: StateMachine,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, SE> {
        let sm = self.sm.clone();
        let snap =
            blocking(move || sm.build_blocking()).await.map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        let out = Snapshot { meta: snap.meta.clone(), snapshot: Box::new(Cursor::new(snap.data.clone())) };
        *self.sm.sh.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = Some(snap);
        Ok(out)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId<NodeId>>, Membership), SE> {
        let sh = self.sh.clone();
        blocking(move || {
            let cur = sh.cur.read().unwrap_or_else(|p| p.into_inner());
            read_applied(&cur).map(|(_, a, m)| (a, m))
        })
        .await
        .map_err(|e| StorageIOError::read_state_machine(any(e)).into())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, SE>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        let me = self.clone();
        blocking(move || me.apply_blocking(entries))
            .await
            .map_err(|e| StorageIOError::write_state_machine(any(e)).into())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder { sm: self.clone() }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, SE> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), SE> {
        let (me, m, data) = (self.clone(), meta.clone(), snapshot.into_inner());
        let sig = meta.signature();
        blocking(move || me.install_blocking(m, data))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(sig), any(e)).into())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, SE> {
        let g = self.sh.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        Ok(g.as_ref().map(|s| Snapshot { meta: s.meta.clone(), snapshot: Box::new(Cursor::new(s.data.clone())) }))
    }
}

/// Open a node's two stores under `data`: `data/log` and `data/sm`. A directory that is itself a
/// Jackdaw database (`data.jdb` in it) is refused: a node's files would go inside another
/// database's folder.
pub fn open_stores(data: &Path) -> Result<(LogStore, StateMachine), String> {
    if data.join("data.jdb").exists() {
        return Err("this is a Jackdaw database, not a node's data directory (which holds log/ and sm/): give the \
             node a directory of its own"
            .into());
    }
    if data.exists() && !data.is_dir() {
        return Err(format!("{} is a file; --data takes the node's directory (made if missing)", data.display()));
    }
    std::fs::create_dir_all(data).map_err(|e| format!("create {}: {e}", data.display()))?;
    let log = LogStore::open(data.join("log")).map_err(|e| format!("open log store: {e}"))?;
    let sm = match StateMachine::open(data.join("sm")) {
        Ok(sm) => sm,
        Err(e) => {
            let _ = log.close();
            return Err(format!("open state machine: {e}"));
        }
    };
    Ok((log, sm))
}
