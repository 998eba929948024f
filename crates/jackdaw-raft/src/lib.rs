//! Replicated Jackdaw: an [openraft](https://docs.rs/openraft/0.9.25) log store and state machine
//! on Jackdaw environments, a small HTTP network for loopback clusters, and the pieces of the
//! `jackdaw-raft` command (`serve`, the client, `demo`).
//!
//! - [`store::LogStore`]: openraft's `RaftLogStorage` on one Jackdaw environment (entries keyed by
//!   big-endian index in tree `log`; vote, committed and last purged log id in tree `meta`).
//!   Appends commit `Buffered`; a syncer thread makes each group durable with one `Env::sync()`
//!   and only then calls the group's callbacks.
//! - [`store::StateMachine`]: openraft's `RaftStateMachine` on a second environment (tree `kv`,
//!   applied log id and membership in tree `meta`, written in the same transaction as the data).
//!   A snapshot is `Env::backup_to_writer`'s stream; installing one restores it into a new
//!   directory and switches a `CURRENT` pointer file (atomic rename).

pub mod bench;
pub mod cluster;
pub mod network;
pub mod node;
pub mod store;

use serde::{Deserialize, Serialize};
use std::io::Cursor;

/// A node's id.
pub type NodeId = u64;

/// A command of the key-value state machine (one log entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Set `key` to `value`.
    Put { key: String, value: String },
    /// Remove `key`.
    Delete { key: String },
    /// Set `key` to `new` (`None`: delete) if its current value is `expected` (`None`: absent).
    Cas { key: String, expected: Option<String>, new: Option<String> },
    /// Several puts in one entry (applied in one transaction).
    MultiPut { pairs: Vec<(String, String)> },
    /// Several clients' commands in one entry, applied in order in one transaction (the server
    /// batches concurrent writes this way: openraft 0.9's leader appends one entry per
    /// `client_write` and waits for its flush before the next, so batching happens here).
    Batch { ops: Vec<Request> },
}

impl Request {
    /// Whether the state machine can apply this command: every key at most `max_key` bytes (the
    /// environment's `jackdaw::max_key_size`) and every value at most `jackdaw::MAX_VALUE_SIZE`.
    /// A `Batch` is checked op by op when applied (each op succeeds or is refused alone).
    /// Leaders refuse such a command before it reaches the log; one already in a log (written by
    /// an older build) is applied as a refusal on every node alike (`Response::error`), never as
    /// a storage failure, which would stop the node at every restart.
    pub fn check(&self, max_key: usize) -> Result<(), String> {
        let key = |k: &str| match k.len() > max_key {
            true => Err(format!("a key of {} bytes is over the limit of {max_key} bytes", k.len())),
            false => Ok(()),
        };
        let value = |v: &str| match v.len() as u64 > jackdaw::MAX_VALUE_SIZE {
            true => Err(format!("a value of {} bytes is over the limit of {} bytes", v.len(), jackdaw::MAX_VALUE_SIZE)),
            false => Ok(()),
        };
        match self {
            Request::Put { key: k, value: v } => key(k).and_then(|()| value(v)),
            Request::Delete { key: k } => key(k),
            Request::Cas { key: k, expected, new } => {
                key(k)?;
                expected.iter().chain(new).try_for_each(|v| value(v))
            }
            Request::MultiPut { pairs } => pairs.iter().try_for_each(|(k, v)| key(k).and_then(|()| value(v))),
            Request::Batch { ops } => ops.iter().try_for_each(|op| op.check(max_key)),
        }
    }
}

/// What applying a [`Request`] returned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// False for a compare-and-set whose expectation did not hold, and for a command refused
    /// (`error` says why).
    pub ok: bool,
    /// The value before the command (for `Put`, `Delete`, `Cas`).
    pub previous: Option<String>,
    /// For a `Batch`: each command's response, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Response>,
    /// Why the command was refused (`Request::check`), changing nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

openraft::declare_raft_types!(
    /// The openraft type configuration of replicated Jackdaw.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of this crate's type configuration.
pub type Raft = openraft::Raft<TypeConfig>;
