//! What a project's own GNU make would run for a target: a dry run (`make -n --trace`) of it,
//! with the release's variables on make's command line, read back as the commands of each
//! target with the Makefile line they come from. make, not opship, decides what the Makefile
//! means; like `make bundle`, the dry run evaluates `$(shell ...)`.
//!
//! Sub-makes (`$(MAKE) target`) are not run: make runs lines that use `$(MAKE)` even with `-n`,
//! so `MAKE` is given as a no-op command whose printed line names the sub-target.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{Error, Result};

/// What `MAKE` is set to: `:` (the shell's no-op) and a marker, so a sub-make runs nothing and
/// its printed line still says which target it would make.
pub const SUB_MAKE: &str = ": opship-sub-make";

/// How long a dry run may take unless `OPSHIP_CHILD_TIMEOUT` says otherwise (a dry run runs
/// only the Makefile's `$(shell ...)` calls).
const TIMEOUT: Duration = Duration::from_secs(120);

/// The most a dry run may print.
const MAX_OUTPUT: u64 = 16 * 1024 * 1024;

/// One command make would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The target whose recipe it belongs to.
    pub target: String,
    /// The file of the recipe line, relative to the project when inside it.
    pub file: String,
    /// The line of the recipe line (the rule's line when it cannot be matched).
    pub line: u32,
    /// The command as make passes it to the shell (expanded, `@`/`-` removed).
    pub text: String,
}

impl Step {
    /// `Makefile:LINE`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The sub-target when the command is a sub-make (`$(MAKE) target`).
    pub fn sub_make(&self) -> Option<&str> {
        self.text.trim_start().strip_prefix(SUB_MAKE).map(str::trim)
    }
}

/// The commands `make TARGET VARS…` would run in `dir`, in order, prerequisites first.
pub fn dry_run(dir: &Path, target: &str, vars: &[(String, String)]) -> Result<Vec<Step>> {
    let mut cmd = Command::new("make");
    cmd.current_dir(dir)
        .args(["-n", "--trace", "--no-print-directory", "-f", "Makefile"])
        .arg(format!("MAKE={SUB_MAKE}"))
        // Only PATH and HOME from the environment: make lets the environment win over `?=`,
        // and the same project must give the same commands everywhere (values that come from
        // the environment are given as make command-line variables instead).
        .env_clear()
        .env("LC_ALL", "C");
    for keep in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    for (k, v) in vars {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.arg("--").arg(target);
    let mut shown = format!("make -n {target}");
    for (k, v) in vars {
        shown.push_str(&format!(" {k}={v}"));
    }
    let limits = crate::child::Limits::new(TIMEOUT, MAX_OUTPUT);
    let out = crate::child::run(&mut cmd, None, limits, &shown).map_err(|e| match e {
        Error::Input(m) if m.starts_with("cannot run") => Error::Input(format!(
            "{m}: reading {}'s bundle recipe needs GNU make on PATH",
            dir.join("Makefile").display()
        )),
        e => e,
    })?;
    if !out.status.success() {
        return Err(Error::Input(format!(
            "`{shown}` in {} failed ({}): {}",
            dir.display(),
            out.status,
            out.message()
        )));
    }
    let text = String::from_utf8(out.stdout)
        .map_err(|_| Error::Input(format!("`{shown}` printed something that is not UTF-8")))?;
    Ok(parse(&text, dir))
}

/// The trace line `FILE:LINE: target 'T' does not exist` / `FILE:LINE: update target 'T' due
/// to: …`: (file, line, target).
fn trace(line: &str) -> Option<(String, u32, String)> {
    let (head, rest) = line.split_once(": ")?;
    let (file, num) = head.rsplit_once(':')?;
    let num: u32 = num.parse().ok()?;
    let rest = rest.strip_prefix("update ").unwrap_or(rest);
    let rest = rest.strip_prefix("target '")?;
    let end = rest.rfind("' ")?;
    let tail = &rest[end + 2..];
    (tail == "does not exist" || tail.starts_with("due to:") || tail == "is out of date")
        .then(|| (file.to_owned(), num, rest[..end].to_owned()))
}

fn parse(text: &str, dir: &Path) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut current: Option<(String, u32, String)> = None;
    let mut group: Vec<String> = Vec::new();
    let flush = |steps: &mut Vec<Step>,
                 current: &Option<(String, u32, String)>,
                 group: &mut Vec<String>| {
        let Some((file, rule, target)) = current else {
            group.clear();
            return;
        };
        let lines = recipe_lines(&dir.join(file), *rule);
        let matched = lines.len() == group.len();
        for (i, t) in group.drain(..).enumerate() {
            steps.push(Step {
                target: target.clone(),
                file: rel(dir, file),
                line: if matched { lines[i] } else { *rule },
                text: t,
            });
        }
    };
    let mut pending = String::new();
    for line in text.lines() {
        if pending.is_empty()
            && let Some(t) = trace(line)
        {
            flush(&mut steps, &current, &mut group);
            current = Some(t);
            continue;
        }
        if !pending.is_empty() {
            pending.push('\n');
        }
        pending.push_str(line);
        // A printed command continues while its line ends with a backslash.
        if line.ends_with('\\') {
            continue;
        }
        group.push(std::mem::take(&mut pending));
    }
    if !pending.is_empty() {
        group.push(pending);
    }
    flush(&mut steps, &current, &mut group);
    steps
}

