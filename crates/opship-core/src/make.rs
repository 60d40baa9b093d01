//! What a project's own GNU make would run for a target and what its variables hold: a dry run
//! (`make -n --trace`) of the target, and make's own database (`make -n -p`) with the values
//! make expands, both with the release's variables on make's command line. make, not opship,
//! decides what the Makefile means; like `make bundle`, make evaluates `$(shell ...)`,
//! `$(file ...)` and `$(eval ...)` while it reads the Makefile and expands recipes
//! ([`Guard::evaluated`] lists where).
//!
//! A dry run runs nothing else ([`Guard`]): `make -n` still runs recipe lines marked `+` or
//! holding `$(MAKE)`, and the rules that remake included makefiles, through `$(SHELL)`; opship
//! gives make a `SHELL` that records those lines and runs none of them (unless
//! [`Recipes::Run`]), over the Makefile's own, its targets' and its patterns' (found in a first
//! read of make's database that stops before anything is remade). `MAKE` is a no-op command
//! whose printed line names the sub-target.
//!
//! An included makefile that is missing and that no rule makes (a test suite's Makefile a
//! partial checkout lacks) stops make; it is read as empty instead, and said so
//! ([`Missing`]), so the rest of the Makefile still counts.

use std::cell::RefCell;
use std::collections::BTreeMap;
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

/// How many missing included makefiles are read as empty before giving up.
const MAX_MISSING: usize = 16;

/// The target opship adds (with `--eval`) to have make print variables' values.
const INSPECT_TARGET: &str = ".opship-inspect";

/// The goal opship puts first in a dry run: what make runs before it remakes included makefiles.
const BEGIN_TARGET: &str = ".opship-begin";

/// What the end of the first read says (an `$(error)`: make stops before it remakes anything).
const READ_DONE: &str = "<opship-read-done>";

/// What make may do with the commands it runs in spite of `-n`: recipe lines marked `+` or
/// holding `$(MAKE)`, and the rules that remake included makefiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Recipes {
    /// Recorded, not run (the default: a dry run runs nothing the user did not ask for).
    #[default]
    Refused,
    /// Recorded and run, as plain `make -n` does (`init --run-make`); each run warns first with
    /// what it will run.
    Run,
}

/// The `SHELL` opship gives make, and what it saw: make runs every command through `$(SHELL)`;
/// a `$(shell ...)` (which make runs with its own environment, without `MAKELEVEL`) goes to
/// the Makefile's own shell; a command make runs for a target (`MAKELEVEL` set) is recorded and
/// refused or run as [`Recipes`] says.
pub struct Guard {
    recipes: Recipes,
    /// Holds the shell wrappers, the makefile read after the project's, and the record.
    dir: crate::fsutil::TempDir,
    /// The commands the wrapper was given for targets, in order.
    seen: RefCell<Vec<String>>,
    /// The makefiles make read (`MAKEFILE_LIST`), as make names them.
    makefiles: RefCell<Vec<String>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("recipes", &self.recipes)
            .field("seen", &self.seen.borrow())
            .finish()
    }
}

impl Guard {
    /// A guard with its shell wrappers written to a private directory.
    pub fn new(recipes: Recipes) -> Result<Guard> {
        // A registered temporary: removed on SIGINT/SIGTERM, swept after a SIGKILL.
        let dir = crate::fsutil::temp_dir(".opship-make-")
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let record = dir.path().join("record");
        let quoted = format!("'{}'", record.display().to_string().replace('\'', "'\\''"));
        for (name, then) in [("refuse", "exit 0"), ("run", "exec \"$@\"")] {
            let script = format!(
                "#!/bin/sh\n# opship's SHELL for make: $(shell ...) runs in the Makefile's shell; a command make runs for a target is recorded, then: {name}\nif [ -z \"${{MAKELEVEL+set}}\" ]; then exec \"$@\"; fi\neval \"opship_line=\\${{$#}}\"\nprintf '%s\\0' \"$opship_line\" >> {quoted}\n{then}\n"
            );
            let path = dir.path().join(name);
            std::fs::write(&path, script).map_err(|e| Error::io(&path, e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| Error::io(&path, e))?;
            }
        }
        let read = dir.path().join("read.mk");
        std::fs::write(&read, format!("$(error {READ_DONE})\n"))
            .map_err(|e| Error::io(&read, e))?;
        Ok(Guard {
            recipes,
            dir,
            seen: RefCell::default(),
            makefiles: RefCell::default(),
        })
    }

    /// Whether make may run what it runs in spite of `-n`.
    pub fn recipes(&self) -> Recipes {
        self.recipes
    }

