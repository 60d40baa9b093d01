//! What a project's own GNU make would run for a target and what its variables hold: a dry run
//! (`make -n --trace`) of the target, and make's own database (`make -n -p`) with the values
//! make expands, both with the release's variables on make's command line. make, not opship,
//! decides what the Makefile means; like `make bundle`, a dry run evaluates `$(shell ...)` and
//! remakes included makefiles that have a rule.
//!
//! Sub-makes (`$(MAKE) target`) are not run: make runs lines that use `$(MAKE)` even with `-n`,
//! so `MAKE` is given as a no-op command whose printed line names the sub-target.
//!
//! An included makefile that is missing and that no rule makes (a test suite's Makefile a
//! partial checkout lacks) stops make; it is read as empty instead, and said so
//! ([`Missing`]), so the rest of the Makefile still counts.

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
pub fn dry_run(dir: &Path, target: &str, vars: &[(String, String)]) -> Result<DryRun> {
    let shown = shown(&format!("make -n {target}"), vars);
    // The target's recipe is what is asked for, also when a file or directory has its name
    // (`bundle/` from an earlier run, and a Makefile that forgot `.PHONY: bundle`).
    let phony = if plain_target(target) {
        vec![format!(".PHONY: {target}")]
    } else {
        Vec::new()
    };
    let (out, missing) = run(
        dir,
        &["-n", "--trace"],
        &phony,
        vars,
        target,
        &shown,
        crate::child::Limits::new(TIMEOUT, MAX_OUTPUT),
    )?;
    let text = String::from_utf8(out.stdout)
        .map_err(|_| Error::Input(format!("`{shown}` printed something that is not UTF-8")))?;
    Ok(DryRun {
        steps: parse(&text, dir),
        missing,
    })
}

