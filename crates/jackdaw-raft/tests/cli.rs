//! Bad input gives a clear message and a non-zero exit code, never a panic; a node run by hand
//! serves put/get/status.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jackdaw-raft"))
}

fn fails_with(out: Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "exit code; stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
}

/// `cmd` (a `serve` that must refuse to start) fails with `needle` within 20 s; one that serves
/// instead is killed and fails the test rather than hanging it.
fn refused(cmd: &mut Command, needle: &str) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("it served instead of refusing: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    fails_with(child.wait_with_output().unwrap(), needle);
}

/// Node `id` serving on `addr` from `data`, killed on drop.
fn serve(id: u64, addr: &str, data: &std::path::Path) -> Kill {
    let id = id.to_string();
    Kill(exe().args(["serve", "--id", &id, "--addr", addr, "--data"]).arg(data).stderr(Stdio::null()).spawn().unwrap())
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn bad_input_is_a_clear_error() {
    fails_with(exe().args(["put", "--nodes", "nonsense", "k", "v"]).output().unwrap(), "bad node address \"nonsense\"");
    fails_with(
        exe().args(["serve", "--id", "1", "--addr", "localhost", "--data", "/tmp/x"]).output().unwrap(),
        "bad --addr",
    );
    let dead = format!("127.0.0.1:{}", port());
    let out = exe().args(["get", "--wait", "1", "--nodes", &dead, "k"]).output().unwrap();
    fails_with(out, &format!("none of the 1 nodes given can be reached ({dead}); last: cannot reach node"));
    // With no time at all, one call is still made (it said "no node tried").
    fails_with(exe().args(["put", "--wait", "0", "--nodes", &dead, "k", "v"]).output().unwrap(), "cannot reach node");
    fails_with(
        exe().args(["serve", "--id", "0", "--addr", "127.0.0.1:1", "--data", "/tmp/x"]).output().unwrap(),
        "node ids start at 1",
    );
    fails_with(exe().args(["init", "--nodes", &dead]).output().unwrap(), "node 1 at");
    // A data directory that is a file (it said "File exists").
    let f = tempfile::NamedTempFile::new().unwrap();
    let addr = format!("127.0.0.1:{}", port());
    fails_with(
        exe().args(["serve", "--id", "1", "--addr", &addr, "--data"]).arg(f.path()).output().unwrap(),
        "is a file; --data takes the node's directory",
    );
}

/// `init` numbers the nodes in the order given: a node started with another id is refused
/// before the cluster is formed (and the cluster is then formed with the nodes in id order).
#[test]
fn init_refuses_nodes_listed_out_of_id_order() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", port())).collect();
    let _nodes: Vec<Kill> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let id = (i + 1).to_string();
            Kill(
                exe()
                    .args(["serve", "--id", &id, "--addr", a, "--data"])
                    .arg(dir.path().join(&id))
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    let start = Instant::now();
    for a in &addrs {
        while !exe().args(["status", "--nodes", a]).output().unwrap().status.success() {
            assert!(start.elapsed() < Duration::from_secs(20), "node did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let swapped = format!("{},{}", addrs[1], addrs[0]);
    fails_with(exe().args(["init", "--nodes", &swapped]).output().unwrap(), "runs as node 2");
    // Nothing was formed: in order, the same nodes form the cluster and take a write.
    let ordered = format!("{},{}", addrs[0], addrs[1]);
    let init = exe().args(["init", "--nodes", &ordered]).output().unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let put = exe().args(["put", "--nodes", &ordered, "album", "Vs."]).output().unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
}

#[test]
fn a_node_by_hand_and_its_locked_data_directory() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let addr = format!("127.0.0.1:{}", port());
    let node = serve(1, &addr, dir.path());
    let start = Instant::now();
    while !exe().args(["status", "--nodes", &addr]).output().unwrap().status.success() {
        assert!(start.elapsed() < Duration::from_secs(20), "node did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A second node on the same data directory: the lock holder is named.
    let other = format!("127.0.0.1:{}", port());
    fails_with(
        exe().args(["serve", "--id", "1", "--addr", &other, "--data"]).arg(dir.path()).output().unwrap(),
        "open in another Env",
    );
    // Before `init`, a write finds no leader and says how a cluster is formed.
    fails_with(exe().args(["put", "--wait", "1", "--nodes", &addr, "k", "v"]).output().unwrap(), "jackdaw-raft init");
    assert!(exe().args(["init", "--nodes", &addr]).output().unwrap().status.success());
    // A key the engine cannot store is refused before it reaches the log, and the node serves on
    // (it used to enter the log and shut the node down, at every restart too).
    // Refused at once, not retried for the whole --wait as a transient error is; a get of
    // such a key too.
    let long = "k".repeat(jackdaw::max_key_size(4096) + 1);
    let t = Instant::now();
    fails_with(exe().args(["put", "--wait", "20", "--nodes", &addr, &long, "v"]).output().unwrap(), "over the limit");
    fails_with(exe().args(["get", "--wait", "20", "--nodes", &addr, &long]).output().unwrap(), "over the limit");
    assert!(t.elapsed() < Duration::from_secs(10), "a refused command was retried: {:?}", t.elapsed());
    let put = exe().args(["put", "--nodes", &addr, "album", "Ten"]).output().unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let get = exe().args(["get", "--nodes", &addr, "album"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "Ten");
    let missing = exe().args(["get", "--nodes", &addr, "nope"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    drop(node);
    // Stopped, its data directory started under another id is refused (its vote and log are node
    // 1's), and so is a directory that is one of its Jackdaw databases; under its own id it serves.
    refused(
        exe().args(["serve", "--id", "2", "--addr", &other, "--data"]).arg(dir.path()),
        "belongs to node 1: start it with --id 1",
    );
    refused(
        exe().args(["serve", "--id", "2", "--addr", &other, "--data"]).arg(dir.path().join("log")),
        "is a Jackdaw database, not a node's data directory",
    );
    // Under its own id but another address, its peers would never reach it (a member of a
    // larger cluster stood for election forever): refused, with the address to use.
    refused(
        exe().args(["serve", "--id", "1", "--addr", &other, "--data"]).arg(dir.path()),
        &format!("node 1 is at {addr} in the cluster's membership, but --addr is {other}"),
    );
    let node = serve(1, &addr, dir.path());
    let start = Instant::now();
    loop {
        let get = exe().args(["get", "--wait", "2", "--nodes", &addr, "album"]).output().unwrap();
        if get.status.success() {
            assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "Ten");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "node 1 did not serve again");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(node);
}

/// With two of three nodes down, a write ends at its deadline (not a whole call later) saying
/// there is no quorum and which voters cannot be reached (it used to name only the last failure:
/// "did not answer", or "cannot reach node" for one dead node), and that a write the leader took
/// without answering may still take effect; it does, once a majority is back.
#[test]
fn a_write_without_a_quorum_says_so() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let addrs: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", port())).collect();
    let mut nodes: Vec<Option<Kill>> =
        addrs.iter().enumerate().map(|(i, a)| Some(serve(i as u64 + 1, a, &dir.path().join(i.to_string())))).collect();
    let all = addrs.join(",");
    let start = Instant::now();
    for a in &addrs {
        while !exe().args(["status", "--nodes", a]).output().unwrap().status.success() {
            assert!(start.elapsed() < Duration::from_secs(20), "node did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert!(exe().args(["init", "--nodes", &all]).output().unwrap().status.success());
    let put = exe().args(["put", "--wait", "20", "--nodes", &all, "album", "Ten"]).output().unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    // The leader stays, the other two go.
    let leader: usize = loop {
        let status = exe().args(["status", "--nodes", &addrs[0]]).output().unwrap();
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        let id = status
            .split("\"leader\":")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok());
        if let Some(id) = id {
            break id;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no leader in {status}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let others: Vec<usize> = (0..3).filter(|i| i + 1 != leader).collect();
    for &i in &others {
        nodes[i] = None;
    }
    // Calls of 3 s each, capped by what is left of the wait: the old loop gave the leader a
    // whole 3 s call after 3.1 s, and ended past 6 s.
    let t = Instant::now();
    let out = exe().args(["put", "--wait", "4", "--nodes", &all, "album", "Vs."]).output().unwrap();
    let took = t.elapsed();
    let want = format!(
        "no quorum: 2 of the cluster's 3 voters cannot be reached ({}, {})",
        addrs[others[0]], addrs[others[1]]
    );
    fails_with(out.clone(), &want);
    fails_with(out, "may still take effect");
    assert!(took < Duration::from_millis(5500), "a 4 s wait took {took:?}");
    let back = others[0];
    nodes[back] = Some(serve(back as u64 + 1, &addrs[back], &dir.path().join(back.to_string())));
    // The first read a majority confirms may come before the leader's entry is committed (its
    // read index), so it may still say "Ten"; the write lands soon after.
    let start = Instant::now();
    let mut seen = String::new();
    while seen != "Vs." {
        assert!(start.elapsed() < Duration::from_secs(30), "the write the leader took never landed (read {seen:?})");
        let get = exe().args(["get", "--wait", "2", "--nodes", &all, "album"]).output().unwrap();
        seen = String::from_utf8_lossy(&get.stdout).trim().to_string();
        assert!(["", "Ten", "Vs."].contains(&seen.as_str()), "read {seen:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
