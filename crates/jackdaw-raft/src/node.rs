//! A node: the Raft instance on the Jackdaw stores, its HTTP server (Raft RPCs and the client
//! API), and the client of that API.

use crate::network::Network;
use crate::store::{open_stores, LogStore, SmShared, StateMachine};
use crate::{NodeId, Raft, Request, Response, TypeConfig};
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::{ClientWriteError, InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, Config, ServerState, SnapshotPolicy};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How a node runs.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Node id (≥ 1).
    pub id: NodeId,
    /// Listen address, `127.0.0.1:PORT`.
    pub addr: String,
    /// Data directory (`log/` and `sm/` inside).
    pub data: PathBuf,
    /// Build a snapshot every this many applied entries (and purge the log behind it).
    pub snapshot_logs: u64,
}

/// The reply of every client API call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Reply<T> {
    /// Done.
    Ok(T),
    /// This node is not the leader; the leader when known (id, address).
    NotLeader(Option<(NodeId, String)>),
    /// Failed.
    Error(String),
    /// Refused for what it asks (a key over the limit): no node takes it, so a client does not
    /// retry it.
    Refused(String),
}

impl<T> Reply<T> {
    /// The answer of a call any node serves itself (status, dump, check, init): a redirect to
    /// the leader is unexpected there.
    fn served(self) -> Result<T, String> {
        match self {
            Reply::Ok(t) => Ok(t),
            Reply::NotLeader(_) => Err("unexpected answer".into()),
            Reply::Error(e) | Reply::Refused(e) => Err(e),
        }
    }
}

/// An acknowledged write.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteAck {
    /// The entry's log index.
    pub index: u64,
    /// Its term (the leader's).
    pub term: u64,
    /// The leader that committed it.
    pub leader: NodeId,
    /// What the state machine returned.
    pub response: Response,
}

/// A node's state, as `status` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub id: NodeId,
    pub state: String,
    pub leader: Option<NodeId>,
    pub term: u64,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    pub snapshot_index: Option<u64>,
    pub purged_index: Option<u64>,
    pub voters: Vec<NodeId>,
    /// The voters' addresses, in `voters`' order (absent from an older node's answer).
    #[serde(default)]
    pub voter_addrs: Vec<String>,
    pub log_appends: u64,
    pub log_syncs: u64,
    pub snapshots_installed: u64,
}

/// The contents of a node's state machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dump {
    pub applied_index: Option<u64>,
    pub pairs: Vec<(String, String)>,
}

type Pending = (Request, tokio::sync::oneshot::Sender<Reply<WriteAck>>);

struct App {
    id: NodeId,
    batcher: tokio::sync::mpsc::Sender<Pending>,
    raft: Raft,
    sm: Arc<SmShared>,
    log: LogStore,
}

type St = State<Arc<App>>;

/// The Raft configuration of this crate's nodes (loopback timings).
pub fn raft_config(snapshot_logs: u64) -> Config {
    Config {
        cluster_name: "jackdaw".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(snapshot_logs),
        max_in_snapshot_log_to_keep: 0,
        install_snapshot_timeout: 5000,
        max_payload_entries: 1000,
        ..Default::default()
    }
}

async fn raft_append(
    State(a): St,
    Json(req): Json<AppendEntriesRequest<TypeConfig>>,
) -> Json<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> {
    Json(a.raft.append_entries(req).await)
}

async fn raft_vote(
    State(a): St,
    Json(req): Json<VoteRequest<NodeId>>,
) -> Json<Result<VoteResponse<NodeId>, RaftError<NodeId>>> {
    Json(a.raft.vote(req).await)
}

async fn raft_snapshot(
    State(a): St,
    Json(req): Json<InstallSnapshotRequest<TypeConfig>>,
) -> Json<Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>> {
    Json(a.raft.install_snapshot(req).await)
}

