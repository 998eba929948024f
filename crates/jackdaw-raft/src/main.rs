//! `jackdaw-raft`: run replicated Jackdaw nodes, talk to them, run the demo and the benchmark.

use clap::{Parser, Subcommand};
use jackdaw_raft::cluster::{self, Scenario, Victim};
use jackdaw_raft::node::{self, Client, NodeConfig};
use jackdaw_raft::Request;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "jackdaw-raft", version, about = "Replicated Jackdaw on openraft")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a node until SIGINT/SIGTERM.
    Serve {
        /// Node id (1, 2, 3, ...).
        #[arg(long)]
        id: u64,
        /// Address to listen on, host:port (loopback: 127.0.0.1:PORT).
        #[arg(long)]
        addr: String,
        /// Data directory (created if missing).
        #[arg(long)]
        data: PathBuf,
        /// Build a snapshot (and purge the log behind it) every this many entries.
        #[arg(long, default_value_t = 10_000)]
        snapshot_logs: u64,
    },
    /// Form a cluster of the given nodes (ids 1..=N in the order given), through the first.
    Init {
        /// Node addresses, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<String>,
    },
    /// Write KEY = VALUE through the leader.
    Put {
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<String>,
        key: String,
        value: String,
        /// Give up after this many seconds (retrying while there is no leader).
        #[arg(long, default_value_t = 10)]
        wait: u64,
    },
    /// Read KEY through the leader (linearizable: read index confirmed by a quorum).
    Get {
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<String>,
        key: String,
        /// Give up after this many seconds (retrying while there is no leader).
        #[arg(long, default_value_t = 10)]
        wait: u64,
    },
    /// Print each node's state.
    Status {
        #[arg(long, value_delimiter = ',', required = true)]
        nodes: Vec<String>,
    },
    /// Three local nodes, a writer, the leader SIGKILLed mid-stream and restarted, then every
    /// acknowledged write verified on every node.
    Demo {
        /// Writes in all.
        #[arg(long, default_value_t = 3000)]
        writes: u64,
        /// Concurrent writers.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Keep data and node logs here (default: a temporary directory, removed on success).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Value salt (default: JACKDAW_RAFT_SEED or the clock).
        #[arg(long)]
        seed: Option<u64>,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 90)]
        timeout: u64,
    },
    /// Replicated durable writes per second with 1, 16, 64 clients, beside one node's durable
    /// write_batch throughput.
    Bench {
        /// Seconds per client count.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Client counts.
        #[arg(long, value_delimiter = ',', default_values_t = vec![1, 16, 64])]
        clients: Vec<usize>,
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// (test helper) Append entries to a log store in DIR forever, printing each acknowledged index.
    #[command(hide = true)]
    LogAppend {
        #[arg(long)]
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("jackdaw-raft: error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(cli.cmd)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("jackdaw-raft: error: {}", jackdaw::report(e.as_ref()));
            ExitCode::from(1)
        }
    }
}

fn check_addrs(nodes: &[String]) -> anyhow::Result<()> {
    for n in nodes {
        n.parse::<SocketAddr>()
            .map_err(|_| anyhow::anyhow!("bad node address {n:?}: expected host:port like 127.0.0.1:21001"))?;
    }
    Ok(())
}

async fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let t = Duration::from_secs(3);
    match cmd {
        Cmd::Serve { id, addr, data, snapshot_logs } => {
            addr.parse::<SocketAddr>()
                .map_err(|_| anyhow::anyhow!("bad --addr {addr:?}: expected host:port like 127.0.0.1:21001"))?;
            anyhow::ensure!(snapshot_logs > 0, "--snapshot-logs must be at least 1");
            anyhow::ensure!(
                id > 0,
                "--id 0: node ids start at 1 (`init` numbers the nodes 1, 2, 3, ... in the order of --nodes)"
            );
            node::serve(NodeConfig { id, addr, data, snapshot_logs }).await?;
        }
        Cmd::Init { nodes } => {
            check_addrs(&nodes)?;
            let members: Vec<_> = nodes.iter().enumerate().map(|(i, a)| (i as u64 + 1, a.clone())).collect();
            let client = Client::new(nodes.clone(), t);
            // Every node must be up and run with the id its place in the list gives it: a node
            // whose own id differs would be addressed under another one by its peers.
            for (id, addr) in &members {
                let s = client.status(addr).await.map_err(|e| anyhow::anyhow!("node {id} at {addr}: {e}"))?;
                anyhow::ensure!(
                    s.id == *id,
                    "the node at {addr} runs as node {}, but `init` numbers the nodes in the order of --nodes, which makes it node {id}: list the nodes in id order, or restart it with --id {id}",
                    s.id
                );
            }
            client.init(&nodes[0], &members).await.map_err(anyhow::Error::msg)?;
            println!("initialized: {members:?}");
        }
        Cmd::Put { nodes, key, value, wait } => {
            check_addrs(&nodes)?;
            let ack = Client::new(nodes, t)
                .write(&Request::Put { key, value }, Duration::from_secs(wait))
                .await
                .map_err(anyhow::Error::msg)?;
            if let Some(e) = ack.response.error {
                anyhow::bail!("refused: {e}");
            }
            println!("ok: index {} term {} leader {}", ack.index, ack.term, ack.leader);
        }
        Cmd::Get { nodes, key, wait } => {
            check_addrs(&nodes)?;
            match Client::new(nodes, t).read(&key, Duration::from_secs(wait)).await.map_err(anyhow::Error::msg)? {
                Some(v) => println!("{v}"),
                None => {
                    eprintln!("{key}: not found");
                    return Ok(ExitCode::from(1));
                }
            }
        }
        Cmd::Status { nodes } => {
            check_addrs(&nodes)?;
            let c = Client::new(nodes.clone(), t);
            let mut bad = false;
            for n in &nodes {
                match c.status(n).await {
                    Ok(s) => println!("{n}: {}", serde_json::to_string(&s)?),
                    Err(e) => {
                        println!("{n}: {e}");
                        bad = true;
                    }
                }
            }
            if bad {
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::Demo { writes, clients, dir, seed, timeout } => {
            anyhow::ensure!(writes >= 100, "--writes must be at least 100");
            anyhow::ensure!(clients >= 1, "--clients must be at least 1");
            let seed = match seed {
                Some(s) => s,
                None => cluster::seed().map_err(anyhow::Error::msg)?,
            };
            println!("demo: seed {seed} (JACKDAW_RAFT_SEED={seed} or --seed {seed} repeats the values)");
            let (tmp, dir) = match dir {
                Some(d) => {
                    std::fs::create_dir_all(&d)?;
                    (None, d)
                }
                None => {
                    let t = tempfile::Builder::new().prefix("jackdaw-raft-demo").tempdir()?;
                    let p = t.path().to_path_buf();
                    (Some(t), p)
                }
            };
            let sc = Scenario {
                before: writes / 3,
                during: writes / 3,
                total: writes,
                clients,
                victim: Victim::Leader,
                snapshot_logs: 10_000,
                kill_again_after: None,
                kill_during_install: false,
                seed,
                limit: Duration::from_secs(timeout),
            };
            let exe = std::env::current_exe()?;
            let r = cluster::run(&exe, &dir, &sc, true).await;
            match r {
                Ok(rep) => {
                    println!("{}", rep.line());
                    if !rep.ok() {
                        if let Some(t) = tmp {
                            println!("data and node logs kept in {}", t.keep().display());
                        }
                        return Ok(ExitCode::from(1));
                    }
                }
                Err(e) => {
                    if let Some(t) = tmp {
                        eprintln!("data and node logs kept in {}", t.keep().display());
                    }
                    anyhow::bail!("demo failed: {e}");
                }
            }
        }
        Cmd::Bench { seconds, clients, dir } => {
            return jackdaw_raft::bench::run(seconds, &clients, dir).await;
        }
        Cmd::LogAppend { dir } => log_append(dir).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Append blank entries (1–4 per append, several appenders at once so that groups form),
/// printing `acked I` once an entry's callback has fired, and `vote T` once a vote is saved.
async fn log_append(dir: PathBuf) -> anyhow::Result<()> {
    use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
    let store = jackdaw_raft::store::LogStore::open(&dir)?;
    let mut index = 0u64;
    let mut s = store.clone();
    let mut out = std::io::stdout();
    loop {
        let n = 1 + index % 4;
        let entries: Vec<Entry<jackdaw_raft::TypeConfig>> = (index + 1..=index + n)
            .map(|i| Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), i), payload: EntryPayload::Blank })
            .collect();
        s.blocking_append(entries).await?;
        index += n;
        writeln!(out, "acked {index}")?;
        if index % 40 < 4 {
            s.save_vote(&Vote::new(index, 1)).await?;
            writeln!(out, "vote {index}")?;
        }
        out.flush()?;
    }
}
