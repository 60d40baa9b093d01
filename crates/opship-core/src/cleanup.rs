//! What a run must undo when it is stopped by a signal: the registry of live temporaries and
//! of child process groups, and the SIGINT/SIGTERM/SIGHUP handler that kills those groups,
//! removes those temporaries and exits with 128 + the signal's number, as a shell reports it.
//!
//! The binary calls [`install`] once. Temporaries register themselves when they are created
//! (`fsutil::temp_file_in`, `fsutil::temp_dir_in` do it) and leave the registry when their
//! guard is dropped; a child process started in a process group of its own registers that
//! group with [`register_child`] for as long as it runs:
//!
//! ```no_run
//! # use std::os::unix::process::CommandExt;
//! let mut child = std::process::Command::new("kustomize")
//!     .process_group(0) // its own group: its children are killed with it
//!     .spawn()?;
//! let _group = opship_core::cleanup::register_child(child.id());
//! child.wait()?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A SIGKILL cannot be handled: what it leaves is recognised by the next run instead
//! (`fsutil::sweep`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The signals handled, with the names used in the message.
const SIGNALS: [(i32, &str); 3] = [
    (signal_hook::consts::SIGINT, "SIGINT"),
    (signal_hook::consts::SIGTERM, "SIGTERM"),
    (signal_hook::consts::SIGHUP, "SIGHUP"),
];

#[derive(Default)]
struct Live {
    next: u64,
    paths: BTreeMap<u64, PathBuf>,
    groups: BTreeMap<u64, u32>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    next: 0,
    paths: BTreeMap::new(),
    groups: BTreeMap::new(),
});

/// The registry, also after a panic elsewhere (its maps stay consistent: every change is one
/// insert or remove).
fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file or directory the signal handler removes while it is registered. Dropping
/// the guard only unregisters it (the file itself is the owner's to remove or rename).
#[derive(Debug)]
#[must_use = "the path is unregistered when the guard is dropped"]
pub struct PathGuard {
    id: u64,
}

impl Drop for PathGuard {
    fn drop(&mut self) {
        live().paths.remove(&self.id);
    }
}

/// A child process group the signal handler kills while it is registered.
#[derive(Debug)]
#[must_use = "the group is unregistered when the guard is dropped"]
pub struct ChildGuard {
    id: u64,
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        live().groups.remove(&self.id);
    }
}

/// Registers the temporary `path` (a file, or a directory removed with everything in it).
pub fn register_path(path: impl Into<PathBuf>) -> PathGuard {
    let mut l = live();
    l.next += 1;
    let id = l.next;
    l.paths.insert(id, path.into());
    PathGuard { id }
}

/// Creates a temporary with `create` and registers the path `path_of` gives, both under the
/// registry's lock: a signal arriving meanwhile finds it registered or not yet created, never
/// created and unknown.
pub fn create_registered<T, E>(
    create: impl FnOnce() -> std::result::Result<T, E>,
    path_of: impl FnOnce(&T) -> &Path,
) -> std::result::Result<(T, PathGuard), E> {
    let mut l = live();
    let made = create()?;
    l.next += 1;
    let id = l.next;
    l.paths.insert(id, path_of(&made).to_path_buf());
    Ok((made, PathGuard { id }))
}

/// Runs `commit` (the rename that puts a temporary in place) while no signal is being
/// handled: the handler holds the registry until the process exits, so a rename either ends
/// before the temporaries are removed, or never starts. Without it, a temporary half removed
/// by the handler could be renamed into place.
pub fn commit<T>(commit: impl FnOnce() -> T) -> T {
    unhandled(commit)
}

/// Runs `create` (the making of a file or directory inside a registered temporary, or of a
/// directory one is made in) while no signal is being handled. The handler holds the registry
/// until the process exits, so `create` either ends before the temporaries are removed (and
/// what it made goes with them) or never starts. Without it, another thread's
/// `create_dir_all` could make a removed temporary again between its removal and the exit,
/// and a directory being removed could gain entries until its removal gives up.
/// [`crate::fsutil`] has the usual creations wrapped (`create_dir_all`, `create_file`,
/// `copy_file`).
pub fn create<T>(create: impl FnOnce() -> T) -> T {
    unhandled(create)
}

