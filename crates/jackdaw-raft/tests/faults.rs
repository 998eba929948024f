//! Fault tests on a 3-process loopback cluster: the leader SIGKILLed and restarted; a follower
//! SIGKILLed during appends and restarted from its data directory; a follower that fell behind
//! the purged log SIGKILLed during its catch-up (snapshot install) and restarted. After each, every
//! acknowledged write is present on every node with the same content and each node's `check()`
//! passes. `JACKDAW_RAFT_SEED` repeats a run (it sets the values and the kill point).

use jackdaw_raft::cluster::{run, seed, Scenario, Victim};
use std::sync::Mutex;
use std::time::Duration;

/// One cluster at a time: three processes per cluster share the machine's cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn scenario(name: &str, mut sc: Scenario) -> jackdaw_raft::cluster::Report {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = seed().unwrap();
    println!("{name}: seed {s} (JACKDAW_RAFT_SEED={s} repeats it)");
    sc.seed = s;
    sc.before += s % 200; // the kill point moves with the seed
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let rep = match rt.block_on(run(env!("CARGO_BIN_EXE_jackdaw-raft").as_ref(), dir.path(), &sc, true)) {
        Ok(r) => r,
        Err(e) => {
            let kept = dir.keep();
            panic!("{name}: {e} (seed {s}; data and node logs kept in {})", kept.display());
        }
    };
    println!("{name}: {}", rep.line());
    assert!(rep.acknowledged >= sc.before + sc.during, "{name}: too few writes acknowledged");
    if !rep.ok() {
        let kept = dir.keep();
        panic!("{name}: {} (seed {s}; kept in {})", rep.line(), kept.display());
    }
    if sc.victim == Victim::Leader {
        assert!(rep.new_leader_ms.is_some() && rep.elections >= 1, "{name}: no new leader observed");
    }
    rep
}

fn base(victim: Victim) -> Scenario {
    Scenario {
        before: 300,
        during: 400,
        total: 1200,
        clients: 8,
        victim,
        snapshot_logs: 10_000,
        kill_again_after: None,
        kill_during_install: false,
        seed: 0,
        limit: Duration::from_secs(35),
    }
}

#[test]
fn leader_killed_and_restarted() {
    scenario("leader", base(Victim::Leader));
}

#[test]
fn follower_killed_during_appends_and_restarted_twice() {
    scenario("follower", Scenario { kill_again_after: Some(Duration::from_millis(100)), ..base(Victim::Follower) });
}

#[test]
fn follower_behind_the_purged_log_killed_during_snapshot_catch_up() {
    let rep_sc = Scenario { snapshot_logs: 100, kill_during_install: true, ..base(Victim::Follower) };
    let rep = scenario("snapshot", rep_sc);
    assert!(rep.victim_snapshots_installed >= 1, "the restarted follower caught up without a snapshot");
}
