//! The storage rules openraft's users get wrong, each with a test: acknowledged appends and
//! votes survive a SIGKILL, appends group under one sync, truncate/purge leave no holes and
//! persist `last_purged`, a reopened store reports exactly what was acknowledged, the applied log
//! id travels with the data (no entry applied twice), snapshots replace content atomically.

use jackdaw_raft::store::{LogStore, StateMachine};
use jackdaw_raft::{Request, TypeConfig};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder, Vote,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn lid(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn blank(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry { log_id: lid(term, index), payload: EntryPayload::Blank }
}

fn put(index: u64, k: &str, v: &str) -> Entry<TypeConfig> {
    Entry { log_id: lid(1, index), payload: EntryPayload::Normal(Request::Put { key: k.into(), value: v.into() }) }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

async fn indexes(s: &mut LogStore) -> Vec<u64> {
    s.try_get_log_entries(..).await.unwrap().iter().map(|e| e.log_id.index).collect()
}

#[test]
fn truncate_and_purge_leave_no_holes_and_a_reopened_store_reports_what_was_acknowledged() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    rt().block_on(async {
        let mut s = LogStore::open(dir.path()).unwrap();
        for i in 1..=20u64 {
            s.blocking_append([blank(1, i)]).await.unwrap();
            // Readable as soon as append returned.
            assert_eq!(s.try_get_log_entries(i..=i).await.unwrap().len(), 1, "entry {i} not readable after append");
        }
        s.save_vote(&Vote::new(3, 2)).await.unwrap();
        s.save_committed(Some(lid(1, 12))).await.unwrap();
        s.purge(lid(1, 5)).await.unwrap();
        s.truncate(lid(1, 15)).await.unwrap();
        s.blocking_append([blank(2, 15), blank(2, 16)]).await.unwrap();
        let want: Vec<u64> = (6..=16).collect();
        assert_eq!(indexes(&mut s).await, want);
        let st = s.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id, Some(lid(1, 5)));
        assert_eq!(st.last_log_id, Some(lid(2, 16)));
        s.close().unwrap();
        drop(s);

        let mut s = LogStore::open(dir.path()).unwrap();
        assert_eq!(indexes(&mut s).await, want, "reopened log differs");
        let st = s.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id, Some(lid(1, 5)));
        assert_eq!(st.last_log_id, Some(lid(2, 16)));
        assert_eq!(s.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
        assert_eq!(s.read_committed().await.unwrap(), Some(lid(1, 12)));
        // Purge everything: the state still knows the last log id.
        s.purge(lid(2, 16)).await.unwrap();
        s.close().unwrap();
        let mut s = LogStore::open(dir.path()).unwrap();
        let st = s.get_log_state().await.unwrap();
        assert_eq!(st.last_purged_log_id, Some(lid(2, 16)));
        assert_eq!(st.last_log_id, Some(lid(2, 16)));
        assert!(indexes(&mut s).await.is_empty());
        s.env().check().unwrap().into_result().unwrap();
    });
}

/// Appends queued while a sync runs (here: while the test holds the syncer) share one sync.
#[test]
#[allow(clippy::await_holding_lock)] // the hold blocks the syncer thread, not a task of this runtime
fn concurrent_appends_are_grouped_under_one_sync() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    rt().block_on(async {
        let s = LogStore::open(dir.path()).unwrap();
        let c = s.counters();
        let appends = || c.appends.load(std::sync::atomic::Ordering::Relaxed);
        let hold = s.hold_syncer();
        let mut tasks = Vec::new();
        for i in 1..=256u64 {
            let mut c = s.clone();
            tasks.push(tokio::spawn(async move { c.blocking_append([blank(1, i)]).await }));
        }
        let start = Instant::now();
        while appends() < 256 {
            assert!(start.elapsed() < Duration::from_secs(60), "only {} of 256 appends queued", appends());
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        drop(hold);
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let syncs = c.syncs.load(std::sync::atomic::Ordering::Relaxed);
        println!("256 concurrent appends: {} appends, {syncs} syncs", appends());
        assert_eq!(appends(), 256);
        // The syncer took the first callback, waited at the hold, then drained the other 255.
        assert_eq!(syncs, 1, "appends were not grouped: {syncs} syncs for 256 appends");
        let mut s = s;
        assert_eq!(indexes(&mut s).await, (1..=256).collect::<Vec<u64>>());
    });
}