/// Called by `main` once the command is done, before it maps the outcome to an exit code: a
/// signal being handled is waited for, and its handler exits the process (128 + the
/// signal). Without it, a command failing because the handler removed its temporary could
/// exit 2 (or 0) while the handler is still removing the others.
pub fn finish() {
    unhandled(|| ());
}

/// Runs `f` holding the registry: never while, or after, a signal is handled.
fn unhandled<T>(f: impl FnOnce() -> T) -> T {
    let _held = live();
    f()
}

/// Registers the process group `pgid` (a child started with `process_group(0)` has its pid as
/// group id): on SIGINT/SIGTERM/SIGHUP the whole group is sent SIGTERM, then SIGKILL.
pub fn register_child(pgid: u32) -> ChildGuard {
    let mut l = live();
    l.next += 1;
    let id = l.next;
    l.groups.insert(id, pgid);
    ChildGuard { id }
}

/// How many temporaries and child groups are registered now (for tests).
pub fn live_counts() -> (usize, usize) {
    let l = live();
    (l.paths.len(), l.groups.len())
}

/// Installs the handler of SIGINT, SIGTERM and SIGHUP: a thread that, on the first of them,
/// kills the registered child groups, removes the registered temporaries, says so on stderr
/// and exits with 128 + the signal number (130, 143, 129). Call once, early in `main`.
pub fn install() -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(SIGNALS.map(|(s, _)| s))?;
    std::thread::Builder::new()
        .name("opship-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                stop(sig);
            }
        })?;
    Ok(())
}

/// Undoes what is registered and exits. The registry stays locked until the process is gone,
/// so no thread registers (and so creates) another temporary meanwhile.
fn stop(sig: i32) -> ! {
    let l = live();
    kill_groups(l.groups.values().copied());
    for path in l.paths.values() {
        remove(path);
    }
    let name = SIGNALS
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or("a signal", |(_, n)| n);
    eprintln!("error: interrupted by {name}; temporaries removed, child processes stopped");
    std::process::exit(128 + sig)
}

fn remove(path: &Path) {
    // A writer still running on another thread may add an entry while a directory is being
    // removed; a few attempts outlast that.
    for _ in 0..5 {
        let r = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
            Ok(_) => std::fs::remove_file(path),
            Err(_) => return,
        };
        if r.is_ok() {
            return;
        }
    }
}

#[cfg(target_os = "linux")]
fn kill_groups(groups: impl Iterator<Item = u32> + Clone) {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    let pids = || {
        groups
            .clone()
            .filter_map(|g| i32::try_from(g).ok().and_then(Pid::from_raw))
    };
    for pid in pids() {
        let _ = kill_process_group(pid, Signal::TERM);
    }
    // A moment to exit cleanly (git removes its lock files), then no choice.
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while pids().any(|p| test_kill_process_group(p).is_ok()) && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for pid in pids() {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(not(target_os = "linux"))]
fn kill_groups(_groups: impl Iterator<Item = u32> + Clone) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_unregister() {
        let before = live_counts();
        let a = register_path("/nonexistent/a");
        let b = register_child(999_999);
        let (c, g) = create_registered(
            || Ok::<_, std::io::Error>(PathBuf::from("/nonexistent/c")),
            |p| p.as_path(),
        )
        .unwrap();
        assert_eq!(c, PathBuf::from("/nonexistent/c"));
        let during = live_counts();
        assert!(
            during.0 >= before.0 + 2 && during.1 > before.1,
            "{during:?}"
        );
        drop((a, b, g));
        // Other tests register concurrently; ours are gone.
        let l = live();
        assert!(!l.paths.values().any(|p| p.starts_with("/nonexistent")));
        assert!(!l.groups.values().any(|g| *g == 999_999));
    }
}
