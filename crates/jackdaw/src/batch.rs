//! Write batches and the transaction merger.
//!
//! Callers on any thread build a [`WriteBatch`] and hand it to `Env::write_batch` (or
//! `write_batch_async`). One merger thread drains the queue: it applies as many batches as fit
//! under a size bound to one write transaction, prepares it (the writer lock is released and the
//! pages are published invisibly), and hands it to a committer thread, which writes the record
//! and wakes that transaction's waiters. While the committer writes transaction N, the merger is
//! already filling N+1 with the batches that arrive meanwhile (pipelined commit); it closes N+1
//! when the committer is free or the size bound is reached.
//!
//! Each waiter has its own one-shot channel, so waking the waiters of a transaction does not
//! serialize them on one mutex. A batch is validated (trees exist and are of the right kind,
//! keys and values fit) before any of it is applied, so a bad batch fails alone; a failure of the
//! transaction itself (I/O) fails every batch in it, and poisons the environment, which fails the
//! transactions prepared after it too.

use crate::api::{check_key, check_value_len, Tree, WriteTxn};
use crate::sync::mpsc::{self, Receiver, SyncSender};
use crate::sync::thread::JoinHandle;
use crate::sync::{AtomicBool, AtomicUsize, Condvar, Mutex};
use crate::tree::node::max_key_size;
use crate::txn::core::Core;
use crate::txn::write::Prepared;
use crate::typed::{AsKey, AsValue, Key, TypedTree, Value};
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bytes of keys and values merged into one transaction at most.
const MAX_TX_BYTES: usize = 16 << 20;

enum Op {
    Put(Tree, Vec<u8>, Vec<u8>),
    Delete(Tree, Vec<u8>),
    MultiPut(Tree, Vec<u8>, Vec<u8>),
    MultiDelete(Tree, Vec<u8>, Vec<u8>),
}

/// A tree handle a [`WriteBatch`] names, with how it encodes keys of type `Q`: a [`Tree`] takes
/// any `Q: AsRef<[u8]>` as it is; a [`TypedTree<K, V>`] takes `&Q` with `Q: AsKey<K>` and
/// encodes it.
pub trait BatchKey<Q> {
    /// The bytes-level handle.
    fn handle(&self) -> &Tree;
    /// The key as stored.
    fn batch_key(&self, key: Q) -> Vec<u8>;
}

/// How a tree handle encodes values of type `Q` in a [`WriteBatch`] (see [`BatchKey`]).
pub trait BatchValue<Q> {
    /// The value as stored (only serde encodings can fail).
    fn batch_value(&self, value: Q) -> Result<Vec<u8>>;
}

impl<Q: AsRef<[u8]>> BatchKey<Q> for Tree {
    fn handle(&self) -> &Tree {
        self
    }
    fn batch_key(&self, key: Q) -> Vec<u8> {
        key.as_ref().to_vec()
    }
}

impl<Q: AsRef<[u8]>> BatchValue<Q> for Tree {
    fn batch_value(&self, value: Q) -> Result<Vec<u8>> {
        Ok(value.as_ref().to_vec())
    }
}

impl<K: Key, V: Value, Q: AsKey<K> + ?Sized> BatchKey<&Q> for TypedTree<K, V> {
    fn handle(&self) -> &Tree {
        self.tree()
    }
    fn batch_key(&self, key: &Q) -> Vec<u8> {
        let mut out = Vec::new();
        key.encode_key(&mut out);
        out
    }
}

impl<K: Key, V: Value, Q: AsValue<V> + ?Sized> BatchValue<&Q> for TypedTree<K, V> {
    fn batch_value(&self, value: &Q) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        value.encode_value(&mut out)?;
        Ok(out)
    }
}

