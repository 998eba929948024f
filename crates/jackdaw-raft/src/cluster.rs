//! A three-node cluster of `jackdaw-raft serve` processes on loopback, and the fault scenarios
//! the `demo` command and the fault tests run on it.

use crate::node::{is_leader, Client, Status};
use crate::{NodeId, Request};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct NodeProc {
    id: NodeId,
    addr: String,
    data: PathBuf,
    child: Option<Child>,
}

/// Three node processes; dropping it kills them (SIGKILL) and reaps them.
pub struct Cluster {
    exe: PathBuf,
    dir: PathBuf,
    nodes: Vec<NodeProc>,
    snapshot_logs: u64,
    /// Fault tests: make snapshot installs announce themselves and pause this long.
    pub install_delay_ms: Option<u64>,
    /// A client of all nodes.
    pub client: Client,
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Cluster {
    /// Start `n` nodes of binary `exe` with data under `dir`, and form the cluster.
    pub async fn start(exe: &Path, dir: &Path, n: usize, snapshot_logs: u64) -> Result<Cluster, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let mut nodes = Vec::new();
        for id in 1..=n as NodeId {
            let port = free_port().map_err(|e| format!("no free port: {e}"))?;
            nodes.push(NodeProc {
                id,
                addr: format!("127.0.0.1:{port}"),
                data: dir.join(format!("node-{id}")),
                child: None,
            });
        }
        let addrs = nodes.iter().map(|n| n.addr.clone()).collect();
        let mut c = Cluster {
            exe: exe.to_path_buf(),
            dir: dir.to_path_buf(),
            nodes,
            snapshot_logs,
            install_delay_ms: None,
            client: Client::new(addrs, Duration::from_secs(3)),
        };
        for i in 0..n {
            c.spawn(i)?;
        }
        for i in 0..n {
            c.wait_up(i, Duration::from_secs(20)).await?;
        }
        let members: Vec<(NodeId, String)> = c.nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
        c.client.init(&c.nodes[0].addr, &members).await.map_err(|e| format!("initialize: {e}"))?;
        c.wait_leader(None, Duration::from_secs(20)).await?;
        Ok(c)
    }