    /// Every command make ran (or would have, when refused) for a target so far, in order,
    /// each once.
    pub fn seen(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.seen.borrow().iter() {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }

    /// Where the makefiles make read call `$(shell ...)`, `$(file ...)` and `$(eval ...)`,
    /// which make evaluates while it reads them or expands a recipe (as `make bundle` does):
    /// one line per makefile make read, `FILE: make evaluated `$(shell …)` at lines 3, 12; …`.
    pub fn evaluated(&self, dir: &Path) -> Vec<String> {
        /// Line numbers listed per function.
        const MAX_LINES: usize = 12;
        let mut out = Vec::new();
        let mut done: Vec<PathBuf> = Vec::new();
        for m in self.makefiles.borrow().iter() {
            let path = dir.join(m);
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if done.contains(&real) {
                continue;
            }
            done.push(real);
            let Ok(text) = crate::input::read_string(&path, crate::input::Kind::Config) else {
                continue;
            };
            let mut found: Vec<(&str, Vec<usize>)> = Vec::new();
            for (i, l) in text.lines().enumerate() {
                let code = l.split_once('#').map_or(l, |(c, _)| c);
                for f in ["shell", "file", "eval"] {
                    let used = [format!("$({f} "), format!("${{{f} ")]
                        .iter()
                        .any(|p| code.contains(p.as_str()));
                    if used {
                        match found.iter_mut().find(|(n, _)| *n == f) {
                            Some((_, lines)) => lines.push(i + 1),
                            None => found.push((f, vec![i + 1])),
                        }
                    }
                }
            }
            if found.is_empty() {
                continue;
            }
            let parts: Vec<String> = found
                .iter()
                .map(|(f, lines)| {
                    let mut shown: Vec<String> = lines
                        .iter()
                        .take(MAX_LINES)
                        .map(|n| n.to_string())
                        .collect();
                    if lines.len() > MAX_LINES {
                        shown.push(format!("and {} more", lines.len() - MAX_LINES));
                    }
                    format!(
                        "`$({f} …)` at line{} {}",
                        if lines.len() == 1 { "" } else { "s" },
                        shown.join(", ")
                    )
                })
                .collect();
            out.push(format!(
                "{}: make evaluated {} while it read the Makefile and expanded the recipe, as `make bundle` does",
                rel(dir, m),
                parts.join("; ")
            ));
        }
        out
    }

    /// The commands the wrapper recorded since the last call, added to [`Guard::seen`].
    fn take_record(&self) -> Vec<String> {
        let path = self.dir.path().join("record");
        let text = std::fs::read(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        let new: Vec<String> = String::from_utf8_lossy(&text)
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        self.seen.borrow_mut().extend(new.iter().cloned());
        new
    }
}

/// An included makefile make could not find nor make, read as empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// `FILE:LINE` of the `include`.
    pub at: String,
    /// The file as the `include` names it.
    pub file: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} includes `{}`, which is missing and which no rule makes: make stops there, opship read it as empty",
            self.at, self.file
        )
    }
}

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

/// What a dry run gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// The commands, in order, prerequisites first.
    pub steps: Vec<Step>,
    /// The commands of the rules that remake included makefiles, which make runs first (each
    /// refused unless [`Recipes::Run`], so the makefile is read as it is, or not at all).
    pub remade: Vec<Step>,
    /// Included makefiles read as empty.
    pub missing: Vec<Missing>,
}

/// Where make says a variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// make's command line (the release's variables, `--set`).
    CommandLine,
    /// An assignment in a makefile (`override` ones too).
    File {
        /// The makefile, relative to the project when inside it.
        file: String,
        /// The line of the (last) assignment.
        line: u32,
    },
    /// make's own defaults, the environment or an automatic variable.
    Builtin,
}

/// A variable as make holds it once the Makefile is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The value as make expands it for a recipe.
    pub value: String,
    /// Where it was set.
    pub origin: Origin,
    /// Variables the value refers to that are not set, which make expands to nothing (a value
    /// built from the environment, which opship does not pass): (name, `FILE:LINE` of the
    /// reference where make says it).
    pub undefined: Vec<(String, String)>,
}

impl Variable {
    /// `Makefile:12`, or `--set` for a command-line value.
    pub fn location(&self) -> String {
        match &self.origin {
            Origin::CommandLine => "--set".to_owned(),
            Origin::File { file, line } => format!("{file}:{line}"),
            Origin::Builtin => "make's defaults".to_owned(),
        }
    }
}

/// What make knows of a Makefile: the asked variables that are set, and its targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Database {
    /// The asked variables that are set, by name.
    pub variables: BTreeMap<String, Variable>,
    /// Every target a rule of the Makefile (or an included one) names, sorted.
    pub targets: Vec<String>,
    /// Included makefiles read as empty.
    pub missing: Vec<Missing>,
}

/// The commands `make TARGET VARS…` would run in `dir`, in order, prerequisites first.
pub fn dry_run(
    guard: &Guard,
    dir: &Path,
    target: &str,
    vars: &[(String, String)],
) -> Result<DryRun> {
    let shown = shown(&format!("make -n {target}"), vars);
    // The target's recipe is what is asked for, also when a file or directory has its name
    // (`bundle/` from an earlier run, and a Makefile that forgot `.PHONY: bundle`).
    let phony = if plain_target(target) {
        vec![format!(".PHONY: {target}")]
    } else {
        Vec::new()
    };
    let (out, missing) = run(
        guard,
        dir,
        &["-n", "--trace"],
        &phony,
        vars,
        &[BEGIN_TARGET, target],
        &shown,
        crate::child::Limits::new(TIMEOUT, MAX_OUTPUT),
    )?;
    let text = String::from_utf8(out.stdout)
        .map_err(|_| Error::Input(format!("`{shown}` printed something that is not UTF-8")))?;
    let (remade, steps) = parse(&text, dir);
    Ok(DryRun {
        steps,
        remade,
        missing,
    })
}

