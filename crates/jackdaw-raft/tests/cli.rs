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
    fails_with(exe().args(["get", "--wait", "1", "--nodes", &dead, "k"]).output().unwrap(), "cannot reach node");
}

#[test]
fn a_node_by_hand_and_its_locked_data_directory() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let addr = format!("127.0.0.1:{}", port());
    let node = Kill(
        exe()
            .args(["serve", "--id", "1", "--addr", &addr, "--data"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
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
    assert!(exe().args(["init", "--nodes", &addr]).output().unwrap().status.success());
    let put = exe().args(["put", "--nodes", &addr, "album", "Ten"]).output().unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let get = exe().args(["get", "--nodes", &addr, "album"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "Ten");
    let missing = exe().args(["get", "--nodes", &addr, "nope"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    drop(node);
}