async fn api_write(State(a): St, Json(req): Json<Request>) -> Json<Reply<WriteAck>> {
    // A command the state machine would refuse never enters the log.
    if let Err(e) = req.check(a.sm.max_key()) {
        return Json(Reply::Refused(e));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if a.batcher.send((req, tx)).await.is_err() {
        return Json(Reply::Error("the node is shutting down".into()));
    }
    Json(rx.await.unwrap_or_else(|_| Reply::Error("the node is shutting down".into())))
}

/// Group commit for clients: the writes that arrive while one `client_write` is in flight go
/// together as one `Batch` entry (one log append, one sync, one replication round).
async fn batcher(raft: Raft, id: NodeId, mut rx: tokio::sync::mpsc::Receiver<Pending>) {
    // A few batches in flight: the next one is appended on the leader while the previous one
    // replicates (openraft keeps the log order; the responses say each write's own index).
    let in_flight = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    loop {
        let Ok(permit) = in_flight.clone().acquire_owned().await else { return };
        let Some(first) = rx.recv().await else { return };
        let mut group = vec![first];
        while group.len() < 1024 {
            match rx.try_recv() {
                Ok(p) => group.push(p),
                Err(_) => break,
            }
        }
        let req = if group.len() == 1 {
            group[0].0.clone()
        } else {
            Request::Batch { ops: group.iter().map(|p| p.0.clone()).collect() }
        };
        let single = group.len() == 1;
        let raft = raft.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match raft.client_write(req).await {
                Ok(r) => {
                    let ack = |response| WriteAck {
                        index: r.log_id.index,
                        term: r.log_id.leader_id.term,
                        leader: id,
                        response,
                    };
                    if single {
                        let (_, tx) = group.pop().unwrap();
                        let _ = tx.send(Reply::Ok(ack(r.data)));
                    } else {
                        let mut results = r.data.results.clone().into_iter();
                        for (_, tx) in group {
                            let _ = tx.send(Reply::Ok(ack(results.next().unwrap_or_default())));
                        }
                    }
                }
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                    let to = f.leader_id.zip(f.leader_node.map(|n| n.addr));
                    for (_, tx) in group {
                        let _ = tx.send(Reply::NotLeader(to.clone()));
                    }
                }
                Err(e) => {
                    for (_, tx) in group {
                        let _ = tx.send(Reply::Error(e.to_string()));
                    }
                }
            }
        });
    }
}

/// Batches in flight at once per leader (4 measured slower than 1: the batches get smaller).
const IN_FLIGHT: usize = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ReadReq {
    key: String,
}

/// A linearizable read: the leader confirms its leadership with a quorum (read index) and waits
/// until its state machine has applied up to that index, then reads.
async fn api_read(State(a): St, Json(req): Json<ReadReq>) -> Json<Reply<Option<String>>> {
    // The key a write of it would be refused for (no leader is asked).
    if let Err(e) = (Request::Delete { key: req.key.clone() }).check(a.sm.max_key()) {
        return Json(Reply::Refused(e));
    }
    match a.raft.ensure_linearizable().await {
        Ok(_) => {}
        Err(RaftError::APIError(openraft::error::CheckIsLeaderError::ForwardToLeader(f))) => {
            return Json(Reply::NotLeader(f.leader_id.zip(f.leader_node.map(|n| n.addr))))
        }
        Err(e) => return Json(Reply::Error(e.to_string())),
    }
    let sm = a.sm.clone();
    Json(match tokio::task::spawn_blocking(move || sm.get(&req.key)).await {
        Ok(Ok(v)) => Reply::Ok(v),
        Ok(Err(e)) => Reply::Error(e),
        Err(e) => Reply::Error(e.to_string()),
    })
}

async fn api_status(State(a): St) -> Json<Reply<Status>> {
    let m = a.raft.metrics().borrow().clone();
    let c = a.log.counters();
    Json(Reply::Ok(Status {
        id: a.id,
        state: format!("{:?}", m.state),
        leader: m.current_leader,
        term: m.current_term,
        last_log_index: m.last_log_index,
        applied_index: m.last_applied.map(|l| l.index),
        snapshot_index: m.snapshot.map(|l| l.index),
        purged_index: m.purged.map(|l| l.index),
        voters: m.membership_config.membership().voter_ids().collect(),
        voter_addrs: {
            let ms = m.membership_config.membership();
            ms.voter_ids().map(|id| ms.get_node(&id).map(|n| n.addr.clone()).unwrap_or_default()).collect()
        },
        log_appends: c.appends.load(std::sync::atomic::Ordering::Relaxed),
        log_syncs: c.syncs.load(std::sync::atomic::Ordering::Relaxed),
        snapshots_installed: a.sm.installed.load(std::sync::atomic::Ordering::Relaxed),
    }))
}

/// Local (not linearizable) dump of the state machine, for verification.
async fn api_dump(State(a): St) -> Json<Reply<Dump>> {
    let sm = a.sm.clone();
    Json(match tokio::task::spawn_blocking(move || sm.dump()).await {
        Ok(Ok((applied_index, pairs))) => Reply::Ok(Dump { applied_index, pairs }),
        Ok(Err(e)) => Reply::Error(e),
        Err(e) => Reply::Error(e.to_string()),
    })
}

