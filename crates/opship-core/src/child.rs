//! Running other programs (kustomize, make, git, credential helpers) with bounds: each child in
//! its own process group, a deadline after which the whole group is killed, stdout and stderr
//! read up to a cap (the group is killed past it), stdin null unless bytes are given, and no
//! wait on a grandchild that keeps a pipe open after the direct child exited.
//!
//! Every spawn goes through [`Running::spawn`] and every end through [`Running::reap`]: the one
//! place where a child's process group id is known and where it is killed and waited for (a
//! signal handler that must kill live children registers and unregisters groups there).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The environment variable that overrides every child's deadline, in seconds.
pub const TIMEOUT_ENV: &str = "OPSHIP_CHILD_TIMEOUT";

/// How long the pipes may stay open after the direct child exited (a grandchild holding them
/// is killed with the group; one that left the group is not waited for past this).
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// The bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time from spawn to exit.
    pub timeout: Duration,
    /// The most of stdout kept; more kills the child.
    pub max_stdout: u64,
    /// The most of stderr kept; the rest is read and dropped (messages are not worth a kill).
    pub max_stderr: u64,
}

impl Limits {
    /// `timeout` (unless [`TIMEOUT_ENV`] says otherwise), `max_stdout`, and 64 KiB of stderr.
    pub fn new(timeout: Duration, max_stdout: u64) -> Limits {
        let timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(timeout);
        Limits {
            timeout,
            max_stdout,
            max_stderr: 64 * 1024,
        }
    }
}

/// What a finished child left.
#[derive(Debug)]
pub struct Output {
    /// Its exit status.
    pub status: ExitStatus,
    /// Its standard output (at most `max_stdout` bytes).
    pub stdout: Vec<u8>,
    /// Its standard error (at most `max_stderr` bytes).
    pub stderr: Vec<u8>,
}

impl Output {
    /// stderr as text, trimmed, or `no message`.
    pub fn message(&self) -> String {
        let m = String::from_utf8_lossy(&self.stderr).trim().to_owned();
        if m.is_empty() { "no message".into() } else { m }
    }
}

/// Runs `cmd` (whose stdio is set here) within `limits`, writing `stdin` to it when given.
/// `shown` is the command as the user would type it, for messages.
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>, limits: Limits, shown: &str) -> Result<Output> {
    let mut running = Running::spawn(cmd, stdin.is_some(), shown)?;
    let feeder = match (stdin, running.child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let (tx, rx) = mpsc::channel::<Stream>();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut readers = 0;
    if let Some(p) = running.child.stdout.take() {
        spawn_reader(p, Stream::Out, limits.max_stdout, true, &stdout, &tx);
        readers += 1;
    }
    if let Some(p) = running.child.stderr.take() {
        spawn_reader(p, Stream::Err, limits.max_stderr, false, &stderr, &tx);
        readers += 1;
    }
    drop(tx);

    let deadline = Instant::now() + limits.timeout;
    let mut over_cap = false;
    let status = loop {
        // A reader reports a full stdout (or its end) over the channel.
        match rx.recv_timeout(Duration::from_millis(10)) {
            Ok(Stream::OutFull) => {
                over_cap = true;
                break None;
            }
            Ok(_) => readers -= 1,
            // Both readers are done; the channel no longer paces the loop.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        match running.child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => {
                running.reap();
                return Err(Error::Input(format!("waiting for `{shown}`: {e}")));
            }
        }
        if Instant::now() >= deadline {
            break None;
        }
    };
    // The direct child is done (or is to be stopped): whatever is left of its group goes.
    let status = match status {
        Some(s) => {
            running.reap();
            s
        }
        None => {
            running.reap();
            if over_cap {
                return Err(Error::Input(format!(
                    "`{shown}` printed more than {} on stdout; it was stopped (its process group killed)",
                    size(limits.max_stdout)
                )));
            }
            return Err(Error::Input(format!(
                "`{shown}` did not finish within {} s; it was stopped (its process group killed). \
                 {TIMEOUT_ENV}=SECONDS sets another limit",
                limits.timeout.as_secs_f64()
            )));
        }
    };
    // Pipes still held by a process outside the group are not waited for long.
    let grace = Instant::now() + PIPE_GRACE;
    while readers > 0 {
        let left = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Stream::OutFull) => over_cap = true,
            Ok(_) => readers -= 1,
            Err(_) => break,
        }
    }
    if over_cap {
        return Err(Error::Input(format!(
            "`{shown}` printed more than {} on stdout; the output was not used",
            size(limits.max_stdout)
        )));
    }
    if let Some(f) = feeder {
        // The child has exited, so its stdin pipe is broken and the writer done.
        let _ = f.join();
    }
    let take =
        |b: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *b.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(Output {
        status,
        stdout: take(&stdout),
        stderr: take(&stderr),
    })
}

