//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during a command that writes (`load`, `dump -o`).
//!
//! Without this, the signal ends the process wherever it is: a `load` into a new path leaves a
//! half-loaded database that looks like any other, a `dump -o` its temporary file. With it, the
//! first signal sets a flag that the command's input (`Input`) and output (`Output`) check, so
//! the command fails with [`Interrupted`] at the next block it reads or writes and cleans up as
//! after any other failure (a database the load created is removed, one that was there keeps the
//! batches committed before, and says how many); the process exits with status 130. A second
//! Ctrl-C ends the process at once, for a command stuck where it checks nothing (a second SIGHUP
//! or SIGTERM does not: a closing terminal sends SIGHUP twice). A signal the process was started
//! with ignored (`nohup`, a background job of a script) stays ignored.
//!
//! A read from a terminal or an idle pipe is not interrupted by the signal (the handler restarts
//! it), so `Input` reads on a thread of its own and hands blocks over through a channel that
//! the command polls: a `load` waiting for input still stops at the first Ctrl-C.

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// Exit status of a command stopped by a signal (128 + SIGINT, as a shell reports it).
pub(crate) const STATUS: u8 = 130;

/// The error of a command stopped by a signal.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (Ctrl-C or a termination signal)")
    }
}

impl std::error::Error for Interrupted {}

/// Whether `e` (or an error it wraps, an `io::Error`'s included) is an [`Interrupted`].
pub(crate) fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<Interrupted>()
            || c.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).is_some_and(|i| i.is::<Interrupted>())
    })
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on, those not ignored (see the module doc).
/// SIGINT's shutdown action goes first, so that it fires only once the flag is already set: on
/// the second Ctrl-C.
pub(crate) fn install() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|s| !ignored(*s)) {
        if sig == SIGINT {
            signal_hook::flag::register_conditional_shutdown(sig, STATUS as i32, &STOP)?;
        }
        signal_hook::flag::register(sig, &STOP)?;
    }
    Ok(())
}

/// Whether `sig` is ignored (as `nohup` leaves SIGHUP, a shell SIGINT for a background job).
fn ignored(sig: i32) -> bool {
    // SAFETY: with a null new action, `sigaction` only writes the current one into `old`, a
    // plain C struct for which all zeroes is a valid value.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

fn check() -> std::io::Result<()> {
    match STOP.load(Ordering::SeqCst) {
        true => Err(std::io::Error::other(Interrupted)),
        false => Ok(()),
    }
}

/// Blocks read by `Input`'s thread.
const BLOCK: usize = 256 << 10;
/// How often a command waiting for input looks at the flag.
const POLL: Duration = Duration::from_millis(50);

/// A reader whose reads fail with [`Interrupted`] once a signal came, even while no input
/// arrives: the input is read on a thread of its own, in blocks of `BLOCK` bytes (at most
/// three ahead). The end of the input is the reader's empty block, never its thread's end.
pub(crate) struct Input {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    block: Vec<u8>,
    at: usize,
    done: bool,
}

impl Input {
    pub(crate) fn new(mut r: impl Read + Send + 'static) -> Input {
        let (tx, rx) = mpsc::sync_channel(2);
        // Detached: blocked in a read when the command ends, it goes with the process.
        std::thread::spawn(move || loop {
            let mut b = vec![0u8; BLOCK];
            let got = match r.read(&mut b) {
                Ok(n) => {
                    b.truncate(n);
                    Ok(b)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let last = !matches!(&got, Ok(b) if !b.is_empty());
            if tx.send(got).is_err() || last {
                return;
            }
        });
        Input { rx, block: Vec::new(), at: 0, done: false }
    }
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let b = self.fill_buf()?;
            let n = b.len().min(out.len());
            out[..n].copy_from_slice(&b[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        check()?;
        while self.at == self.block.len() && !self.done {
            match self.rx.recv_timeout(POLL) {
                Ok(Ok(b)) => {
                    self.done = b.is_empty();
                    (self.block, self.at) = (b, 0);
                }
                Ok(Err(e)) => return Err(e),
                Err(mpsc::RecvTimeoutError::Timeout) => check()?,
                // After an error (returned already) or a panic: not the end of the input.
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(std::io::Error::other("the input's reader stopped before the end of the input"))
                }
            }
        }
        Ok(&self.block[self.at..])
    }

    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.block.len());
    }
}

/// A writer whose writes fail with [`Interrupted`] once a signal came.
pub(crate) struct Output<W>(pub(crate) W);

impl<W: Write> Write for Output<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        check()?;
        self.0.write(b)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