/// `check()` of both environments.
async fn api_check(State(a): St) -> Json<Reply<String>> {
    let (sm, log) = (a.sm.clone(), a.log.clone());
    let r = tokio::task::spawn_blocking(move || -> Result<String, String> {
        log.env().check().and_then(|r| r.into_result()).map_err(|e| format!("log: {e}"))?;
        sm.check().map_err(|e| format!("state machine: {e}"))?;
        Ok("clean".into())
    })
    .await;
    Json(match r {
        Ok(Ok(s)) => Reply::Ok(s),
        Ok(Err(e)) => Reply::Error(e),
        Err(e) => Reply::Error(e.to_string()),
    })
}

async fn api_init(State(a): St, Json(members): Json<Vec<(NodeId, String)>>) -> Json<Reply<()>> {
    let nodes: BTreeMap<NodeId, BasicNode> = members.into_iter().map(|(id, addr)| (id, BasicNode { addr })).collect();
    Json(match a.raft.initialize(nodes).await {
        Ok(()) => Reply::Ok(()),
        Err(e) => Reply::Error(e.to_string()),
    })
}

/// Open the stores, start Raft and serve until SIGINT/SIGTERM (then shut down cleanly).
/// A member restarted under another address than the membership gives it is refused: its peers
/// would go on calling the old one, and it would stand for election forever, a candidate no one
/// answers. (`--addr` on all interfaces, `0.0.0.0:PORT`, matches any address with its port.)
fn same_address(sm: &StateMachine, id: NodeId, addr: &str) -> Result<(), String> {
    let Some(known) = sm.shared().member_addr(id)? else {
        return Ok(());
    };
    let same = match (known.parse::<std::net::SocketAddr>(), addr.parse::<std::net::SocketAddr>()) {
        (Ok(k), Ok(a)) => k == a || (a.ip().is_unspecified() && a.port() == k.port()),
        _ => known == addr,
    };
    if same {
        return Ok(());
    }
    Err(format!(
        "node {id} is at {known} in the cluster's membership, but --addr is {addr}: its peers would never reach it; start it with --addr {known}"
    ))
}

pub async fn serve(cfg: NodeConfig) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&cfg.addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", cfg.addr))?;
    let (data, id, addr) = (cfg.data.clone(), cfg.id, cfg.addr.clone());
    let (log, sm) = tokio::task::spawn_blocking(move || {
        let (log, sm) = open_stores(&data)?;
        if let Err(e) = log.claim(id).and_then(|()| same_address(&sm, id, &addr)) {
            let _ = log.close();
            let _ = sm.close();
            return Err(e);
        }
        Ok((log, sm))
    })
    .await?
    .map_err(|e| anyhow::anyhow!("{}: {e}", cfg.data.display()))?;
    let config = Arc::new(raft_config(cfg.snapshot_logs).validate()?);
    let shared = sm.shared();
    let raft = Raft::new(cfg.id, config, Network::new(), log.clone(), sm.clone()).await?;
    let (btx, brx) = tokio::sync::mpsc::channel(4096);
    tokio::spawn(batcher(raft.clone(), cfg.id, brx));
    let app = Arc::new(App { id: cfg.id, batcher: btx, raft: raft.clone(), sm: shared, log: log.clone() });
    let router = Router::new()
        .route("/raft/append", post(raft_append))
        .route("/raft/vote", post(raft_vote))
        .route("/raft/snapshot", post(raft_snapshot))
        .route("/api/write", post(api_write))
        .route("/api/read", post(api_read))
        .route("/api/status", get(api_status))
        .route("/api/dump", get(api_dump))
        .route("/api/check", post(api_check))
        .route("/api/init", post(api_init))
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
        .with_state(app);
    eprintln!("node {} serving on {} (data {})", cfg.id, cfg.addr, cfg.data.display());
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        })
        .await?;
    let _ = raft.shutdown().await;
    tokio::task::spawn_blocking(move || {
        let _ = log.close();
        let _ = sm.close();
    })
    .await?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Client

/// How long a client waits for a connection to a node.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// How a call to a node failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// No connection: the node is down or the address wrong.
    Unreachable,
    /// The request went out and no answer came in time.
    NoAnswer,
    /// Anything else (an HTTP error status, a bad answer).
    Other,
}

/// A client of the node API that follows the leader.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    nodes: Vec<String>,
    leader: Arc<std::sync::Mutex<Option<String>>>,
    rr: Arc<std::sync::atomic::AtomicUsize>,
    timeout: Duration,
}