/// A child process appends (and saves votes) until SIGKILLed; everything it printed as
/// acknowledged must be in the reopened store, with no hole.
#[test]
fn acknowledged_appends_and_votes_survive_sigkill() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_jackdaw-raft"))
        .arg("log-append")
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let (mut acked, mut voted) = (0u64, 0u64);
    let start = Instant::now();
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("acked ") {
            acked = n.parse().unwrap();
        } else if let Some(n) = line.strip_prefix("vote ") {
            voted = n.parse().unwrap();
        }
        if acked >= 3000 || start.elapsed() > Duration::from_secs(4) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL, mid-stream
    child.wait().unwrap();
    println!("acknowledged {acked} entries, last vote term {voted} before SIGKILL");
    assert!(acked > 50 && voted > 0, "the child made too little progress: {acked} {voted}");
    rt().block_on(async {
        let mut s = LogStore::open(dir.path()).unwrap();
        let got = indexes(&mut s).await;
        assert!(got.len() as u64 >= acked, "{} entries after reopen, {acked} were acknowledged", got.len());
        assert!(got.iter().enumerate().all(|(i, x)| *x == i as u64 + 1), "hole in the log");
        let v = s.read_vote().await.unwrap().expect("a vote was acknowledged");
        assert!(v.leader_id().term >= voted, "vote term {} < acknowledged {voted}", v.leader_id().term);
        s.env().check().unwrap().into_result().unwrap();
    });
}

fn members(ids: &[u64]) -> Membership<u64, BasicNode> {
    let nodes: BTreeMap<u64, BasicNode> = ids.iter().map(|i| (*i, BasicNode { addr: format!("n{i}") })).collect();
    Membership::new(vec![ids.iter().copied().collect()], nodes)
}

#[test]
fn applied_log_id_and_membership_travel_with_the_data() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    rt().block_on(async {
        let mut sm = StateMachine::open(dir.path()).unwrap();
        let m = Entry { log_id: lid(1, 1), payload: EntryPayload::Membership(members(&[1, 2, 3])) };
        let cas = Entry {
            log_id: lid(1, 4),
            payload: EntryPayload::Normal(Request::Cas { key: "c".into(), expected: None, new: Some("1".into()) }),
        };
        let multi = Entry {
            log_id: lid(1, 5),
            payload: EntryPayload::Normal(Request::MultiPut {
                pairs: vec![("m1".into(), "x".into()), ("m2".into(), "y".into())],
            }),
        };
        let r = sm.apply([m, put(2, "k", "a"), put(3, "k", "b"), cas, multi]).await.unwrap();
        assert_eq!(r.len(), 5);
        assert_eq!(r[2].previous.as_deref(), Some("a"));
        assert!(r[3].ok);
        sm.close().unwrap();
        drop(sm);

        let mut sm = StateMachine::open(dir.path()).unwrap();
        let (applied, mem) = sm.applied_state().await.unwrap();
        assert_eq!(applied, Some(lid(1, 5)));
        assert_eq!(mem.log_id(), &Some(lid(1, 1)));
        assert_eq!(mem.voter_ids().collect::<Vec<_>>(), vec![1, 2, 3]);
        // Redelivered entries (a replay after a crash) are not applied twice: "k" stays "b".
        sm.apply([put(2, "k", "a")]).await.unwrap();
        let sh = sm.shared();
        assert_eq!(sh.get("k").unwrap().as_deref(), Some("b"));
        assert_eq!(sh.get("m2").unwrap().as_deref(), Some("y"));
        let cas_again = Entry {
            log_id: lid(1, 6),
            payload: EntryPayload::Normal(Request::Cas { key: "c".into(), expected: None, new: Some("2".into()) }),
        };
        let r = sm.apply([cas_again]).await.unwrap();
        assert!(!r[0].ok, "compare-and-set with a wrong expectation succeeded");
        assert_eq!(sh.get("c").unwrap().as_deref(), Some("1"));
        sh.check().unwrap();
    });
}