    /// The node addresses.
    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr.clone()).collect()
    }

    fn spawn(&mut self, i: usize) -> Result<(), String> {
        let n = &mut self.nodes[i];
        let log_path = self.dir.join(format!("node-{}.log", n.id));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("open {}: {e}", log_path.display()))?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&self.exe);
        if let Some(ms) = self.install_delay_ms {
            cmd.env("JACKDAW_RAFT_TEST_INSTALL_DELAY_MS", ms.to_string());
        }
        let child = cmd
            .arg("serve")
            .args(["--id", &n.id.to_string(), "--addr", &n.addr])
            .arg("--data")
            .arg(&n.data)
            .args(["--snapshot-logs", &self.snapshot_logs.to_string()])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.exe.display()))?;
        n.child = Some(child);
        Ok(())
    }

    async fn wait_up(&mut self, i: usize, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if let Some(c) = self.nodes[i].child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!(
                        "node {} exited at start ({st}); see {}",
                        self.nodes[i].id,
                        self.dir.join(format!("node-{}.log", self.nodes[i].id)).display()
                    ));
                }
            }
            if self.client.status(&self.nodes[i].addr).await.is_ok() {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!("node {} did not come up within {limit:?}", self.nodes[i].id));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Statuses of the running nodes (index, status).
    pub async fn statuses(&self) -> Vec<(usize, Status)> {
        let mut out = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_some() {
                if let Ok(s) = self.client.status(&n.addr).await {
                    out.push((i, s));
                }
            }
        }
        out
    }

    /// Wait until a running node other than `not` is leader; its index.
    pub async fn wait_leader(&self, not: Option<usize>, limit: Duration) -> Result<usize, String> {
        let start = Instant::now();
        loop {
            for (i, s) in self.statuses().await {
                if is_leader(&s) && Some(i) != not {
                    return Ok(i);
                }
            }
            if start.elapsed() > limit {
                return Err(format!("no leader within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL node `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start node `i` again from its data directory.
    pub async fn restart(&mut self, i: usize) -> Result<(), String> {
        self.spawn(i)?;
        self.wait_up(i, Duration::from_secs(20)).await
    }

    /// Wait until every running node has applied at least `index`.
    pub async fn wait_applied(&self, index: u64, limit: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            let st = self.statuses().await;
            let running = self.nodes.iter().filter(|n| n.child.is_some()).count();
            if st.len() == running && st.iter().all(|(_, s)| s.applied_index.unwrap_or(0) >= index) {
                return Ok(());
            }
            if start.elapsed() > limit {
                let got: Vec<_> = st.iter().map(|(i, s)| (self.nodes[*i].id, s.applied_index)).collect();
                return Err(format!("nodes did not apply up to {index} within {limit:?}: {got:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stop every node with SIGTERM (clean shutdown), then SIGKILL what is left.
    pub fn stop(&mut self) {
        for n in &mut self.nodes {
            if let Some(c) = n.child.as_ref() {
                // SAFETY-free: kill(1) via the command, no libc dependency.
                let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            }
        }
        let start = Instant::now();
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                while start.elapsed() < Duration::from_secs(5) {
                    if let Ok(Some(_)) = c.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Wait until node `i`'s log shows a snapshot install in progress.
    pub async fn wait_install(&self, i: usize, limit: Duration) -> Result<(), String> {
        let path = self.dir.join(format!("node-{}.log", self.nodes[i].id));
        let start = Instant::now();
        let before = std::fs::read_to_string(&path).unwrap_or_default().matches("installing snapshot").count();
        loop {
            let now = std::fs::read_to_string(&path).unwrap_or_default().matches("installing snapshot").count();
            if now > before {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!("node {} started no snapshot install within {limit:?}", self.nodes[i].id));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Data directory of node `i`.
    pub fn data_dir(&self, i: usize) -> &Path {
        &self.nodes[i].data
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}

/// Which node a scenario kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victim {
    /// The leader.
    Leader,
    /// A follower.
    Follower,
}

/// A fault scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Acknowledged writes before the kill.
    pub before: u64,
    /// Acknowledged writes while the victim is down.
    pub during: u64,
    /// Writes in all.
    pub total: u64,
    /// Concurrent writers.
    pub clients: usize,
    /// Who is killed.
    pub victim: Victim,
    /// Snapshot (and log purge) every this many entries.
    pub snapshot_logs: u64,
    /// After restarting the victim, kill it again after this long and restart it once more (to
    /// interrupt its catch-up: snapshot install or appends).
    pub kill_again_after: Option<Duration>,
    /// Instead of a fixed delay: restart the victim with snapshot installs paused, SIGKILL it
    /// while one is in progress (restored, CURRENT not yet switched), restart it again.
    pub kill_during_install: bool,
    /// Value salt (printed; `JACKDAW_RAFT_SEED` sets it).
    pub seed: u64,
    /// Give up after this long.
    pub limit: Duration,
}

/// What a scenario measured.
#[derive(Debug, Clone)]
pub struct Report {
    pub acknowledged: u64,
    pub failed: u64,
    pub present: Vec<(NodeId, u64)>,
    pub identical: bool,
    pub elections: u64,
    pub new_leader_ms: Option<u128>,
    pub victim: NodeId,
    pub victim_snapshots_installed: u64,
    pub checks_clean: bool,
    pub seconds: f64,
}

impl Report {
    /// Whether nothing acknowledged is missing anywhere, the nodes agree and `check()` passed.
    pub fn ok(&self) -> bool {
        self.identical && self.checks_clean && self.present.iter().all(|(_, n)| *n == self.acknowledged)
    }

    /// The one-line summary.
    pub fn line(&self) -> String {
        let present: Vec<String> = self.present.iter().map(|(id, n)| format!("node{id} {n}")).collect();
        format!(
            "{}: acknowledged {}, present on {}, identical {}, check {}, elections {}, new leader after {}, killed node{} (snapshots it installed since its last start: {}), unacknowledged {}, {:.1} s",
            if self.ok() { "OK" } else { "LOSS" },
            self.acknowledged,
            present.join(" / "),
            self.identical,
            if self.checks_clean { "clean" } else { "FAILED" },
            self.elections,
            self.new_leader_ms.map(|m| format!("{m} ms")).unwrap_or_else(|| "n/a".into()),
            self.victim,
            self.victim_snapshots_installed,
            self.failed,
            self.seconds
        )
    }
}

/// Run a scenario: start three nodes under `dir`, write numbered keys with `clients` writers,
/// SIGKILL the victim mid-stream, keep writing, restart it, wait for catch-up, verify.
pub async fn run(exe: &Path, dir: &Path, sc: &Scenario, progress: bool) -> Result<Report, String> {
    let t0 = Instant::now();
    let deadline = t0 + sc.limit;
    let mut cluster = Cluster::start(exe, dir, 3, sc.snapshot_logs).await?;
    let say = |s: String| {
        if progress {
            eprintln!("[{:6.2}s] {s}", t0.elapsed().as_secs_f64());
        }
    };
    say(format!("cluster up: {:?}", cluster.addrs()));
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(Mutex::new(BTreeMap::<String, String>::new()));
    let terms = Arc::new(Mutex::new(BTreeSet::<u64>::new()));
    let failed = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for _ in 0..sc.clients {
        let (client, next, acked, terms, failed) =
            (cluster.client.clone(), next.clone(), acked.clone(), terms.clone(), failed.clone());
        let (total, seed) = (sc.total, sc.seed);
        writers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total || Instant::now() > deadline {
                    break;
                }
                let (key, value) = (format!("key{n:08}"), format!("value-{n}-{seed:x}"));
                let req = Request::Put { key: key.clone(), value: value.clone() };
                match client.write(&req, Duration::from_secs(8)).await {
                    Ok(ack) => {
                        terms.lock().unwrap_or_else(|p| p.into_inner()).insert(ack.term);
                        acked.lock().unwrap_or_else(|p| p.into_inner()).insert(key, value);
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    let count = |a: &Arc<Mutex<BTreeMap<String, String>>>| a.lock().unwrap_or_else(|p| p.into_inner()).len() as u64;
    let wait_acked = |n: u64| {
        let acked = acked.clone();
        async move {
            while count(&acked) < n {
                if Instant::now() > deadline {
                    return Err(format!("only {} writes acknowledged of {n} expected in time", count(&acked)));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(())
        }
    };
    wait_acked(sc.before).await?;
    let leader = cluster.wait_leader(None, Duration::from_secs(10)).await?;
    let victim = match sc.victim {
        Victim::Leader => leader,
        Victim::Follower => (leader + 1) % 3,
    };
    let victim_id = victim as NodeId + 1;
    say(format!("{} acknowledged; SIGKILL node{victim_id} ({:?})", count(&acked), sc.victim));
    let killed = Instant::now();
    cluster.kill(victim);
    let mut new_leader_ms = None;
    if sc.victim == Victim::Leader {
        let l = cluster.wait_leader(Some(victim), Duration::from_secs(15)).await?;
        new_leader_ms = Some(killed.elapsed().as_millis());
        say(format!("new leader node{} after {} ms", l + 1, killed.elapsed().as_millis()));
    }
    wait_acked((sc.before + sc.during).min(sc.total)).await?;
    say(format!("{} acknowledged; restarting node{victim_id}", count(&acked)));
    if sc.kill_during_install {
        cluster.install_delay_ms = Some(500);
    }
    cluster.restart(victim).await?;
    if sc.kill_during_install {
        cluster.wait_install(victim, Duration::from_secs(15)).await?;
        say(format!("SIGKILL node{victim_id} during its snapshot install, and restart it"));
        cluster.kill(victim);
        cluster.install_delay_ms = None;
        cluster.restart(victim).await?;
    }
    if let Some(after) = sc.kill_again_after {
        tokio::time::sleep(after).await;
        say(format!("SIGKILL node{victim_id} again during its catch-up, and restart it"));
        cluster.kill(victim);
        cluster.restart(victim).await?;
    }
    for w in writers {
        w.await.map_err(|e| format!("writer: {e}"))?;
    }
    let acknowledged = count(&acked);
    say(format!("writers done: {acknowledged} acknowledged, {} not", failed.load(Ordering::Relaxed)));
    // Catch-up: every node applies what the leader has.
    let leader = cluster.wait_leader(None, Duration::from_secs(15)).await?;
    let ls = cluster.client.status(&cluster.addrs()[leader]).await?;
    let target = ls.last_log_index.unwrap_or(0);
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(5));
    cluster.wait_applied(target, left).await?;
    say(format!("all nodes applied up to {target}"));
    let acked = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut present = Vec::new();
    let mut dumps = Vec::new();
    for (i, addr) in cluster.addrs().iter().enumerate() {
        let d = cluster.client.dump(addr).await?;
        let map: BTreeMap<String, String> = d.pairs.into_iter().collect();
        let n = acked.iter().filter(|(k, v)| map.get(*k) == Some(*v)).count() as u64;
        present.push((i as NodeId + 1, n));
        dumps.push(map);
    }
    let identical = dumps.windows(2).all(|w| w[0] == w[1]);
    let mut checks_clean = true;
    for addr in cluster.addrs() {
        if let Err(e) = cluster.client.check(&addr).await {
            say(format!("check {addr}: {e}"));
            checks_clean = false;
        }
    }
    let victim_snapshots_installed = cluster.client.status(&cluster.addrs()[victim]).await?.snapshots_installed;
    cluster.stop();
    let elections = terms.lock().unwrap_or_else(|p| p.into_inner()).len().saturating_sub(1) as u64;
    Ok(Report {
        acknowledged,
        failed: failed.load(Ordering::Relaxed),
        present,
        identical,
        elections,
        new_leader_ms,
        victim: victim_id,
        victim_snapshots_installed,
        checks_clean,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The seed: `JACKDAW_RAFT_SEED` when set, else from the clock.
pub fn seed() -> Result<u64, String> {
    match std::env::var("JACKDAW_RAFT_SEED") {
        Ok(s) => s.trim().parse().map_err(|_| format!("JACKDAW_RAFT_SEED={s:?} is not a number")),
        Err(_) => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)),
    }
}