/// An owned list of operations on trees, applied atomically (all or nothing). Built on any
/// thread without touching the environment. Trees are named by handle, as in transactions: a
/// bytes-level [`Tree`] (`batch.put(&tree, b"k", b"v")`) or a [`TypedTree`]
/// (`batch.put(&albums, &("Pearl Jam", 1991), "Ten")`). A handle to a tree deleted before the
/// batch is applied fails the batch (alone) with `Error::NoSuchTree`.
///
/// ```
/// use jackdaw::{Env, Options, TypedTree, WriteBatch};
/// # let dir = std::env::temp_dir().join(format!("jackdaw-batch-doc-{}", std::process::id()));
/// let env = Env::open(&dir, Options::default())?;
/// let mut tx = env.write()?;
/// let raw = tx.create_tree("raw")?;
/// let years: TypedTree<String, u16> = tx.create_typed("years")?;
/// tx.commit()?;
/// let mut batch = WriteBatch::new();
/// batch.put(&raw, b"k", b"v");
/// batch.put(&years, "Ten", &1991);
/// env.write_batch(batch)?;
/// let rtx = env.read()?;
/// assert_eq!(years.get(&rtx, "Ten")?, Some(1991));
/// assert_eq!(rtx.get(&raw, b"k")?.unwrap().as_ref(), b"v");
/// # drop(rtx); drop(env); std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct WriteBatch {
    ops: Vec<Op>,
    bytes: usize,
    /// The first value that failed to encode: the batch fails with it when applied.
    error: Option<Error>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }
    fn push(&mut self, op: Op, bytes: usize) {
        self.bytes += bytes;
        self.ops.push(op);
    }
    fn value<T: BatchValue<QV>, QV>(&mut self, tree: &T, value: QV) -> Vec<u8> {
        tree.batch_value(value).unwrap_or_else(|e| {
            self.error.get_or_insert(e);
            Vec::new()
        })
    }
    /// Insert or replace `key` in plain tree `tree`.
    pub fn put<T: BatchKey<QK> + BatchValue<QV>, QK, QV>(&mut self, tree: &T, key: QK, value: QV) {
        let (k, v) = (tree.batch_key(key), self.value(tree, value));
        let n = k.len() + v.len();
        self.push(Op::Put(tree.handle().clone(), k, v), n);
    }
    /// Delete `key` from plain tree `tree`.
    pub fn delete<T: BatchKey<QK>, QK>(&mut self, tree: &T, key: QK) {
        let k = tree.batch_key(key);
        let n = k.len();
        self.push(Op::Delete(tree.handle().clone(), k), n);
    }
    /// Add `value` to `key` in multi-value tree `tree`.
    pub fn multi_put<T: BatchKey<QK> + BatchValue<QV>, QK, QV>(&mut self, tree: &T, key: QK, value: QV) {
        let (k, v) = (tree.batch_key(key), self.value(tree, value));
        let n = k.len() + v.len();
        self.push(Op::MultiPut(tree.handle().clone(), k, v), n);
    }
    /// Remove `value` from `key` in multi-value tree `tree`.
    pub fn multi_delete<T: BatchKey<QK> + BatchValue<QV>, QK, QV>(&mut self, tree: &T, key: QK, value: QV) {
        let (k, v) = (tree.batch_key(key), self.value(tree, value));
        let n = k.len() + v.len();
        self.push(Op::MultiDelete(tree.handle().clone(), k, v), n);
    }
    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// True if the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Waits for one submitted batch.
pub struct BatchHandle {
    rx: Receiver<Result<()>>,
    /// The environment, to refuse a wait that could never end.
    core: Option<Arc<Core>>,
}

impl BatchHandle {
    pub(crate) fn ready(rx: Receiver<Result<()>>) -> BatchHandle {
        BatchHandle { rx, core: None }
    }

    pub(crate) fn of(mut self, core: &Arc<Core>) -> BatchHandle {
        self.core = Some(core.clone());
        self
    }

    /// Block until the batch is committed with the environment's durability (or failed).
    ///
    /// On a thread that holds the environment's write transaction (or runs its `check`), the
    /// merger can never take the writer lock this thread holds: unless the outcome is already
    /// known, this returns `Error::Busy` at once instead of waiting forever. The batch stays
    /// queued and commits once that transaction ends; its outcome is then not reported.
    pub fn wait(self) -> Result<()> {
        if let Some(core) = &self.core {
            if crate::txn::write::held_by_this_thread(core) || crate::txn::write::checking_on_this_thread(core) {
                return match self.rx.try_recv() {
                    Ok(r) => r,
                    Err(mpsc::TryRecvError::Disconnected) => Err(Error::Closed),
                    Err(mpsc::TryRecvError::Empty) => Err(Error::Busy(
                        "this thread holds the write transaction the batch needs; waiting would never end \
                         (the batch stays queued and commits after that transaction)",
                    )),
                };
            }
        }
        self.rx.recv().unwrap_or(Err(Error::Closed))
    }
}

/// A queued batch and how its caller is told the outcome.
struct Pending<W = SyncSender<Result<()>>> {
    batch: WriteBatch,
    done: W,
}