/// A command the engine cannot store (a key over `max_key_size`) is applied as a refusal, the
/// same on every node, and the node goes on: it was a storage error, which openraft answers by
/// shutting the node down, and again at every restart, as the entry stays in the log.
#[test]
fn a_command_the_engine_refuses_is_answered_not_fatal() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    rt().block_on(async {
        let mut sm = StateMachine::open(dir.path()).unwrap();
        let max = sm.shared().max_key();
        assert_eq!(max, jackdaw::max_key_size(4096));
        let long = "k".repeat(max + 1);
        let normal = |i: u64, req: Request| Entry { log_id: lid(1, i), payload: EntryPayload::Normal(req) };
        let multi = Request::MultiPut { pairs: vec![("m1".into(), "x".into()), (long.clone(), "y".into())] };
        let batch = Request::Batch {
            ops: vec![Request::Put { key: "b1".into(), value: "1".into() }, Request::Delete { key: long.clone() }],
        };
        let r = sm
            .apply([
                normal(1, Request::Put { key: long.clone(), value: "v".into() }),
                normal(2, multi),
                normal(3, batch),
            ])
            .await
            .unwrap();
        assert!(!r[0].ok && r[0].error.as_deref().is_some_and(|e| e.contains("over the limit")), "{:?}", r[0]);
        // A multi-put is all or nothing; a batch's ops stand alone.
        assert!(!r[1].ok && r[1].error.is_some() && sm.shared().get("m1").unwrap().is_none(), "{:?}", r[1]);
        assert!(!r[2].ok && r[2].results[0].ok && r[2].results[1].error.is_some(), "{:?}", r[2]);
        assert_eq!(sm.shared().get("b1").unwrap().as_deref(), Some("1"));
        let r = sm.apply([put(4, "after", "yes")]).await.unwrap();
        assert!(r[0].ok && r[0].error.is_none());
        let (applied, _) = sm.applied_state().await.unwrap();
        assert_eq!(applied, Some(lid(1, 4)));
        assert_eq!(
            Request::Put { key: long, value: String::new() }.check(max).unwrap_err(),
            format!("a key of {} bytes is over the limit of {max} bytes", max + 1)
        );
        sm.shared().check().unwrap();
    });
}

#[test]
fn installing_a_snapshot_replaces_the_content_atomically() {
    let (a, b) = (
        tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
        tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
    );
    rt().block_on(async {
        let mut sa = StateMachine::open(a.path()).unwrap();
        let mut sb = StateMachine::open(b.path()).unwrap();
        let m = Entry { log_id: lid(1, 1), payload: EntryPayload::Membership(members(&[1, 2])) };
        sa.apply([m, put(2, "x", "1"), put(3, "y", "2")]).await.unwrap();
        sb.apply([put(1, "stale", "gone"), put(2, "x", "old")]).await.unwrap();
        let snap = sa.get_snapshot_builder().await.build_snapshot().await.unwrap();
        assert_eq!(snap.meta.last_log_id, Some(lid(1, 3)));
        // Applies go on after the build; the snapshot keeps what it saw.
        sa.apply([put(4, "z", "3")]).await.unwrap();
        let mut rx = sb.begin_receiving_snapshot().await.unwrap();
        *rx = *snap.snapshot;
        sb.install_snapshot(&snap.meta, rx).await.unwrap();
        let check = |sm: &StateMachine| {
            let sh = sm.shared();
            let (applied, pairs) = sh.dump().unwrap();
            assert_eq!(applied, Some(3));
            assert_eq!(pairs, vec![("x".to_string(), "1".to_string()), ("y".to_string(), "2".to_string())]);
            sh.check().unwrap();
        };
        check(&sb);
        let (applied, mem) = sb.applied_state().await.unwrap();
        assert_eq!((applied, mem), (snap.meta.last_log_id, snap.meta.last_membership.clone()));
        sb.close().unwrap();
        drop(sb);
        // A leftover of an interrupted install (a restored directory CURRENT does not name) is
        // ignored and removed at open.
        std::fs::create_dir_all(b.path().join("db-99")).unwrap();
        let sb = StateMachine::open(b.path()).unwrap();
        check(&sb);
        assert!(!b.path().join("db-99").exists());
    });
}