/// The first physical line of each recipe line of the recipe that starts at line `rule` of
/// `file` (make's trace names a recipe's first line).
fn recipe_lines(file: &Path, rule: u32) -> Vec<u32> {
    let Ok(text) = crate::input::read_string(file, crate::input::Kind::Config) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut continued = false;
    for (i, l) in text
        .lines()
        .enumerate()
        .skip(rule.saturating_sub(1) as usize)
    {
        let n = i as u32 + 1;
        if continued {
            continued = l.ends_with('\\');
            continue;
        }
        if let Some(cmd) = l.strip_prefix('\t') {
            // make prints nothing for a line that expands to nothing (`$(info …)`).
            let t = cmd.trim();
            if !t.is_empty()
                && !["$(info ", "$(warning ", "$(eval "]
                    .iter()
                    .any(|p| t.starts_with(p))
            {
                out.push(n);
            }
            continued = l.ends_with('\\');
            continue;
        }
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') || is_conditional(t) {
            continue;
        }
        break;
    }
    out
}

fn is_conditional(t: &str) -> bool {
    ["ifeq", "ifneq", "ifdef", "ifndef", "else", "endif"]
        .iter()
        .any(|k| {
            t.strip_prefix(k)
                .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t', '(']))
        })
}

fn rel(dir: &Path, file: &str) -> String {
    let p = PathBuf::from(file);
    p.strip_prefix(dir)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| file.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_reads_commands_with_their_lines() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "V ?= 1\nX = \"a,b\"\nall: pre\n\tcd d && echo $(X) $(V) \\\n\t  more\n\n\t$(MAKE) sub\n\t@echo silent\npre:\n\techo pre\nsub:\n\techo sub\n",
        )
        .unwrap();
        let steps = dry_run(d.path(), "all", &[("V".into(), "2".into())]).unwrap();
        let got: Vec<(String, String, String)> = steps
            .iter()
            .map(|s| (s.target.clone(), s.location(), s.text.clone()))
            .collect();
        let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(
            got,
            vec![
                s("pre", "Makefile:10", "echo pre"),
                s("all", "Makefile:4", "cd d && echo \"a,b\" 2 \\\n  more"),
                s("all", "Makefile:7", ": opship-sub-make sub"),
                s("all", "Makefile:8", "echo silent"),
            ]
        );
        assert_eq!(steps[2].sub_make(), Some("sub"));
    }

    #[test]
    fn failures_quote_make() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Makefile"), "all: missing\n\techo x\n").unwrap();
        let e = dry_run(d.path(), "all", &[]).unwrap_err().to_string();
        assert!(e.contains("No rule to make target 'missing'"), "{e}");
        std::fs::write(d.path().join("Makefile"), "X = $(X) y\nall:\n\techo $(X)\n").unwrap();
        let e = dry_run(d.path(), "all", &[]).unwrap_err().to_string();
        assert!(
            e.contains("Makefile:1") && e.contains("references itself"),
            "{e}"
        );
    }
}