/// make's database of the Makefile in `dir` with `vars` on its command line: the values of
/// `names` (those that are set) as make expands them, and the Makefile's targets. With
/// `target`, the values are those its recipe sees (its target-specific ones included): the
/// printing target is made a prerequisite of it, and it is dry-run too.
pub fn inspect(
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
        dir,
        &["-n", "-p", "--warn-undefined-variables"],
        &evals,
        vars,
        goal,
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
        if let Some(s) = [
            "# Variables",
            "# Pattern-specific",
            "# Directories",
            "# Files",
            "# VPATH",
        ]
        .into_iter()
        .find(|s| l.starts_with(s))
        {
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
            && !name.contains(['%', '$', ' '])
        {
            out.push(name.to_owned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Runs make in `dir` with `flags`, `--eval` texts, `vars` and `goal`; an included makefile
/// that is missing and that no rule makes is given an empty rule (so make reads on) and
/// returned, up to [`MAX_MISSING`].
fn run(
    dir: &Path,
    flags: &[&str],
    evals: &[String],
    vars: &[(String, String)],
    goal: &str,
    shown: &str,
    limits: crate::child::Limits,
) -> Result<(crate::child::Output, Vec<Missing>)> {
    let mut missing: Vec<Missing> = Vec::new();
    loop {
        let mut cmd = Command::new("make");
        cmd.current_dir(dir)
            .args(flags)
            .args(["--no-print-directory", "-f", "Makefile"])
            .arg(format!("MAKE={SUB_MAKE}"))
            // Only PATH and HOME from the environment: make lets the environment win over `?=`,
            // and the same project must give the same values everywhere (values that come from
            // the environment are given as make command-line variables instead).
            .env_clear()
            .env("LC_ALL", "C");
        for keep in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(keep) {
                cmd.env(keep, v);
            }
        }
        for m in &missing {
            cmd.arg(format!("--eval={}: ; @:", m.file));
        }
        for e in evals {
            cmd.arg(format!("--eval={e}"));
        }
        for (k, v) in vars {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg("--").arg(goal);
        let out = crate::child::run(&mut cmd, None, limits, shown).map_err(|e| match e {
            Error::Input(m) if m.starts_with("cannot run") => Error::Input(format!(
                "{m}: reading {}'s bundle recipe needs GNU make on PATH",
                crate::paths::show(&dir.join("Makefile"))
            )),
            e => e,
        })?;
        if out.status.success() {
            return Ok((out, missing));
        }
        let message = out.message();
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

fn parse(text: &str, dir: &Path) -> Vec<Step> {
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
    let mut steps = Vec::new();
    for (i, ((file, rule, target), mut group)) in groups.into_iter().enumerate() {
        // make expands a recipe before it traces its target, so what the next recipe's
        // `$(info …)` prints comes last in this group: not commands.
        let infos = recipes.get(i + 1).map_or(0, |r| r.infos);
        group.truncate(group.len().saturating_sub(infos));
        let lines = &recipes[i].lines;
        let matched = lines.len() == group.len();
        for (k, t) in group.into_iter().enumerate() {
            steps.push(Step {
                target: target.clone(),
                file: rel(dir, &file),
                line: if matched { lines[k] } else { rule },
                text: t,
            });
        }
    }
    steps
}

/// A recipe as written: the first physical line of each line make prints, and how many
/// `$(info …)` it holds.
#[derive(Debug, Default)]
struct Recipe {
    lines: Vec<u32>,
    infos: usize,
}

/// The first physical line of each recipe line of the recipe that starts at line `rule` of
/// `file` (make's trace names a recipe's first line).
fn recipe_lines(file: &Path, rule: u32) -> Recipe {
    let Ok(text) = crate::input::read_string(file, crate::input::Kind::Config) else {
        return Recipe::default();
    };
    let mut out = Recipe::default();
    let mut continued = false;
    for (i, l) in text
        .lines()
        .enumerate()
        .skip(rule.saturating_sub(1) as usize)
    {
        let n = i as u32 + 1;
        if continued || l.starts_with('\t') {
            out.infos += l.matches("$(info ").count() + l.matches("${info ").count();
        }
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
                out.lines.push(n);
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
        .map(|r| crate::paths::show(r).to_string())
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
        let steps = dry_run(d.path(), "all", &[("V".into(), "2".into())])
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
        let got: Vec<(String, String)> = dry_run(d.path(), "all", &[])
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
        let steps = dry_run(d.path(), "bundle", &[]).unwrap().steps;
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].text, "echo generate");
    }

    /// An include whose rule fails (a download without network) is quoted with a hint.
    #[test]
    fn a_failing_include_rule_is_explained() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Makefile"),
            "all:\n\techo x\nenv.mk:\n\tfalse\ninclude env.mk\n",
        )
        .unwrap();
        let e = dry_run(d.path(), "all", &[]).unwrap_err().to_string();
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
        let e = dry_run(d.path(), "all", &[]).unwrap_err().to_string();
        assert!(e.contains("No rule to make target 'missing'"), "{e}");
        std::fs::write(d.path().join("Makefile"), "X = $(X) y\nall:\n\techo $(X)\n").unwrap();
        let e = dry_run(d.path(), "all", &[]).unwrap_err().to_string();
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
        assert!(inspect(d.path(), &["A B"], &[], None).is_err());

        // In a target's context: its target-specific values, with their line.
        std::fs::write(
            d.path().join("Makefile"),
            "IMG = quay.io/x/global:1\nbundle: IMG = quay.io/x/bundle:1\nbundle: export TAG := v2\nbundle:\n\techo $(IMG)\nother:\n\techo\n",
        )
        .unwrap();
        let db = inspect(d.path(), &["IMG", "TAG"], &[], Some("bundle")).unwrap();
        let img = db.variables.get("IMG").unwrap();
        assert_eq!(img.value, "quay.io/x/bundle:1");
        assert_eq!(img.location(), "Makefile:2");
        assert_eq!(db.variables.get("TAG").unwrap().location(), "Makefile:3");
        let db = inspect(d.path(), &["IMG", "TAG"], &[], None).unwrap();
        assert_eq!(db.variables.get("IMG").unwrap().value, "quay.io/x/global:1");
        assert!(!db.variables.contains_key("TAG"));
        assert_eq!(db.targets, vec!["bundle", "other"]);
    }
}