/// Take queued batches from the front while the transaction holds less than `MAX_TX_BYTES`
/// (`bytes` so far).
fn take<W>(q: &mut VecDeque<Pending<W>>, bytes: &mut usize) -> Vec<Pending<W>> {
    let mut out = Vec::new();
    while *bytes < MAX_TX_BYTES {
        let Some(p) = q.pop_front() else { break };
        *bytes += p.batch.bytes;
        out.push(p);
    }
    out
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Pending>,
    stop: bool,
    /// Prepared transactions handed to the committer and not finished.
    in_flight: usize,
}

pub(crate) struct Merger {
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// The merger's threads, owned by the `Env` handle.
pub(crate) struct MergerThreads {
    merger: Arc<Merger>,
    threads: Vec<JoinHandle<()>>,
}

impl MergerThreads {
    pub(crate) fn start(core: &Arc<Core>) -> Result<MergerThreads> {
        let merger = Arc::new(Merger { queue: Mutex::new(Queue::default()), cv: Condvar::new() });
        let (tx, rx) = mpsc::channel::<(Prepared, Vec<SyncSender<Result<()>>>)>();
        let m = merger.clone();
        let committer = crate::sync::thread::Builder::new()
            .name("jackdaw-committer".into())
            .spawn(move || {
                for (prepared, waiters) in rx {
                    let r = prepared.finish().map(|_| ());
                    for w in waiters {
                        let _ = w.send(r.clone());
                    }
                    let mut q = m.queue.lock();
                    q.in_flight -= 1;
                    m.cv.notify_all();
                }
            })
            .map_err(|e| Error::io("start committer thread", e))?;
        let (m, c) = (merger.clone(), core.clone());
        let merger_thread = crate::sync::thread::Builder::new()
            .name("jackdaw-merger".into())
            .spawn(move || run(&c, &m, tx))
            .map_err(|e| Error::io("start merger thread", e))?;
        Ok(MergerThreads { merger, threads: vec![merger_thread, committer] })
    }

    pub(crate) fn submit(&self, batch: WriteBatch) -> BatchHandle {
        let (done, rx) = mpsc::sync_channel(1);
        let mut q = self.merger.queue.lock();
        if q.stop {
            let _ = done.send(Err(Error::Closed));
        } else {
            q.items.push_back(Pending { batch, done });
            self.merger.cv.notify_all();
        }
        BatchHandle { rx, core: None }
    }

    /// Whether nothing is queued and no merged transaction is being committed.
    pub(crate) fn idle(&self) -> bool {
        let q = self.merger.queue.lock();
        q.items.is_empty() && q.in_flight == 0 && !q.stop
    }

