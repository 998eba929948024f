//! The bench's working directories (`run-<pid>` and `ycsb-<pid>` under `--dir`) do not outlive
//! it. A full YCSB run keeps a loaded copy of every engine's database there (gigabytes), which a
//! bench stopped with Ctrl-C used to leave behind for good:
//! - [`guard`] removes a directory when the bench gets SIGINT, SIGTERM or SIGHUP (those it
//!   was not started with ignored), then exits with status 130 (a second Ctrl-C during the
//!   removal ends the process at once);
//! - [`remove_stale`] removes the ones a bench that was killed outright (SIGKILL, a crash) left,
//!   those whose process is gone, when the next bench starts in the same `--dir`; only
//!   directories a bench made (a marker file in each), never a folder of the user's that
//!   happens to be named `run-1`.
//!
//! `--keep` keeps the directory: neither applies to it then, and a marker file in it (`KEPT`)
//! keeps it from later benches too.
//!
//! [`WorkDir`] does all of it for one run's directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Marker of a working directory kept on purpose (`--keep`).
const KEPT: &str = "KEPT";
/// Marker of a directory a bench made, written first: only such a directory is ever removed as
/// stale (a folder of the user's named `run-1` in `--dir` is not).
const MADE: &str = ".jackdaw-bench-workdir";

/// A run's working directory, `<root>/<prefix>-<pid>`: made (after the stale ones of earlier
/// benches are removed), guarded against signals, and removed when dropped, unless `keep`.
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    pub fn create(root: &Path, prefix: &str, keep: bool) -> std::io::Result<WorkDir> {
        remove_stale(root);
        let path = root.join(format!("{prefix}-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        std::fs::write(path.join(MADE), "a jackdaw-bench working directory\n")?;
        if keep {
            std::fs::write(path.join(KEPT), "kept by --keep; later benches leave this directory alone\n")?;
        } else {
            guard(&path);
        }
        Ok(WorkDir { path, keep })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
            release(&self.path);
        }
    }
}

/// The directories to remove on a signal.
static GUARDED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Whether the signal thread runs.
static INSTALLED: OnceLock<()> = OnceLock::new();
/// Set once a signal came: the next one ends the process at once.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Remove `dir` (the run's own working directory) if a termination signal comes before
/// [`release`]. A failure to install the handler only loses that: the run goes on.
fn guard(dir: &Path) {
    INSTALLED.get_or_init(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        // Not those the bench was started with ignored (`nohup`, a script's background job).
        let sigs: Vec<i32> = [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|s| !ignored(*s)).collect();
        // SIGINT's shutdown goes first, so that it acts only once the flag is set: on the second
        // Ctrl-C (a closing terminal sends SIGHUP twice).
        let installed = match sigs.contains(&SIGINT) {
            true => signal_hook::flag::register_conditional_shutdown(SIGINT, 130, &STOPPING).map(|_| ()),
            false => Ok(()),
        };
        match installed.and_then(|()| signal_hook::iterator::Signals::new(&sigs)) {
            Ok(mut sigs) => {
                std::thread::spawn(move || {
                    if sigs.forever().next().is_some() {
                        STOPPING.store(true, Ordering::SeqCst);
                        remove_guarded();
                        std::process::exit(130);
                    }
                });
            }
            Err(e) => eprintln!("jackdaw-bench: warning: no handler for Ctrl-C ({e}): a stopped run leaves its files"),
        }
    });
    GUARDED.lock().unwrap_or_else(|e| e.into_inner()).push(dir.to_path_buf());
}

/// Whether `sig` is ignored.
fn ignored(sig: i32) -> bool {
    // SAFETY: with a null new action, `sigaction` only writes the current one into `old`, a
    // plain C struct for which all zeroes is a valid value.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Stop guarding `dir` (the run removed it).
fn release(dir: &Path) {
    GUARDED.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| d != dir);
}

fn remove_guarded() {
    let dirs = std::mem::take(&mut *GUARDED.lock().unwrap_or_else(|e| e.into_inner()));
    for d in dirs {
        eprintln!("jackdaw-bench: interrupted; removing {}", d.display());
        // The engines' threads may still be making files in it: a few tries.
        for _ in 0..5 {
            if std::fs::remove_dir_all(&d).is_ok() || !d.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Remove the working directories under `root` left by benches whose process is gone
/// (`run-<pid>`, `ycsb-<pid>` holding the `MADE` marker and not `KEPT`; a live process's,
/// another bench running now, stay). Says each on stderr. Only where `/proc` tells which
/// processes live.
fn remove_stale(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = stale_pid(&name.to_string_lossy()) else { continue };
        let dir = e.path();
        let ours = dir.join(MADE).exists() && !dir.join(KEPT).exists();
        if !ours || pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => eprintln!("jackdaw-bench: removed {} (left by a bench that was stopped)", dir.display()),
            Err(err) => eprintln!("jackdaw-bench: warning: could not remove {} ({err})", dir.display()),
        }
    }
}

/// The process id in a working directory's name (`run-<pid>`, `ycsb-<pid>`).
fn stale_pid(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("run-").or_else(|| name.strip_prefix("ycsb-"))?;
    digits.parse().ok().filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_working_directories_of_dead_processes_go() {
        assert_eq!(stale_pid("run-123"), Some(123));
        assert_eq!(stale_pid("ycsb-9"), Some(9));
        assert_eq!(stale_pid("run-+1"), None);
        assert_eq!(stale_pid("run-"), None);
        assert_eq!(stale_pid("results"), None);
        let root = tempfile::tempdir().unwrap();
        // No process has an id this large (pid_max is at most 2^22).
        let dead = root.path().join("run-4294967295");
        let live = root.path().join(format!("ycsb-{}", std::process::id()));
        let other = root.path().join("run-x");
        let kept = root.path().join("run-4294967294");
        // Named like one, not made by a bench: the user's.
        let users = root.path().join("run-1");
        for d in [&dead, &live, &other, &kept, &users] {
            std::fs::create_dir_all(d.join("jackdaw")).unwrap();
        }
        for d in [&dead, &live, &other, &kept] {
            std::fs::write(d.join(MADE), "").unwrap();
        }
        std::fs::write(kept.join(KEPT), "").unwrap();
        remove_stale(root.path());
        assert!(!dead.exists(), "a dead process's directory stayed");
        assert!(live.exists() && other.exists(), "a live process's or a foreign directory went");
        assert!(kept.exists(), "a directory kept by --keep went");
        assert!(users.exists(), "a directory no bench made went");
    }
}