fn size(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}

#[derive(Debug, Clone, Copy)]
enum Stream {
    Out,
    Err,
    OutFull,
}

fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    which: Stream,
    cap: u64,
    kill_past_cap: bool,
    into: &Arc<Mutex<Vec<u8>>>,
    tx: &mpsc::Sender<Stream>,
) {
    let into = Arc::clone(into);
    let tx = tx.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 64 * 1024];
        let mut kept = 0u64;
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let room = cap.saturating_sub(kept) as usize;
            if n > room && kill_past_cap {
                let _ = tx.send(Stream::OutFull);
                return;
            }
            let keep = n.min(room);
            if keep > 0 {
                into.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&buf[..keep]);
                kept += keep as u64;
            }
        }
        let _ = tx.send(which);
    });
}

/// A spawned child and its process group.
struct Running {
    child: std::process::Child,
    /// The child's process group id (its pid: it leads a group of its own).
    pgid: Option<rustix::process::Pid>,
    /// Registered with the signal handler while the group may be alive: an interrupted
    /// opship kills it on the way out.
    group: Option<crate::cleanup::ChildGuard>,
    reaped: bool,
}

impl Running {
    /// Spawns `cmd` as the leader of a new process group, stdout and stderr piped, stdin null
    /// or piped. The group is registered with [`crate::cleanup`] here.
    fn spawn(cmd: &mut Command, piped_stdin: bool, shown: &str) -> Result<Running> {
        cmd.process_group(0)
            .stdin(if piped_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .map_err(|e| Error::Input(format!("cannot run `{shown}`: {e}")))?;
        let pgid = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        let group = Some(crate::cleanup::register_child(child.id()));
        Ok(Running {
            child,
            pgid,
            group,
            reaped: false,
        })
    }

    /// Kills what is left of the group and waits for the direct child, then unregisters the
    /// group.
    fn reap(&mut self) {
        if self.reaped {
            return;
        }
        self.reaped = true;
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is gone) is the usual answer and means nothing is left.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.group = None;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    fn limits(secs: f64, out: u64) -> Limits {
        Limits {
            timeout: Duration::from_secs_f64(secs),
            max_stdout: out,
            max_stderr: 1024,
        }
    }

    #[test]
    fn output_status_and_stdin() {
        let o = run(
            &mut sh("cat; echo oops >&2; exit 3"),
            Some(b"hello"),
            limits(10.0, 1024),
            "sh",
        )
        .unwrap();
        assert_eq!(o.stdout, b"hello");
        assert_eq!(o.message(), "oops");
        assert_eq!(o.status.code(), Some(3));
        // stdin is null unless bytes are given: `cat` ends at once.
        let o = run(&mut sh("cat"), None, limits(10.0, 1024), "sh").unwrap();
        assert!(o.stdout.is_empty());
    }

    #[test]
    fn deadline_kills_the_whole_group() {
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("grandchild-alive");
        // The grandchild would write the marker after the deadline if it survived.
        let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let start = Instant::now();
        let e = run(&mut sh(&script), None, limits(0.5, 1024), "sh -c loop")
            .unwrap_err()
            .to_string();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert!(e.contains("did not finish within 0.5 s"), "{e}");
        assert!(e.contains("process group killed"), "{e}");
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "a grandchild outlived the deadline");
    }

    #[test]
    fn output_past_the_cap_stops_the_child() {
        let start = Instant::now();
        let e = run(&mut sh("yes"), None, limits(30.0, 1024 * 1024), "yes")
            .unwrap_err()
            .to_string();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(e.contains("more than 1 MiB on stdout"), "{e}");
    }

    #[test]
    fn a_grandchild_holding_stdout_does_not_hang() {
        let start = Instant::now();
        let o = run(
            &mut sh("echo done; sleep 60 &"),
            None,
            limits(30.0, 1024),
            "sh",
        )
        .unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(o.stdout, b"done\n");
        assert!(o.status.success());
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = run(
            &mut Command::new("/nonexistent/opship-no-such-tool"),
            None,
            limits(1.0, 10),
            "opship-no-such-tool build",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cannot run `opship-no-such-tool build`"), "{e}");
    }
}