    /// Commit what is queued, then stop both threads.
    pub(crate) fn stop(self) {
        self.merger.queue.lock().stop = true;
        self.merger.cv.notify_all();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn run(core: &Arc<Core>, m: &Merger, committer: mpsc::Sender<(Prepared, Vec<SyncSender<Result<()>>>)>) {
    loop {
        if !wait_for_batches(m) {
            return;
        }
        let mut tx = match WriteTxn::begin(core, true) {
            Ok(tx) => tx,
            Err(e) => {
                fail_all(m, &e);
                continue;
            }
        };
        let (waiters, failed) = fill_transaction(core, m, &mut tx);
        if let Some(e) = failed {
            for w in waiters {
                let _ = w.send(Err(e.clone()));
            }
            continue;
        }
        if waiters.is_empty() {
            continue;
        }
        prepare_and_hand_over(m, &committer, tx, waiters);
    }
}

/// Wait until batches are queued or the merger stops; false when it stops with nothing queued.
fn wait_for_batches(m: &Merger) -> bool {
    let mut q = m.queue.lock();
    m.cv.wait_while(&mut q, |q| q.items.is_empty() && !q.stop);
    !(q.items.is_empty() && q.stop)
}

/// Apply queued batches to `tx` (each validated first; a batch that fails validation fails
/// alone) up to `MAX_TX_BYTES`, and keep filling while the committer is busy with the previous
/// transaction. Returns the waiters of the applied batches and, if applying one failed, the
/// error (the transaction is then in an unknown state: every batch in it fails).
fn fill_transaction(core: &Arc<Core>, m: &Merger, tx: &mut WriteTxn) -> (Vec<SyncSender<Result<()>>>, Option<Error>) {
    let mut waiters = Vec::new();
    let mut bytes = 0usize;
    let mut failed: Option<Error> = None;
    loop {
        let taken = take(&mut m.queue.lock().items, &mut bytes);
        let taken = taken.into_iter().map(|p| (p.batch, p.done));
        apply_each(core, tx, taken, &mut waiters, &mut failed, |w, e| {
            let _ = w.send(Err(e));
        });
        if bytes >= MAX_TX_BYTES || failed.is_some() {
            break;
        }
        // Keep filling while the committer is busy with the previous transaction.
        let mut q = m.queue.lock();
        if q.items.is_empty() {
            if q.in_flight == 0 || q.stop {
                break;
            }
            m.cv.wait_while(&mut q, |q| q.items.is_empty() && q.in_flight > 0 && !q.stop);
            if q.items.is_empty() {
                break;
            }
        }
    }
    (waiters, failed)
}

/// Apply `batches` to `tx`, each validated first: one that fails validation fails alone (`fail`
/// gets its waiter and the error) and changes nothing; the waiters of applied ones go to
/// `waiters`. Once applying one failed (`failed` set: the transaction is in an unknown state),
/// the rest fail with that error.
fn apply_each<W>(
    core: &Arc<Core>,
    tx: &mut WriteTxn,
    batches: impl Iterator<Item = (WriteBatch, W)>,
    waiters: &mut Vec<W>,
    failed: &mut Option<Error>,
    fail: impl Fn(W, Error),
) {
    for (batch, w) in batches {
        if let Some(e) = failed {
            fail(w, e.clone());
            continue;
        }
        match validate(tx, core.db_id(), &batch) {
            Err(e) => fail(w, e),
            Ok(()) => match apply(tx, batch) {
                Ok(()) => waiters.push(w),
                Err(e) => {
                    // The transaction is in an unknown state: fail everything in it.
                    fail(w, e.clone());
                    *failed = Some(e);
                }
            },
        }
    }
}

/// Prepare `tx` and hand it with its waiters to the committer thread (counted in flight until
/// it is done); if the committer is gone, the waiters get `Error::Closed`; if the prepare
/// fails, its error.
fn prepare_and_hand_over(
    m: &Merger,
    committer: &mpsc::Sender<(Prepared, Vec<SyncSender<Result<()>>>)>,
    tx: WriteTxn,
    waiters: Vec<SyncSender<Result<()>>>,
) {
    match tx.prepare() {
        Ok(p) => {
            m.queue.lock().in_flight += 1;
            if let Err(mpsc::SendError((p, ws))) = committer.send((p, waiters)) {
                drop(p);
                for w in ws {
                    let _ = w.send(Err(Error::Closed));
                }
                m.queue.lock().in_flight -= 1;
            }
        }
        Err(e) => {
            for w in waiters {
                let _ = w.send(Err(e.clone()));
            }
        }
    }
}

fn fail_all(m: &Merger, e: &Error) {
    let items: Vec<Pending> = m.queue.lock().items.drain(..).collect();
    for p in items {
        let _ = p.done.send(Err(e.clone()));
    }
}

/// Commit `batch` on the calling thread in a write transaction of its own, as the merger would
/// alone (validated first, so a bad batch changes nothing), when the writer is free (or, with
/// `wait`, once it is): `Err(batch)` back when it is not (another writer, or the transaction
/// could not begin). One caller's batches then cost no hand-over between threads (the merger's
/// three wake-ups a batch, ~150 us on a 2-core VM: 5.8 k single-record batches/s in `Buffered`
/// against 43.8 k write transactions/s). `Sync` commits keep the merger, where concurrent
/// callers share one sync.
fn commit_here(core: &Arc<Core>, batch: WriteBatch, wait: bool) -> std::result::Result<Result<()>, WriteBatch> {
    let Ok(mut tx) = WriteTxn::begin(core, wait) else {
        return Err(batch);
    };
    Ok(validate(&mut tx, core.db_id(), &batch)
        .and_then(|()| apply(&mut tx, batch))
        .and_then(|()| tx.commit().map(|_| ())))
}

/// What a caller waiting in a [`Group`] is told: its batch's outcome, or that it leads now.
enum Turn {
    Done(Result<()>),
    Lead,
}

/// `write_batch` on the callers' own threads when commits are not `Sync` (`commit`): alone when
/// the writer is free, else waiting for its mutex (at most `DIRECT_MAX` callers), else in a
/// group. A caller that joins a group queues its batch; one of them leads: it waits for the
/// writer, takes every batch queued by then (up to `MAX_TX_BYTES`), commits them in one
/// transaction, tells each caller its outcome, and passes the lead to the first caller still
/// waiting. A caller that follows costs one wake-up (its outcome), a group one more (the lead),
/// on threads that were going to run anyway; the merger's path costs three wake-ups a batch on
/// two threads of its own.
///
/// Invariant: while a batch waits, some caller leads (`leading`) and will take it: the lead
/// passes on under the lock, and on a leader's panic too (`PassOn`). Every waiting caller gets
/// exactly one `Done`.
#[derive(Default)]
pub(crate) struct Group {
    /// Callers that met a busy writer and wait for its mutex themselves: at most `DIRECT_MAX`.
    direct: AtomicUsize,
    /// The callers' batches, in the order they came.
    waiting: Mutex<VecDeque<Pending<SyncSender<Turn>>>>,
    /// A caller leads: it is committing, or it was told to lead and will take the waiting
    /// batches. Changed only under `waiting`'s lock; read without it by `idle` (a line every
    /// caller reads and no caller writes while no group forms).
    leading: AtomicBool,
}

impl Group {
    /// Commit `batch` on the calling thread (`Env::write_batch` when commits are not `Sync` and
    /// the merger is idle): at once when the writer is free and no group leads; else, up to
    /// `DIRECT_MAX` callers wait for the writer mutex themselves (one wake-up each, and the caller
    /// holding it is usually running); more, and the mutex makes a convoy (one commit a batch and
    /// a thread switch each: YCSB A at 16 threads fell from ~120 k to ~40 k ops/s), so the others
    /// join the group. While a group leads, new callers join it rather than race it for the
    /// mutex. (The merger's path costs three wake-ups a batch, on threads that need a processor
    /// of their own: YCSB D at 2 threads ran no faster than at 1 that way.)
    pub(crate) fn commit(&self, core: &Arc<Core>, batch: WriteBatch) -> Result<()> {
        if !self.idle() {
            return self.join(core, batch);
        }
        let batch = match commit_here(core, batch, false) {
            Ok(r) => return r,
            Err(batch) => batch,
        };
        let r = if self.direct.fetch_add(1, Ordering::SeqCst) < DIRECT_MAX {
            commit_here(core, batch, true)
        } else {
            Err(batch)
        };
        self.direct.fetch_sub(1, Ordering::SeqCst);
        match r {
            Ok(r) => r,
            Err(batch) => self.join(core, batch),
        }
    }

    /// Queue `batch` and wait for its outcome, leading a group when it is this caller's turn.
    fn join(&self, core: &Arc<Core>, batch: WriteBatch) -> Result<()> {
        let (turn, rx) = mpsc::sync_channel(1);
        let mut lead = {
            let mut w = self.waiting.lock();
            w.push_back(Pending { batch, done: turn });
            !self.leading.swap(true, Ordering::AcqRel)
        };
        loop {
            if lead {
                // This caller's batch is in the group it leads (it waits at the front when told
                // to lead, and a leader takes the front first): its outcome follows.
                self.lead(core);
            }
            match rx.recv() {
                Ok(Turn::Done(r)) => return r,
                Ok(Turn::Lead) => lead = true,
                Err(_) => return Err(Error::Closed),
            }
        }
    }

    /// Whether no caller leads (no batch waits): a new caller may try the writer at once.
    /// While one leads, new callers queue behind it rather than race it for the writer mutex
    /// (each commit of a caller that won the race wakes the leader parked on the mutex).
    fn idle(&self) -> bool {
        !self.leading.load(Ordering::Acquire)
    }

    /// Batches queued and not yet taken by a leader (tests).
    pub(crate) fn queued(&self) -> usize {
        self.waiting.lock().len()
    }

    /// Lead: commit groups (`commit_group`) while batches wait, up to `LEAD_GROUPS` of them (a
    /// leader is running already: waking another to take the next group costs a thread switch,
    /// a long one when the processors are shared by more threads than they run), then pass the
    /// lead on.
    fn lead(&self, core: &Arc<Core>) {
        let pass_on = PassOn(self);
        for _ in 0..LEAD_GROUPS {
            self.commit_group(core);
            let w = self.waiting.lock();
            if w.is_empty() {
                self.leading.store(false, Ordering::Release);
                std::mem::forget(pass_on);
                return;
            }
        }
    }

    /// Wait for the writer, take the waiting batches, commit them, tell each caller.
    fn commit_group(&self, core: &Arc<Core>) {
        let tx = WriteTxn::begin(core, true);
        let taken = take(&mut self.waiting.lock(), &mut 0);
        fn done(w: SyncSender<Turn>, r: Result<()>) {
            let _ = w.send(Turn::Done(r));
        }
        let mut tx = match tx {
            Ok(tx) => tx,
            Err(e) => {
                for p in taken {
                    done(p.done, Err(e.clone()));
                }
                return;
            }
        };
        let mut waiters = Vec::new();
        let mut failed = None;
        apply_each(core, &mut tx, taken.into_iter().map(|p| (p.batch, p.done)), &mut waiters, &mut failed, |w, e| {
            done(w, Err(e))
        });
        let r = match failed {
            Some(e) => Err(e),
            None if waiters.is_empty() => return,
            None => tx.commit().map(|_| ()),
        };
        for w in waiters {
            done(w, r.clone());
        }
    }
}

/// `write_batch` callers that meet a busy writer and wait for its mutex on their own thread at
/// most at once (the rest join the group). One was too few: a caller that met the writer busy
/// while that one was still committing went to the merger (YCSB A at 2 threads 137–140 k ops/s
/// with one, 148–151 k with two, F 113–124 k → 138–146 k); every caller was far too many (a
/// convoy on the writer mutex). With groups, 1 and 2 measure the same within noise.
const DIRECT_MAX: usize = 2;

/// Groups a leader commits at most before it passes the lead on (its own caller waits that long
/// for its return). YCSB A, B and F at 4, 8 and 16 threads (`Buffered`), 16 against 1 (pass on
/// after every group), two alternated rounds: A 138–153 k ops/s against 108–136 k, B 556–638 k
/// against 466–632 k, F 137–147 k against 108–130 k. Under shuttle, 1: the schedules then cover
/// the hand-over (`PassOn`) with a few batches.
const LEAD_GROUPS: usize = if cfg!(feature = "shuttle") { 1 } else { 16 };

/// Passes a group's lead on when its leader is done (or unwinds): to the first caller still
/// waiting, or to none (`leading` cleared) when no batch waits.
struct PassOn<'a>(&'a Group);

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        let mut w = self.0.waiting.lock();
        while let Some(first) = w.front() {
            if first.done.send(Turn::Lead).is_ok() {
                return;
            }
            // Its caller is gone (it cannot be: it waits for its outcome); never leave a batch
            // without a leader.
            w.pop_front();
        }
        self.0.leading.store(false, Ordering::Release);
    }
}