/// make's database of the Makefile in `dir` with `vars` on its command line: the values of
/// `names` (those that are set) as make expands them, and the Makefile's targets. With
/// `target`, the values are those its recipe sees (its target-specific ones included): the
/// printing target is made a prerequisite of it, and it is dry-run too.
pub fn inspect(
    guard: &Guard,
    dir: &Path,
    names: &[&str],
    vars: &[(String, String)],
    target: Option<&str>,
) -> Result<Database> {
    for n in names {
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Error::Input(format!("`{n}` is not a make variable name")));
        }
    }
    // Each value between markers on stderr, where make also says which variables an
    // expansion refers to that are not set (`--warn-undefined-variables`), in order.
    let rule = format!(
        "{INSPECT_TARGET}: ; @:$(foreach _opship_var_,{},$(warning <opship-var $(_opship_var_)>)$(warning <opship-value>$($(_opship_var_)))$(warning <opship-end>))",
        names.join(" ")
    );
    let shown = shown("make -n -p", vars);
    let mut evals = vec![rule];
    let goal = match target {
        Some(t) if plain_target(t) => {
            evals.push(format!(".PHONY: {t}"));
            evals.push(format!("{t}: {INSPECT_TARGET}"));
            t
        }
        Some(t) => return Err(Error::Input(format!("`{t}` is not a plain make target"))),
        None => INSPECT_TARGET,
    };
    let mut limits = crate::child::Limits::new(TIMEOUT, MAX_OUTPUT);
    limits.max_stderr = MAX_OUTPUT;
    let (out, missing) = run(
        guard,
        dir,
        &["-n", "-p", "--warn-undefined-variables"],
        &evals,
        vars,
        &[goal],
        &shown,
        limits,
    )?;
    let db = String::from_utf8_lossy(&out.stdout);
    let origins = variable_origins(&db, dir, target);
    let mut variables = BTreeMap::new();
    let err = String::from_utf8_lossy(&out.stderr);
    // Undefined references make met while reading the Makefile: a simple (`:=`) variable's
    // are said at its own line.
    let mut at_parse: Vec<(String, String)> = Vec::new();
    let mut lines = err.lines();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    while let Some(l) = lines.next() {
        if let Some(name) = marker(l, "<opship-var ") {
            current = Some((name.trim_end_matches('>').to_owned(), Vec::new()));
        } else if let Some(first) = marker(l, "<opship-value>") {
            let mut value = first.to_owned();
            for next in lines.by_ref() {
                if marker(next, "<opship-end>").is_some() {
                    break;
                }
                value.push('\n');
                value.push_str(next);
            }
            let Some((name, mut undefined)) = current.take() else {
                continue;
            };
            let Some(origin) = origins.get(&name).cloned() else {
                continue;
            };
            if let Origin::File { file, line } = &origin {
                let here = format!("{file}:{line}");
                undefined.extend(at_parse.iter().filter(|(_, at)| *at == here).cloned());
            }
            undefined.dedup();
            variables.insert(
                name,
                Variable {
                    value,
                    origin,
                    undefined,
                },
            );
        } else if let Some((name, at)) = undefined_reference(l, dir) {
            match &mut current {
                Some((_, u)) => u.push((name, at)),
                None => at_parse.push((name, at)),
            }
        }
    }
    let targets = targets(&db)
        .into_iter()
        .filter(|t| !missing.iter().any(|m| m.file == *t))
        .collect();
    Ok(Database {
        variables,
        targets,
        missing,
    })
}

/// `head VAR=VALUE…`: a make run as the user would type it, for messages.
fn shown(head: &str, vars: &[(String, String)]) -> String {
    let mut out = head.to_owned();
    for (k, v) in vars {
        out.push_str(&format!(" {k}={v}"));
    }
    out
}

/// `FILE:LINE` as make prints it, the file relative to the project when inside it.
fn located(at: &str, dir: &Path) -> String {
    match at.rsplit_once(':') {
        Some((file, num)) if num.parse::<u32>().is_ok() => format!("{}:{num}", rel(dir, file)),
        _ => at.to_owned(),
    }
}

/// A target name that can be written into make syntax as it is.
fn plain_target(t: &str) -> bool {
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/+".contains(c))
}

/// The text after `mark` in a line make printed with `$(warning)`.
fn marker<'a>(line: &'a str, mark: &str) -> Option<&'a str> {
    line.find(mark).map(|i| &line[i + mark.len()..])
}

/// `FILE:LINE: warning: undefined variable 'NAME'`: (NAME, `FILE:LINE`).
fn undefined_reference(line: &str, dir: &Path) -> Option<(String, String)> {
    const WARNING: &str = ": warning: undefined variable '";
    let i = line.find(WARNING)?;
    let name = line[i + WARNING.len()..].strip_suffix('\'')?;
    Some((name.to_owned(), located(&line[..i], dir)))
}

/// The origin of every variable in the `# Variables` section of make's database (`-p`), and
/// over those, of the target-specific ones of `target` (`bundle: IMG = …`, in the `# Files`
/// section).
fn variable_origins(db: &str, dir: &Path, target: Option<&str>) -> BTreeMap<String, Origin> {
    let mut out = BTreeMap::new();
    let mut section = "";
    let mut origin: Option<Origin> = None;
    let mut lines = db.lines();
    while let Some(l) = lines.next() {
        if let Some(s) = db_section(l) {
            section = s;
            origin = None;
            continue;
        }
        if section != "# Variables" && section != "# Files" {
            continue;
        }
        if let Some(c) = l.strip_prefix("# ") {
            origin = origin_of(c, dir);
            continue;
        }
        let Some(o) = origin.take() else { continue };
        let definition = if section == "# Files" {
            // `TARGET: NAME = VALUE`, a target-specific value of the asked target.
            match (target, l.split_once(": ")) {
                (Some(t), Some((name, rest))) if name == t => rest,
                _ => continue,
            }
        } else {
            l
        };
        let name = if let Some(n) = definition.strip_prefix("define ") {
            // A multi-line value: its body is not a definition.
            for body in lines.by_ref() {
                if body == "endef" {
                    break;
                }
            }
            n.trim()
        } else {
            match definition.find(" = ").or_else(|| definition.find(" := ")) {
                Some(i) => &definition[..i],
                None => continue,
            }
        };
        let name = name.strip_prefix("override ").unwrap_or(name);
        let name = name.strip_prefix("export ").unwrap_or(name).trim();
        out.insert(name.to_owned(), o);
    }
    out
}

/// `makefile (from 'FILE', line N)`, `'override' directive (from …)`, `command line`: where a
/// definition in make's database comes from; `None` for comments that say something else.
fn origin_of(comment: &str, dir: &Path) -> Option<Origin> {
    if comment == "command line" {
        return Some(Origin::CommandLine);
    }
    if [
        "default",
        "environment",
        "automatic",
        "environment under -e",
    ]
    .contains(&comment)
    {
        return Some(Origin::Builtin);
    }
    if !(comment.starts_with("makefile") || comment.starts_with("'override' directive")) {
        return None;
    }
    let rest = comment.split_once("(from '").map(|(_, r)| r);
    Some(match rest.and_then(|r| r.rsplit_once("', line ")) {
        Some((file, num)) => match num.trim_end_matches(')').parse::<u32>() {
            Ok(line) => Origin::File {
                file: rel(dir, file),
                line,
            },
            Err(_) => Origin::Builtin,
        },
        None => Origin::Builtin,
    })
}