impl Client {
    /// A client of the nodes at these addresses (`host:port`), each call bounded by `timeout`.
    /// An address given twice counts once.
    pub fn new(mut nodes: Vec<String>, timeout: Duration) -> Client {
        let mut seen = std::collections::HashSet::new();
        nodes.retain(|a| seen.insert(a.clone()));
        let http =
            reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).no_proxy().build().expect("reqwest client");
        Client {
            http,
            nodes,
            leader: Arc::new(std::sync::Mutex::new(None)),
            rr: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            timeout,
        }
    }

    /// One call to one node.
    pub async fn call<Req: Serialize, T: DeserializeOwned>(
        &self,
        addr: &str,
        path: &str,
        body: Option<&Req>,
    ) -> Result<Reply<T>, String> {
        self.call_within(addr, path, body, self.timeout).await.map_err(|(_, e)| e)
    }

    /// One call to one node, bounded by `timeout`; a failure says whether the node could not be
    /// reached, took the request without answering in time, or failed otherwise.
    async fn call_within<Req: Serialize, T: DeserializeOwned>(
        &self,
        addr: &str,
        path: &str,
        body: Option<&Req>,
        timeout: Duration,
    ) -> Result<Reply<T>, (Fault, String)> {
        let url = format!("http://{addr}{path}");
        let rb = match body {
            Some(b) => self.http.post(&url).json(b),
            None => self.http.get(&url),
        };
        let resp = rb.timeout(timeout).send().await.map_err(|e| {
            if e.is_connect() {
                (Fault::Unreachable, format!("cannot reach node at {addr}: connection refused or unreachable"))
            } else if e.is_timeout() {
                (Fault::NoAnswer, format!("node at {addr} did not answer within {timeout:.1?}"))
            } else {
                (Fault::Other, format!("request to {addr} failed: {e}"))
            }
        })?;
        if !resp.status().is_success() {
            return Err((Fault::Other, format!("node at {addr} answered {}", resp.status())));
        }
        resp.json().await.map_err(|e| (Fault::Other, format!("bad answer from {addr}: {e}")))
    }

    /// Send to the leader (found by asking, following `NotLeader`), trying every node, until
    /// `deadline` passes (no call is given longer than what is left of it, 100 ms at least).
    /// When it does, the error explains the last failure (`why_not`, 0.6 s at most more): that
    /// too many of the cluster's voters cannot be reached for a majority ("no quorum"), or
    /// that none of the nodes given can be, not merely what the last node tried said; and after
    /// a write a node took without answering, that it may still take effect.
    pub async fn leader_call<Req: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &Req,
        deadline: Duration,
    ) -> Result<T, String> {
        let start = std::time::Instant::now();
        let mut last_err = String::from("no node tried");
        // Whether a node took a write without answering in time (it may still apply it).
        let mut unanswered = false;
        // Each call starts its search at a different node (not always at the first, which may
        // be the dead one).
        let mut i = self.rr.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // At least one call, even with no time left (`--wait 0`).
        let mut first = true;
        while std::mem::take(&mut first) || start.elapsed() < deadline {
            let target = self
                .leader
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_else(|| self.nodes[i % self.nodes.len()].clone());
            let left = deadline.saturating_sub(start.elapsed()).max(Duration::from_millis(100));
            let within = self.timeout.min(left);
            match self.call_within::<Req, T>(&target, path, Some(body), within).await {
                Ok(Reply::Ok(v)) => return Ok(v),
                Ok(Reply::NotLeader(Some((_, addr)))) if !addr.is_empty() && addr != target => {
                    *self.leader.lock().unwrap_or_else(|p| p.into_inner()) = Some(addr);
                    continue;
                }
                Ok(Reply::NotLeader(_)) => {
                    last_err = format!(
                        "{target}: not the leader, no leader known (an election that did not end in time, or a \
                         cluster never formed: `jackdaw-raft init --nodes ...` forms it once)"
                    );
                }
                Ok(Reply::Error(e)) => last_err = format!("{target}: {e}"),
                Ok(Reply::Refused(e)) => return Err(format!("{target}: {e}")),
                Err((f, e)) => {
                    // A call cut before the connection could time out may not have connected.
                    unanswered |= f == Fault::NoAnswer && within > CONNECT_TIMEOUT;
                    last_err = e;
                }
            }
            {
                // Forget the leader only if it is still the one that failed: another writer may
                // have learnt the new one meanwhile (clearing it blindly sent every writer back
                // to the dead node: 786 refused connections in one demo run).
                let mut l = self.leader.lock().unwrap_or_else(|p| p.into_inner());
                if l.as_deref() == Some(target.as_str()) {
                    *l = None;
                }
            }
            i += 1;
            tokio::time::sleep(Duration::from_millis(50).min(deadline.saturating_sub(start.elapsed()))).await;
        }
        let write = path == "/api/write";
        let mut msg = self.why_not(write).await.map_or(last_err.clone(), |why| format!("{why}; last: {last_err}"));
        if unanswered && write {
            msg.push_str(
                " (a node took the write without answering in time: it may still take effect, \
                 for instance once a majority is back; read the key to know)",
            );
        }
        Err(msg)
    }

    /// For the error of a `leader_call` that ran out of time: when the cause is that no majority
    /// of the cluster's voters can be reached, or that no node given can be, say so. Every node
    /// given is asked for its status, then every voter its membership names that was not given
    /// (`PROBE` each round, all at once: a refused connection fails at once). `None` when the
    /// voters that answer are a majority (the last failure is the story then), or when no node
    /// answers but one could not be told apart from a slow one.
    async fn why_not(&self, write: bool) -> Option<String> {
        let what = if write { "write" } else { "linearizable read" };
        let given = self.probe(&self.nodes).await;
        let voters = given.iter().find_map(|(_, r)| r.as_ref().ok().filter(|s| !s.voter_addrs.is_empty()).cloned());
        let Some(status) = voters else {
            let refused =
                given.len() == self.nodes.len() && given.iter().all(|(_, r)| matches!(r, Err(Fault::Unreachable)));
            return refused.then(|| {
                format!("none of the {} nodes given can be reached ({})", self.nodes.len(), self.nodes.join(", "))
            });
        };
        let members = status.voter_addrs;
        let more: Vec<String> = members.iter().filter(|a| !self.nodes.contains(a)).cloned().collect();
        let mut seen = given;
        seen.extend(self.probe(&more).await);
        let down: Vec<&str> = members
            .iter()
            .filter(|a| seen.iter().any(|(x, r)| x == *a && matches!(r, Err(Fault::Unreachable))))
            .map(|a| a.as_str())
            .collect();
        let (n, majority) = (members.len(), members.len() / 2 + 1);
        (n - down.len() < majority).then(|| {
            format!(
                "no quorum: {} of the cluster's {n} voters cannot be reached ({}), and a {what} needs {majority} of {n}",
                down.len(),
                down.join(", ")
            )
        })
    }

    /// Each of `addrs`' status, or how asking failed, within `PROBE`.
    async fn probe(&self, addrs: &[String]) -> Vec<(String, Result<Status, Fault>)> {
        const PROBE: Duration = Duration::from_millis(300);
        let mut probes = tokio::task::JoinSet::new();
        for a in addrs {
            let (c, a) = (self.clone(), a.clone());
            probes.spawn(async move {
                let r = match c.call_within::<(), Status>(&a, "/api/status", None, PROBE).await {
                    Ok(Reply::Ok(s)) => Ok(s),
                    Ok(_) => Err(Fault::Other),
                    // Cut before the connection could time out: not known to be unreachable.
                    Err((Fault::NoAnswer, _)) => Err(Fault::Other),
                    Err((f, _)) => Err(f),
                };
                (a, r)
            });
        }
        let mut out = Vec::new();
        let _ = tokio::time::timeout(PROBE, async {
            while let Some(Ok(r)) = probes.join_next().await {
                out.push(r);
            }
        })
        .await;
        out
    }

    /// Write one command through the leader.
    pub async fn write(&self, req: &Request, deadline: Duration) -> Result<WriteAck, String> {
        self.leader_call("/api/write", req, deadline).await
    }

    /// Linearizable read through the leader.
    pub async fn read(&self, key: &str, deadline: Duration) -> Result<Option<String>, String> {
        self.leader_call("/api/read", &ReadReq { key: key.to_string() }, deadline).await
    }

    /// A node's status.
    pub async fn status(&self, addr: &str) -> Result<Status, String> {
        self.call::<(), Status>(addr, "/api/status", None).await?.served()
    }

    /// A node's state machine contents.
    pub async fn dump(&self, addr: &str) -> Result<Dump, String> {
        self.call::<(), Dump>(addr, "/api/dump", None).await?.served()
    }

    /// Run `check()` on a node's environments.
    pub async fn check(&self, addr: &str) -> Result<(), String> {
        self.call::<(), String>(addr, "/api/check", Some(&())).await?.served().map(|_| ())
    }

    /// Initialize a cluster of these members through node `addr`.
    pub async fn init(&self, addr: &str, members: &[(NodeId, String)]) -> Result<(), String> {
        self.call::<_, ()>(addr, "/api/init", Some(&members.to_vec())).await?.served()
    }
}

/// Whether a status is a leader's.
pub fn is_leader(s: &Status) -> bool {
    s.state == format!("{:?}", ServerState::Leader)
}