/// Everything that could make a batch fail halfway, checked before any of it is applied.
fn validate(tx: &mut WriteTxn, db_id: u64, b: &WriteBatch) -> Result<()> {
    if let Some(e) = &b.error {
        return Err(e.clone());
    }
    let ps = tx.page_size();
    let mut seen: Vec<u64> = Vec::new();
    for op in &b.ops {
        let (tree, key, multi) = match op {
            Op::Put(t, k, v) => {
                check_value_len(v.len() as u64)?;
                (t, k, false)
            }
            Op::Delete(t, k) => (t, k, false),
            Op::MultiPut(t, k, v) | Op::MultiDelete(t, k, v) => {
                let max = max_key_size(ps);
                if v.len() > max {
                    return Err(Error::ValueTooLarge {
                        len: v.len() as u64,
                        max: max as u64,
                        limit: crate::error::Limit::MultiValue,
                    });
                }
                (t, k, true)
            }
        };
        if multi {
            crate::api::write::check_multi_key(key, ps)?;
        } else {
            check_key(key, ps)?;
        }
        if tree.db_id != db_id {
            return Err(Error::Invalid(format!("tree {}: a handle of another environment", tree.name())));
        }
        if !seen.contains(&tree.id) {
            // The tree exists in this transaction (`NoSuchTree` for a deleted tree's handle).
            tx.tree_stats(tree)?;
            seen.push(tree.id);
        }
        if tree.is_multi() != multi {
            return Err(Error::WrongTreeKind(tree.name().to_string()));
        }
    }
    Ok(())
}

fn apply(tx: &mut WriteTxn, b: WriteBatch) -> Result<()> {
    for op in b.ops {
        match op {
            Op::Put(t, k, v) => tx.put(&t, k, v)?,
            Op::Delete(t, k) => {
                tx.delete(&t, k)?;
            }
            Op::MultiPut(t, k, v) => {
                tx.multi_put(&t, k, v)?;
            }
            Op::MultiDelete(t, k, v) => {
                tx.multi_delete(&t, k, v)?;
            }
        }
    }
    Ok(())
}