/// The targets in the `# Files` section of make's database: each rule's `NAME:` line that is
/// not marked `# Not a target:` (suffix rules, files make only looked at).
fn targets(db: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_files = false;
    let mut not_a_target = false;
    for l in db.lines() {
        if l == "# Files" {
            in_files = true;
            continue;
        }
        if !in_files {
            continue;
        }
        if l.starts_with("# VPATH") || l.starts_with("# finished") {
            break;
        }
        if l == "# Not a target:" {
            not_a_target = true;
            continue;
        }
        if l.is_empty() || l.starts_with(['#', '\t', ' ']) {
            continue;
        }
        if let Some((name, _)) = l.split_once(':')
            && !std::mem::take(&mut not_a_target)
            && !name.is_empty()
            && name != INSPECT_TARGET
            && name != BEGIN_TARGET
            && !name.contains(['%', '$', ' '])
        {
            out.push(name.to_owned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Runs make in `dir` with `flags`, `--eval` texts, `vars` and `goals`, under `guard`'s shell
/// (a first read of the Makefile finds the targets and patterns that set their own `SHELL`);
/// an included makefile that is missing and that no rule makes is given an empty rule (so make
/// reads on) and returned, up to [`MAX_MISSING`].
#[allow(clippy::too_many_arguments)]
fn run(
    guard: &Guard,
    dir: &Path,
    flags: &[&str],
    evals: &[String],
    vars: &[(String, String)],
    goals: &[&str],
    shown: &str,
    limits: crate::child::Limits,
) -> Result<(crate::child::Output, Vec<Missing>)> {
    let own_shells = read_shells(guard, dir, evals, vars, shown, limits)?;
    for mode in [Recipes::Refused, Recipes::Run] {
        let mut text = format!(
            "# The makefile opship has make read after the project's: every command make runs goes through opship's wrapper.\n_opship_shell := $(SHELL)\noverride SHELL := {0} $(_opship_shell)\n",
            guard.dir.path().join(wrapper(mode)).display()
        );
        for name in &own_shells {
            text.push_str(&format!(
                "{name}: override SHELL := {} $(_opship_shell)\n",
                guard.dir.path().join(wrapper(mode)).display()
            ));
        }
        // `$(MAKEFILE_LIST)` in a recipe names the project's makefiles only.
        // The first goal: what make ran before it are the rules remaking included makefiles.
        text.push_str(&format!(
            "MAKEFILE_LIST := $(wordlist 2,$(words $(MAKEFILE_LIST)),x $(MAKEFILE_LIST))\n{BEGIN_TARGET}: ; @:\n"
        ));
        let path = guard.dir.path().join(overlay(mode));
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    }
    let mut missing: Vec<Missing> = Vec::new();
    loop {
        if guard.recipes == Recipes::Run {
            // What the run will run, said before it runs.
            let (_, _) = make_once(
                guard,
                Recipes::Refused,
                dir,
                flags,
                evals,
                vars,
                goals,
                shown,
                limits,
                &missing,
            )?;
            let will = guard.take_record();
            if !will.is_empty() {
                tracing::warn!(
                    "--run-make: `{shown}` in {} runs {}",
                    crate::paths::show(dir),
                    will.iter()
                        .map(|c| format!("`{}`", c.lines().next().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        let (out, message) = make_once(
            guard,
            guard.recipes,
            dir,
            flags,
            evals,
            vars,
            goals,
            shown,
            limits,
            &missing,
        )?;
        let ran = guard.take_record();
        guard.seen.borrow_mut().extend(ran);
        let Some(message) = message else {
            return Ok((out, missing));
        };
        match missing_include(&message, dir) {
            Some(m) if missing.len() < MAX_MISSING && !missing.contains(&m) => missing.push(m),
            _ => {
                let hint = failed_include(&message, dir)
                    .map(|(at, file, rule)| format!(
                        "\nmake could not make `{file}`, which {at} includes: its recipe ({rule}) failed. A Makefile that fetches its build environment this way (a build container's Makefile) reads its recipe in that environment; give the variables that select the recipe to run here (those the environment sets) as --set VAR=VALUE"
                    ))
                    .unwrap_or_default();
                return Err(Error::Input(format!(
                    "`{shown}` in {} failed ({}): {message}{hint}",
                    crate::paths::show(dir),
                    out.status
                )));
            }
        }
    }
}

/// The wrapper script of a mode.
fn wrapper(mode: Recipes) -> &'static str {
    match mode {
        Recipes::Refused => "refuse",
        Recipes::Run => "run",
    }
}

/// The makefile read after the project's, per mode.
fn overlay(mode: Recipes) -> &'static str {
    match mode {
        Recipes::Refused => "guard-refuse.mk",
        Recipes::Run => "guard-run.mk",
    }
}

/// make with the project's arguments: `-f Makefile` then `extra` makefiles, `MAKE` a no-op,
/// `missing` includes given an empty rule, `evals`, `vars`, then `goals`.
#[allow(clippy::too_many_arguments)]
fn command(
    dir: &Path,
    flags: &[&str],
    extra: &Path,
    evals: &[String],
    vars: &[(String, String)],
    goals: &[&str],
    missing: &[Missing],
) -> Command {
    let mut cmd = Command::new("make");
    cmd.current_dir(dir)
        .args(flags)
        .args(["--no-print-directory", "-f", "Makefile", "-f"])
        .arg(extra)
        .arg(format!("MAKE={SUB_MAKE}"))
        // Only PATH and HOME from the environment: make lets the environment win over `?=`,
        // and the same project must give the same values everywhere (values that come from
        // the environment are given as make command-line variables instead). No `MAKELEVEL`
        // either: it is how opship's shell tells a `$(shell ...)` from a target's command.
        .env_clear()
        .env("LC_ALL", "C");
    for keep in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    for m in missing {
        cmd.arg(format!("--eval={}: ; @:", m.file));
    }
    for e in evals {
        cmd.arg(format!("--eval={e}"));
    }
    for (k, v) in vars {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.arg("--").args(goals);
    cmd
}

/// One run of make under the mode's overlay: its output, and make's message when it failed.
#[allow(clippy::too_many_arguments)]
fn make_once(
    guard: &Guard,
    mode: Recipes,
    dir: &Path,
    flags: &[&str],
    evals: &[String],
    vars: &[(String, String)],
    goals: &[&str],
    shown: &str,
    limits: crate::child::Limits,
    missing: &[Missing],
) -> Result<(crate::child::Output, Option<String>)> {
    let mut cmd = command(
        dir,
        flags,
        &guard.dir.path().join(overlay(mode)),
        evals,
        vars,
        goals,
        missing,
    );
    let out = crate::child::run(&mut cmd, None, limits, shown).map_err(|e| no_make(e, dir))?;
    let message = (!out.status.success()).then(|| out.message());
    Ok((out, message))
}

fn no_make(e: Error, dir: &Path) -> Error {
    match e {
        Error::Input(m) if m.starts_with("cannot run") => Error::Input(format!(
            "{m}: reading {}'s bundle recipe needs GNU make on PATH",
            crate::paths::show(&dir.join("Makefile"))
        )),
        e => e,
    }
}

/// The first read: make's database as the Makefile leaves it, printed when the makefile read
/// last stops make with an `$(error)`, before make remakes any included makefile or runs
/// anything for a target. Records the makefiles make read and returns the targets and patterns
/// that set their own `SHELL` (a target's own value wins over opship's global one).
fn read_shells(
    guard: &Guard,
    dir: &Path,
    evals: &[String],
    vars: &[(String, String)],
    shown: &str,
    limits: crate::child::Limits,
) -> Result<Vec<String>> {
    let mut limits = limits;
    limits.max_stderr = MAX_OUTPUT;
    let mut cmd = command(
        dir,
        &["-n", "-p"],
        &guard.dir.path().join("read.mk"),
        evals,
        vars,
        &[BEGIN_TARGET],
        &[],
    );
    let out = crate::child::run(&mut cmd, None, limits, shown).map_err(|e| no_make(e, dir))?;
    let message = out.message();
    if out.status.success() || !message.contains(READ_DONE) {
        // make stopped while reading (a syntax error, the Makefile's own `$(error)`).
        return Err(Error::Input(format!(
            "`{shown}` in {} failed ({}): {message}",
            crate::paths::show(dir),
            out.status
        )));
    }
    let db = String::from_utf8_lossy(&out.stdout);
    let mut names = Vec::new();
    let mut section = "";
    let mut pattern: Option<&str> = None;
    for l in db.lines() {
        if let Some(h) = db_section(l) {
            section = h;
            pattern = None;
            continue;
        }
        if section.starts_with("# Variables") {
            if let Some(list) = l.strip_prefix("MAKEFILE_LIST := ") {
                let mut files: Vec<&str> = list.split_whitespace().collect();
                files.pop();
                let mut known = guard.makefiles.borrow_mut();
                for f in files {
                    if !known.iter().any(|k| k == f) {
                        known.push(f.to_owned());
                    }
                }
            }
        } else if section.starts_with("# Pattern-specific") {
            if let Some(p) = l.strip_suffix(" :") {
                pattern = Some(p);
            } else if let Some(p) = pattern
                && sets_shell(l.strip_prefix("# ").unwrap_or_default())
            {
                names.push(p.to_owned());
            }
        } else if section.starts_with("# Files")
            && let Some(i) = l.find(": SHELL ")
            && sets_shell(&l[i + 2..])
        {
            names.push(l[..i].to_owned());
        }
    }
    names.sort();
    names.dedup();
    for n in &names {
        let writable =
            n.chars().filter(|c| *c == '%').count() <= 1 && plain_target(&n.replace('%', "x"));
        if !writable && guard.recipes == Recipes::Refused {
            return Err(Error::Input(format!(
                "the Makefile in {} gives the target `{n}` its own SHELL, which opship cannot replace to keep make from running its commands; read it with --run-make, which runs what `make -n` runs",
                crate::paths::show(dir)
            )));
        }
    }
    names.retain(|n| {
        n.chars().filter(|c| *c == '%').count() <= 1 && plain_target(&n.replace('%', "x"))
    });
    Ok(names)
}

/// `SHELL = …`, `SHELL := …`, `SHELL += …` …: a definition of `SHELL` in make's database.
fn sets_shell(definition: &str) -> bool {
    definition.strip_prefix("SHELL ").is_some_and(|r| {
        ["=", ":=", "::=", "+=", "?=", "!="]
            .iter()
            .any(|op| r.starts_with(&format!("{op} ")) || r == *op)
    })
}

/// make's `FILE:LINE: INC: No such file or directory` … `*** [RULE: INC] Error N`: an
/// `include` whose rule make ran and that failed (a download): (`FILE:LINE` of the include,
/// INC, `FILE:LINE` of the recipe line that failed).
fn failed_include(message: &str, dir: &Path) -> Option<(String, String, String)> {
    let last = message.lines().last()?;
    let rest = &last[last.find("*** [")? + 5..];
    let (rule, rest) = rest.split_once(": ")?;
    let file = rest.split_once("] Error")?.0;
    Some((
        include_site(message, file, dir)?,
        file.to_owned(),
        rule.to_owned(),
    ))
}

/// `FILE:LINE` of make's `FILE:LINE: INC: No such file or directory`: where `file` is included.
fn include_site(message: &str, file: &str, dir: &Path) -> Option<String> {
    let suffix = format!(": {file}: No such file or directory");
    let at = message.lines().find_map(|l| l.strip_suffix(&suffix))?;
    Some(located(at, dir))
}

/// make's `FILE:LINE: INC: No such file or directory` … `No rule to make target 'INC'.  Stop.`:
/// an `include` of a file that is not there and that no rule makes.
fn missing_include(message: &str, dir: &Path) -> Option<Missing> {
    const NO_RULE: &str = "No rule to make target '";
    let last = message.lines().last()?;
    let i = last.find(NO_RULE)?;
    let rest = &last[i + NO_RULE.len()..];
    let file = &rest[..rest.find('\'')?];
    // The rule opship adds names the file as make syntax: plain paths only.
    if !plain_target(file) {
        return None;
    }
    Some(Missing {
        at: include_site(message, file, dir)?,
        file: file.to_owned(),
    })
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

/// The commands of a dry run's output: those of the rules make ran before opship's first goal
/// (remaking included makefiles), and the others.
fn parse(text: &str, dir: &Path) -> (Vec<Step>, Vec<Step>) {
    // The printed commands after each trace line (lines before the first belong to none).
    let mut groups: Vec<((String, u32, String), Vec<String>)> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        if pending.is_empty()
            && let Some(t) = trace(line)
        {
            groups.push((t, Vec::new()));
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
        let done = std::mem::take(&mut pending);
        if let Some((_, g)) = groups.last_mut() {
            g.push(done);
        }
    }
    if !pending.is_empty()
        && let Some((_, g)) = groups.last_mut()
    {
        g.push(pending);
    }
    let recipes: Vec<Recipe> = groups
        .iter()
        .map(|((file, rule, _), _)| recipe_lines(&dir.join(file), *rule))
        .collect();
    let begun = groups.iter().any(|((_, _, t), _)| t == BEGIN_TARGET);
    let mut remade = Vec::new();
    let mut steps = Vec::new();
    let mut before = begun;
    for (i, ((file, rule, target), mut group)) in groups.into_iter().enumerate() {
        if target == BEGIN_TARGET {
            before = false;
            continue;
        }
        let into = if before { &mut remade } else { &mut steps };
        // make expands a recipe before it traces its target, so what the next recipe's
        // `$(info …)` prints comes last in this group: not commands.
        let infos = recipes.get(i + 1).map_or(0, |r| r.infos);
        group.truncate(group.len().saturating_sub(infos));
        let recipe = &recipes[i];
        // One command per line as written, unless a conditional inside the recipe left some
        // lines out: then matched by their text.
        let at: Vec<u32> = if !recipe.conditional && recipe.lines.len() == group.len() {
            recipe.lines.iter().map(|(n, _)| *n).collect()
        } else {
            align(&group, &recipe.lines).unwrap_or_else(|| vec![rule; group.len()])
        };
        for (t, line) in group.into_iter().zip(at) {
            into.push(Step {
                target: target.clone(),
                file: rel(dir, &file),
                line,
                text: t,
            });
        }
    }
    (remade, steps)
}

/// A recipe as written: the first physical line of each line make prints (with the text of
/// the whole line), how many `$(info …)` it holds, and whether some of its lines sit in a make
/// conditional (`ifeq … else … endif`) opened inside the recipe, whose taken branch the
/// printed commands tell.
#[derive(Debug, Default)]
struct Recipe {
    lines: Vec<(u32, String)>,
    infos: usize,
    conditional: bool,
}

/// The recipe lines of the recipe whose first run line is line `rule` of `file` (make's trace
/// names the first line it runs, also when that line is inside a conditional). A conditional
/// the recipe starts inside ends its taken branch at its `else`: the lines up to its `endif`
/// are not run.
fn recipe_lines(file: &Path, rule: u32) -> Recipe {
    let Ok(text) = crate::input::read_string(file, crate::input::Kind::Config) else {
        return Recipe::default();
    };
    let mut out = Recipe::default();
    let mut continued = false;
    // Conditionals opened after `rule`, and whether the enclosing one's branch is over.
    let mut depth = 0usize;
    let mut skipping = false;
    for (i, l) in text
        .lines()
        .enumerate()
        .skip(rule.saturating_sub(1) as usize)
    {
        let n = i as u32 + 1;
        if continued {
            continued = l.ends_with('\\');
            if !skipping {
                out.infos += l.matches("$(info ").count() + l.matches("${info ").count();
                if let Some((_, last)) = out.lines.last_mut() {
                    last.push('\n');
                    last.push_str(l);
                }
            }
            continue;
        }
        if let Some(cmd) = l.strip_prefix('\t') {
            continued = l.ends_with('\\');
            if skipping {
                continue;
            }
            out.infos += l.matches("$(info ").count() + l.matches("${info ").count();
            // make prints nothing for a line that expands to nothing (`$(info …)`).
            let t = cmd.trim();
            if !t.is_empty()
                && !["$(info ", "$(warning ", "$(eval "]
                    .iter()
                    .any(|p| t.starts_with(p))
            {
                out.lines.push((n, cmd.to_owned()));
                out.conditional |= depth > 0;
            } else if continued {
                // The continuation of a line that prints nothing is not another's.
                out.lines.push((0, String::new()));
            }
            continue;
        }
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if !is_conditional(t) {
            break;
        }
        if t.starts_with("if") {
            depth += 1;
        } else if t.starts_with("endif") {
            if depth == 0 {
                skipping = false;
            } else {
                depth -= 1;
            }
        } else if depth == 0 {
            // `else` of the conditional the recipe started in: its taken branch is over.
            skipping = true;
        }
    }
    out.lines.retain(|(n, _)| *n > 0);
    out
}

/// The recipe line each printed command comes from: the lines in order, each command matched
/// to a later line than the one before whose literal text (what is not a make reference) it
/// holds, the most literal text matched overall; `None` when the commands cannot all be
/// matched.
fn align(printed: &[String], lines: &[(u32, String)]) -> Option<Vec<u32>> {
    let (n, m) = (printed.len(), lines.len());
    if n > m {
        return None;
    }
    let printed: Vec<String> = printed.iter().map(|p| squeeze(p)).collect();
    let fragments: Vec<Vec<String>> = lines.iter().map(|(_, t)| literal_parts(t)).collect();
    // score[k][j]: the best match of the first k commands within the first j lines.
    let mut score = vec![vec![None::<usize>; m + 1]; n + 1];
    for cell in score[0].iter_mut() {
        *cell = Some(0);
    }
    for k in 1..=n {
        for j in k..=m {
            let skip = score[k][j - 1];
            let take = score[k - 1][j - 1]
                .and_then(|s| holds(&printed[k - 1], &fragments[j - 1]).map(|h| s + h));
            score[k][j] = skip.max(take);
        }
    }
    score[n][m]?;
    let mut out = vec![0; n];
    let (mut k, mut j) = (n, m);
    while k > 0 {
        let take = score[k - 1][j - 1]
            .and_then(|s| holds(&printed[k - 1], &fragments[j - 1]).map(|h| s + h));
        if take.is_some() && take == score[k][j] {
            out[k - 1] = lines[j - 1].0;
            k -= 1;
        }
        j -= 1;
    }
    Some(out)
}

/// The text without line continuations and white space, as compared.
fn squeeze(text: &str) -> String {
    text.replace("\\\n", "")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// How much of `fragments` `printed` holds, in order; `None` when one is missing.
fn holds(printed: &str, fragments: &[String]) -> Option<usize> {
    let mut at = 0;
    let mut total = 0;
    for f in fragments {
        let i = printed[at..].find(f.as_str())?;
        at += i + f.len();
        total += f.len();
    }
    Some(total)
}

/// The literal parts of a recipe line as written (make references, `$(…)`, `${…}` and `$X`,
/// left out; `$$` is a `$`; the `@`, `-`, `+` prefixes dropped), squeezed.
fn literal_parts(line: &str) -> Vec<String> {
    let line = squeeze(line);
    let line = line.trim_start_matches(['@', '-', '+']);
    let chars: Vec<char> = line.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            cur.push(chars[i]);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('$') => {
                cur.push('$');
                i += 2;
            }
            Some(&open) if open == '(' || open == '{' => {
                let close = if open == '(' { ')' } else { '}' };
                let mut level = 0;
                let mut j = i + 1;
                while j < chars.len() {
                    if chars[j] == open {
                        level += 1;
                    } else if chars[j] == close {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    j += 1;
                }
                if !cur.is_empty() {
                    parts.push(std::mem::take(&mut cur));
                }
                i = j + 1;
            }
            _ => {
                if !cur.is_empty() {
                    parts.push(std::mem::take(&mut cur));
                }
                i += 2;
            }
        }
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
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
        .map(|r| crate::paths::show(r).to_string())
        .unwrap_or_else(|_| file.to_owned())
}

/// The section of make's database (`make -p`) that the header line `l` opens, if it is one;
/// the one list both readers of the database use.
fn db_section(l: &str) -> Option<&'static str> {
    [
        "# Variables",
        "# Pattern-specific",
        "# Directories",
        "# Implicit Rules",
        "# Files",
        "# VPATH",
        "# finished",
    ]
    .into_iter()
    .find(|h| l.starts_with(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(Recipes::Refused).unwrap()
    }

    #[test]
    fn dry_run_reads_commands_with_their_lines() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "V ?= 1\nX = \"a,b\"\nall: pre\n\tcd d && echo $(X) $(V) \\\n\t  more\n\n\t$(MAKE) sub\n\t@echo silent\npre:\n\techo pre\nsub:\n\techo sub\n",
        )
        .unwrap();
        let steps = dry_run(&guard(), d.path(), "all", &[("V".into(), "2".into())])
            .unwrap()
            .steps;
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

    /// Issue 33, item 13: a make conditional inside a recipe (ifeq/ifneq/ifdef/ifndef, else,
    /// else-if, nested) leaves each printed command at its own line.
    #[test]
    fn commands_in_conditionals_keep_their_lines() {
        let d = tempfile::tempdir().unwrap();
        for (makefile, vars, want) in [
            (
                "A = 1\nall:\n\techo first\nifeq ($(A),1)\n\techo one $(A)\nelse\n\techo other\nendif\n\techo last\n",
                vec![],
                vec![(3, "echo first"), (5, "echo one 1"), (9, "echo last")],
            ),
            (
                "A = 1\nall:\n\techo first\nifeq ($(A),1)\n\techo one $(A)\nelse\n\techo other\nendif\n\techo last\n",
                vec![("A", "2")],
                vec![(3, "echo first"), (7, "echo other"), (9, "echo last")],
            ),
            (
                "all:\nifdef B\n\tprintf b\nelse ifndef C\n\tprintf not-c\nelse\n\tprintf c\nendif\n\tprintf end\n",
                vec![("C", "x")],
                vec![(7, "printf c"), (9, "printf end")],
            ),
            (
                "all:\nifdef B\n\tprintf b\nelse ifndef C\n\tprintf not-c\nelse\n\tprintf c\nendif\n\tprintf end\n",
                vec![],
                vec![(5, "printf not-c"), (9, "printf end")],
            ),
            (
                "X = y\nall:\n\ttouch a\nifneq ($(X),z)\n  ifeq ($(X),y)\n\ttouch b $(X)\n  else\n\ttouch c\n  endif\n\ttouch d\nelse\n\ttouch e\nendif\n\ttouch f \\\n\t  g\n",
                vec![],
                vec![
                    (3, "touch a"),
                    (6, "touch b y"),
                    (10, "touch d"),
                    (14, "touch f \\\n  g"),
                ],
            ),
            (
                "X = y\nall:\n\ttouch a\nifneq ($(X),z)\n  ifeq ($(X),y)\n\ttouch b $(X)\n  else\n\ttouch c\n  endif\n\ttouch d\nelse\n\ttouch e\nendif\n\ttouch f \\\n\t  g\n",
                vec![("X", "w")],
                vec![
                    (3, "touch a"),
                    (8, "touch c"),
                    (10, "touch d"),
                    (14, "touch f \\\n  g"),
                ],
            ),
        ] {
            std::fs::write(d.path().join("Makefile"), makefile).unwrap();
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let got: Vec<(u32, String)> = dry_run(&guard(), d.path(), "all", &vars)
                .unwrap()
                .steps
                .into_iter()
                .map(|s| (s.line, s.text))
                .collect();
            let want: Vec<(u32, String)> = want.iter().map(|(n, t)| (*n, t.to_string())).collect();
            assert_eq!(got, want, "{makefile} {vars:?}");
        }
    }

    /// make prints a recipe's `$(info …)` before it traces the target: not a command of the
    /// target before it.
    #[test]
    fn info_output_is_not_a_command() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "all: pre\n\techo one\n\t$(info INFO-A)\n\t@$(info INFO-B) echo two\npre:\n\t$(info PRE)\n\techo pre\n",
        )
        .unwrap();
        let got: Vec<(String, String)> = dry_run(&guard(), d.path(), "all", &[])
            .unwrap()
            .steps
            .into_iter()
            .map(|s| (s.location(), s.text))
            .collect();
        let s = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            got,
            vec![
                s("Makefile:7", "echo pre"),
                s("Makefile:2", "echo one"),
                s("Makefile:4", "echo two"),
            ]
        );
    }

    /// A directory with the target's name (an earlier run's `bundle/`) does not hide the
    /// recipe from a Makefile that forgot `.PHONY`.
    #[test]
    fn a_directory_named_like_the_target_does_not_hide_its_recipe() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("bundle")).unwrap();
        std::fs::write(d.path().join("Makefile"), "bundle:\n\techo generate\n").unwrap();
        let steps = dry_run(&guard(), d.path(), "bundle", &[]).unwrap().steps;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].text, "echo generate");
    }

    /// An include's rule is not run (it is listed); with [`Recipes::Run`], one that fails (a
    /// download without network) is quoted with a hint.
    #[test]
    fn a_failing_include_rule_is_explained() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "all:\n\techo x\nenv.mk:\n\tfalse\ninclude env.mk\n",
        )
        .unwrap();
        let r = dry_run(&guard(), d.path(), "all", &[]).unwrap();
        assert_eq!(r.steps.len(), 1, "{r:?}");
        assert_eq!(
            (
                r.remade[0].target.as_str(),
                r.remade[0].location(),
                r.remade[0].text.as_str()
            ),
            ("env.mk", "Makefile:4".to_owned(), "false")
        );
        let run = Guard::new(Recipes::Run).unwrap();
        let e = dry_run(&run, d.path(), "all", &[]).unwrap_err().to_string();
        assert_eq!(run.seen(), vec!["false".to_owned()]);
        assert!(
            e.contains("make could not make `env.mk`, which Makefile:5 includes: its recipe (Makefile:4) failed")
                && e.contains("--set VAR=VALUE"),
            "{e}"
        );
    }

    #[test]
    fn failures_quote_make() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Makefile"), "all: missing\n\techo x\n").unwrap();
        let e = dry_run(&guard(), d.path(), "all", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("No rule to make target 'missing'"), "{e}");
        std::fs::write(d.path().join("Makefile"), "X = $(X) y\nall:\n\techo $(X)\n").unwrap();
        let e = dry_run(&guard(), d.path(), "all", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Makefile:1") && e.contains("references itself"),
            "{e}"
        );
    }

    #[test]
    fn inspect_reads_values_origins_and_targets() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "include missing.mk\nVERSION ?= 0.0.1\nBASE ?= quay.io/${ORG}/op\nIMG = $(BASE):v$(VERSION)\nQ := \"a b\"\nS := x$(NOPE)\ndefine ML\none\ntwo\nendef\nbundle-k8s: ; @:\nbundle-ocp: bundle-k8s\n",
        )
        .unwrap();
        let db = inspect(
            &guard(),
            d.path(),
            &["VERSION", "IMG", "Q", "S", "ML", "UNSET"],
            &[("VERSION".into(), "1.2.3".into())],
            None,
        )
        .unwrap();
        let v = |n: &str| db.variables.get(n).cloned();
        assert_eq!(v("VERSION").unwrap().value, "1.2.3");
        assert_eq!(v("VERSION").unwrap().origin, Origin::CommandLine);
        let img = v("IMG").unwrap();
        assert_eq!(img.value, "quay.io//op:v1.2.3");
        assert_eq!(img.location(), "Makefile:4");
        // make names the line of the variable it was expanding.
        assert_eq!(
            img.undefined,
            vec![("ORG".to_owned(), "Makefile:4".to_owned())]
        );
        assert_eq!(v("Q").unwrap().value, "\"a b\"");
        // A simple variable's reference to an unset one is said at its own line.
        assert_eq!(
            v("S").unwrap().undefined,
            vec![("NOPE".to_owned(), "Makefile:6".to_owned())]
        );
        assert_eq!(v("ML").unwrap().value, "one\ntwo");
        assert!(v("UNSET").is_none());
        assert_eq!(db.targets, vec!["bundle-k8s", "bundle-ocp"]);
        assert_eq!(
            db.missing,
            vec![Missing {
                at: "Makefile:1".into(),
                file: "missing.mk".into()
            }]
        );
        assert!(inspect(&guard(), d.path(), &["A B"], &[], None).is_err());

        // In a target's context: its target-specific values, with their line.
        std::fs::write(
            d.path().join("Makefile"),
            "IMG = quay.io/x/global:1\nbundle: IMG = quay.io/x/bundle:1\nbundle: export TAG := v2\nbundle:\n\techo $(IMG)\nother:\n\techo\n",
        )
        .unwrap();
        let db = inspect(&guard(), d.path(), &["IMG", "TAG"], &[], Some("bundle")).unwrap();
        let img = db.variables.get("IMG").unwrap();
        assert_eq!(img.value, "quay.io/x/bundle:1");
        assert_eq!(img.location(), "Makefile:2");
        assert_eq!(db.variables.get("TAG").unwrap().location(), "Makefile:3");
        let db = inspect(&guard(), d.path(), &["IMG", "TAG"], &[], None).unwrap();
        assert_eq!(db.variables.get("IMG").unwrap().value, "quay.io/x/global:1");
        assert!(!db.variables.contains_key("TAG"));
        assert_eq!(db.targets, vec!["bundle", "other"]);
    }
}
