//! Status notes (silenced by `-q`) and progress of commands that work through many items (images pushed, signed or verified,
//! bundles validated, built or rendered): a bar on standard error when it is a terminal, plain
//! `[i/n]` log lines otherwise (CI logs; shown with `-v`). Libraries know nothing of this: they
//! report each finished item through a callback and the bar lives here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

/// `-q`: no bar and no progress lines.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Progress over a known number of items; shared between worker threads.
pub struct Progress {
    bar: Option<ProgressBar>,
    what: &'static str,
    total: usize,
    done: Mutex<usize>,
}

impl Progress {
    /// Progress of `total` items, each a `what` ("pushed", "validated", ...). One item gets no
    /// bar: there is nothing to follow.
    pub fn new(what: &'static str, total: usize) -> Self {
        let bar = (total > 1
            && !QUIET.load(Ordering::Relaxed)
            && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .then(|| {
            // No colours in the template, so NO_COLOR has nothing to turn off.
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
                    .with_style(style)
                    .with_prefix(what);
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            what,
            total,
            done: Mutex::new(0),
        }
    }

    /// One more item finished: `item` names it.
    pub fn item_done(&self, item: &str) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        match &self.bar {
            Some(bar) => {
                bar.set_message(item.to_owned());
                bar.inc(1);
            }
            None if self.total > 1 && !QUIET.load(Ordering::Relaxed) => {
                tracing::info!("[{}/{}] {} {item}", *done, self.total, self.what);
            }
            None => {}
        }
    }

    /// A status note printed above the bar (so it is not overdrawn), or as [`note`] without one.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => note(line),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A status line for people (`pushed …`, `Login Succeeded …`) on stderr; `-q` silences it.
/// Errors and verification failures are not notes: they print even with `-q`.
pub fn note(line: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{line}");
    }
}
