//! A project's Makefile variables as GNU make expands them, for the forms kubebuilder and
//! operator-sdk scaffold (`=`, `:=`, `::=`, `?=`, `+=`, `ifeq`/`ifneq`/`ifdef`/`ifndef`,
//! `$(origin …)` and a few text functions), so `opship init` can read `VERSION`, `IMG` or
//! `BUNDLE_GEN_FLAGS` without running make. What it cannot expand (`$(shell …)`, `!=`, an
//! `include`d file) is reported with its line instead of guessed.
//!
//! The environment is deliberately not consulted (make would let `VERSION` from the
//! environment win over `?=`): the same project must give the same config on every machine.
//! Values make would take from its command line (`make bundle IMG=…`) are passed explicitly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::yaml::{Origin, Pos};

/// How deeply variables may refer to each other before expansion gives up (make itself
/// reports a recursive variable that refers to itself; this also stops runaway chains).
const MAX_DEPTH: usize = 64;

/// A parsed Makefile: its variables and rules.
#[derive(Debug, Clone)]
pub struct Makefile {
    path: PathBuf,
    vars: HashMap<String, Var>,
    rules: Vec<Rule>,
    /// `include` lines opship did not follow, with their line.
    pub includes: Vec<(u32, String)>,
}

#[derive(Debug, Clone)]
struct Var {
    /// Unexpanded text for a recursive variable, the expanded text for a simple one.
    value: String,
    recursive: bool,
    command_line: bool,
    line: u32,
    /// Why the value cannot be known without running make.
    unknown: Option<String>,
}

/// A rule and its recipe, as written (unexpanded).
#[derive(Debug, Clone)]
pub struct Rule {
    /// The targets before the `:`.
    pub targets: Vec<String>,
    /// Line of the rule.
    pub line: u32,
    /// Recipe lines (tab removed) with their line numbers.
    pub recipe: Vec<(u32, String)>,
}

/// A variable's expanded value and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The expanded text.
    pub text: String,
    /// Line of the (last) assignment; `None` for a value given on the command line.
    pub line: Option<u32>,
}

/// Why a text could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unknown(String);

impl Makefile {
    /// Reads and parses `path`. `overrides` are `VAR=VALUE` pairs as given on make's command
    /// line: they win over the file's assignments (except `override`), as in make.
    pub fn read(path: &Path, overrides: &[(String, String)]) -> Result<Makefile> {
        let text = crate::yaml::read_text_of(path, crate::input::Kind::Config)?;
        Makefile::parse(&text, path, overrides)
    }

    /// Parses Makefile text; `path` names it in messages.
    pub fn parse(text: &str, path: &Path, overrides: &[(String, String)]) -> Result<Makefile> {
        let mut mf = Makefile {
            path: path.to_path_buf(),
            vars: HashMap::new(),
            rules: Vec::new(),
            includes: Vec::new(),
        };
        for (k, v) in overrides {
            mf.vars.insert(
                k.clone(),
                Var {
                    value: v.clone(),
                    recursive: false,
                    command_line: true,
                    line: 0,
                    unknown: None,
                },
            );
        }
        let lines = logical_lines(text);
        // Conditional stack: (this branch is taken, a branch was already taken, line,
        // why the condition is unknown).
        let mut conds: Vec<Cond> = Vec::new();
        let mut in_rule = false;
        let mut define: Option<(String, u32, Vec<String>, bool)> = None;
        for (line_no, raw) in lines {
            if let Some((name, start, body, active)) = define.as_mut() {
                if raw.trim() == "endef" {
                    let (name, start, body, active) =
                        (name.clone(), *start, std::mem::take(body), *active);
                    define = None;
                    if active {
                        mf.assign(&name, "=", &body.join("\n"), start, false, None);
                    }
                } else {
                    body.push(raw.clone());
                }
                continue;
            }
            // A branch make would skip, or one that depends on a condition opship cannot
            // evaluate: its assignments are then recorded as unknowable, not dropped.
            let active = !conds.iter().any(|c| !c.taken && c.unknown.is_none());
            let uncertain = conds.iter().rev().find_map(|c| c.unknown.clone());
            if raw.starts_with('\t') && in_rule {
                if active && let Some(rule) = mf.rules.last_mut() {
                    rule.recipe.push((line_no, raw[1..].to_owned()));
                }
                continue;
            }
            let line = strip_comment(&raw);
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let (word, rest) = split_word(trimmed);
            match word {
                "ifeq" | "ifneq" | "ifdef" | "ifndef" => {
                    let outcome = if active {
                        mf.condition(word, rest)
                    } else {
                        Ok(false)
                    };
                    let (taken, unknown) = match outcome {
                        Ok(t) => (t, None),
                        Err(Unknown(why)) => (false, Some(format!("line {line_no}: {why}"))),
                    };
                    conds.push(Cond {
                        taken,
                        done: taken,
                        line: line_no,
                        unknown,
                    });
                    continue;
                }
                "else" => {
                    let Some(c) = conds.last_mut() else {
                        return Err(mf.error(line_no, "`else` without a conditional"));
                    };
                    let (w2, rest2) = split_word(rest);
                    // An unknown condition keeps every later branch unknown too.
                    if c.unknown.is_some() || c.done {
                        c.taken = false;
                    } else if matches!(w2, "ifeq" | "ifneq" | "ifdef" | "ifndef") {
                        let parent_active = !conds[..conds.len() - 1]
                            .iter()
                            .any(|c| !c.taken && c.unknown.is_none());
                        let outcome = if parent_active {
                            mf.condition(w2, rest2)
                        } else {
                            Ok(false)
                        };
                        let c = conds.last_mut().expect("checked above");
                        match outcome {
                            Ok(t) => {
                                c.taken = t;
                                c.done = t;
                            }
                            Err(Unknown(why)) => {
                                c.taken = false;
                                c.unknown = Some(format!("line {line_no}: {why}"));
                            }
                        }
                    } else {
                        c.taken = true;
                        c.done = true;
                    }
                    continue;
                }
                "endif" => {
                    if conds.pop().is_none() {
                        return Err(mf.error(line_no, "`endif` without a conditional"));
                    }
                    continue;
                }
                "define" => {
                    let name = rest
                        .trim()
                        .trim_end_matches(['=', ':', '?', '+'])
                        .trim()
                        .to_owned();
                    define = Some((name, line_no, Vec::new(), active));
                    continue;
                }
                "include" | "-include" | "sinclude" => {
                    in_rule = false;
                    if active {
                        mf.includes.push((line_no, rest.trim().to_owned()));
                    }
                    continue;
                }
                "vpath" | "unexport" => continue,
                _ => {}
            }
            in_rule = false;
            if !active {
                continue;
            }
            let (is_override, body) = strip_prefixes(trimmed);
            match find_operator(body) {
                Some(Op::Assign { at, op }) => {
                    let name = body[..at].trim();
                    let value = body[at + op.len()..].trim_start();
                    let name = match mf.expand(name, 0) {
                        Ok(n) => n.trim().to_owned(),
                        Err(_) => continue,
                    };
                    if name.is_empty() || name.contains(char::is_whitespace) {
                        continue;
                    }
                    mf.assign(
                        &name,
                        op,
                        value,
                        line_no,
                        is_override,
                        uncertain.as_ref().map(|u| {
                            format!("it is set under a condition opship cannot evaluate ({u})")
                        }),
                    );
                }
                Some(Op::Rule { at }) => {
                    let targets = match mf.expand(&body[..at], 0) {
                        Ok(t) => t.split_whitespace().map(str::to_owned).collect(),
                        Err(_) => body[..at].split_whitespace().map(str::to_owned).collect(),
                    };
                    mf.rules.push(Rule {
                        targets,
                        line: line_no,
                        recipe: Vec::new(),
                    });
                    in_rule = true;
                }
                None => {}
            }
        }
        if let Some((name, start, _, _)) = define {
            return Err(mf.error(start, &format!("`define {name}` has no `endef`")));
        }
        if let Some(c) = conds.last() {
            return Err(mf.error(c.line, "conditional has no `endif`"));
        }
        Ok(mf)
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The expanded value of `name`, `None` when make would leave it undefined. An error
    /// names the line that makes the value unknowable (and how to give it instead).
    pub fn get(&self, name: &str) -> Result<Option<Value>> {
        let Some(var) = self.vars.get(name) else {
            return Ok(None);
        };
        let line = (!var.command_line).then_some(var.line);
        let text = self
            .var_value(name, 0)
            .map_err(|Unknown(why)| {
                self.error(
                    var.line,
                    &format!(
                        "`{name}` cannot be expanded without running make: {why}; give its value with --set {name}=VALUE"
                    ),
                )
            })?
            .unwrap_or_default();
        Ok(Some(Value { text, line }))
    }

    /// The rule that builds `target`, if any.
    pub fn rule(&self, target: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.targets.iter().any(|t| t == target))
    }

    /// Expands a text (e.g. a recipe word) with this Makefile's variables; `None` when that
    /// needs something opship does not evaluate.
    pub fn expand_text(&self, text: &str) -> Option<String> {
        self.expand(text, 0).ok()
    }

    fn error(&self, line: u32, message: &str) -> Error {
        Error::invalid(
            Origin {
                file: self.path.as_path().into(),
                pos: Pos { line, col: 1 },
            },
            message,
        )
    }

    fn assign(
        &mut self,
        name: &str,
        op: &str,
        value: &str,
        line: u32,
        is_override: bool,
        uncertain: Option<String>,
    ) {
        if let Some(existing) = self.vars.get(name)
            && existing.command_line
            && !is_override
        {
            return;
        }
        let new = match op {
            "?=" => {
                if self.vars.contains_key(name) {
                    return;
                }
                Var {
                    value: value.to_owned(),
                    recursive: true,
                    command_line: false,
                    line,
                    unknown: uncertain,
                }
            }
            "=" => Var {
                value: value.to_owned(),
                recursive: true,
                command_line: false,
                line,
                unknown: uncertain,
            },
            ":=" | "::=" => {
                let (value, unknown) = match self.expand(value, 0) {
                    Ok(v) => (v, uncertain),
                    Err(Unknown(why)) => (String::new(), Some(why)),
                };
                Var {
                    value,
                    recursive: false,
                    command_line: false,
                    line,
                    unknown,
                }
            }
            "!=" => Var {
                value: String::new(),
                recursive: false,
                command_line: false,
                line,
                unknown: Some(format!("`{name} != {value}` runs a shell command")),
            },
            "+=" => match self.vars.get(name) {
                None => Var {
                    value: value.to_owned(),
                    recursive: true,
                    command_line: false,
                    line,
                    unknown: uncertain,
                },
                Some(old) => {
                    let mut unknown = old.unknown.clone().or(uncertain);
                    let add = if old.recursive {
                        value.to_owned()
                    } else {
                        match self.expand(value, 0) {
                            Ok(v) => v,
                            Err(Unknown(why)) => {
                                unknown.get_or_insert(why);
                                String::new()
                            }
                        }
                    };
                    let joined = if old.value.is_empty() {
                        add
                    } else {
                        format!("{} {add}", old.value)
                    };
                    Var {
                        value: joined,
                        recursive: old.recursive,
                        command_line: false,
                        line,
                        unknown,
                    }
                }
            },
            _ => return,
        };
        self.vars.insert(name.to_owned(), new);
    }

    fn var_value(&self, name: &str, depth: usize) -> std::result::Result<Option<String>, Unknown> {
        let Some(var) = self.vars.get(name) else {
            return Ok(None);
        };
        if let Some(why) = &var.unknown {
            return Err(Unknown(why.clone()));
        }
        if var.recursive {
            if depth > MAX_DEPTH {
                return Err(Unknown(format!("`{name}` refers to itself")));
            }
            self.expand(&var.value, depth + 1).map(Some)
        } else {
            Ok(Some(var.value.clone()))
        }
    }

    fn expand(&self, text: &str, depth: usize) -> std::result::Result<String, Unknown> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let mut chars = after.chars();
            match chars.next() {
                None => {
                    rest = "";
                }
                Some('$') => {
                    out.push('$');
                    rest = &after[1..];
                }
                Some(open @ ('(' | '{')) => {
                    let close = if open == '(' { ')' } else { '}' };
                    let end = matching(after, open, close).ok_or_else(|| {
                        Unknown(format!("unterminated reference `${}`", truncate(after)))
                    })?;
                    let inner = &after[1..end];
                    out.push_str(&self.reference(inner, depth)?);
                    rest = &after[end + 1..];
                }
                Some(c) => {
                    let name = c.to_string();
                    out.push_str(&self.var_value(&name, depth)?.unwrap_or_default());
                    rest = &after[c.len_utf8()..];
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `$(…)` contents: a function call or a variable (with an optional substitution).
    fn reference(&self, inner: &str, depth: usize) -> std::result::Result<String, Unknown> {
        let (word, args) = split_word(inner);
        let is_call = !args.is_empty() || inner.ends_with(' ');
        if is_call {
            return self.call(word, args, depth);
        }
        // `$(VAR:a=b)`: suffix substitution on every word.
        let name = self.expand(inner, depth)?;
        if let Some((var, subst)) = name.split_once(':')
            && let Some((from, to)) = subst.split_once('=')
        {
            let value = self.var_value(var, depth)?.unwrap_or_default();
            let words: Vec<String> = value
                .split_whitespace()
                .map(|w| match w.strip_suffix(from) {
                    Some(stem) if !from.is_empty() => format!("{stem}{to}"),
                    _ => w.to_owned(),
                })
                .collect();
            return Ok(words.join(" "));
        }
        Ok(self.var_value(&name, depth)?.unwrap_or_default())
    }

    fn call(&self, func: &str, args: &str, depth: usize) -> std::result::Result<String, Unknown> {
        let args_list = || split_args(args);
        match func {
            "origin" => {
                let name = self.expand(args.trim(), depth)?;
                Ok(match self.vars.get(name.trim()) {
                    None => "undefined",
                    Some(v) if v.command_line => "command line",
                    Some(_) => "file",
                }
                .to_owned())
            }
            "strip" => {
                let v = self.expand(args, depth)?;
                Ok(v.split_whitespace().collect::<Vec<_>>().join(" "))
            }
            "firstword" | "lastword" => {
                let v = self.expand(args, depth)?;
                let mut words = v.split_whitespace();
                let w = if func == "firstword" {
                    words.next()
                } else {
                    words.next_back()
                };
                Ok(w.unwrap_or_default().to_owned())
            }
            "subst" => {
                let a = args_list();
                if a.len() != 3 {
                    return Err(Unknown(format!("$(subst {args}) needs three arguments")));
                }
                let from = self.expand(a[0], depth)?;
                let to = self.expand(a[1], depth)?;
                let text = self.expand(a[2], depth)?;
                Ok(if from.is_empty() {
                    text
                } else {
                    text.replace(&from, &to)
                })
            }
            "if" => {
                let a = args_list();
                if a.len() < 2 {
                    return Err(Unknown(format!("$(if {args}) needs two arguments")));
                }
                let cond = self.expand(a[0].trim(), depth)?;
                if !cond.trim().is_empty() {
                    self.expand(a[1], depth)
                } else if let Some(e) = a.get(2) {
                    self.expand(e, depth)
                } else {
                    Ok(String::new())
                }
            }
            "shell" => Err(Unknown(format!(
                "it runs `$(shell {})`",
                truncate(args.trim())
            ))),
            other => Err(Unknown(format!(
                "it calls make's `{other}` function, which opship does not evaluate"
            ))),
        }
    }

    fn condition(&self, word: &str, rest: &str) -> std::result::Result<bool, Unknown> {
        match word {
            "ifdef" | "ifndef" => {
                let name = self.expand(rest.trim(), 0)?;
                let defined = !self
                    .var_value(name.trim(), 0)?
                    .unwrap_or_default()
                    .is_empty();
                Ok(defined == (word == "ifdef"))
            }
            _ => {
                let (a, b) = cond_args(rest).ok_or_else(|| {
                    Unknown(format!("`{word} {rest}` is not a form opship reads"))
                })?;
                let a = self.expand(a, 0)?;
                let b = self.expand(b, 0)?;
                Ok((a.trim() == b.trim()) == (word == "ifeq"))
            }
        }
    }
}

struct Cond {
    taken: bool,
    done: bool,
    line: u32,
    unknown: Option<String>,
}

enum Op<'a> {
    Assign { at: usize, op: &'a str },
    Rule { at: usize },
}

/// Joins backslash-continued lines (make replaces the backslash, the newline and the white
/// space around them with one space) and numbers them by their first physical line.
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut current: Option<(u32, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let trailing = line.len() - line.trim_end_matches('\\').len();
        let continued = trailing % 2 == 1;
        let body = if continued {
            &line[..line.len() - 1]
        } else {
            line
        };
        match current.as_mut() {
            Some((_, acc)) => {
                let t = acc.trim_end().len();
                acc.truncate(t);
                acc.push(' ');
                acc.push_str(body.trim_start());
            }
            None => current = Some((line_no, body.to_owned())),
        }
        if !continued && let Some(done) = current.take() {
            out.push(done);
        }
    }
    out.extend(current);
    out
}

/// Removes a `#` comment (not `\#`) and everything after it.
fn strip_comment(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'#') => {
                out.push('#');
                chars.next();
            }
            '#' => break,
            c => out.push(c),
        }
    }
    out
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(|c: char| c.is_whitespace()) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

/// `export`, `override` and `private` in front of an assignment.
fn strip_prefixes(mut s: &str) -> (bool, &str) {
    let mut is_override = false;
    loop {
        let (w, rest) = split_word(s);
        match w {
            "export" | "private" if !rest.is_empty() => s = rest,
            "override" if !rest.is_empty() => {
                is_override = true;
                s = rest;
            }
            _ => return (is_override, s),
        }
    }
}

/// The first assignment operator or rule colon outside `$(…)`.
fn find_operator(s: &str) -> Option<Op<'static>> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) => {
                depth += 1;
                i += 2;
                continue;
            }
            b'(' | b'{' if depth > 0 => depth += 1,
            b')' | b'}' if depth > 0 => depth -= 1,
            b'=' if depth == 0 => {
                if i > 0 {
                    match b[i - 1] {
                        b'?' => {
                            return Some(Op::Assign {
                                at: i - 1,
                                op: "?=",
                            });
                        }
                        b'+' => {
                            return Some(Op::Assign {
                                at: i - 1,
                                op: "+=",
                            });
                        }
                        b'!' => {
                            return Some(Op::Assign {
                                at: i - 1,
                                op: "!=",
                            });
                        }
                        _ => {}
                    }
                }
                return Some(Op::Assign { at: i, op: "=" });
            }
            b':' if depth == 0 => {
                if b.get(i + 1) == Some(&b'=') {
                    return Some(Op::Assign { at: i, op: ":=" });
                }
                if b.get(i + 1) == Some(&b':') && b.get(i + 2) == Some(&b'=') {
                    return Some(Op::Assign { at: i, op: "::=" });
                }
                return Some(Op::Rule { at: i });
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the bracket closing the one at `s[0]`.
fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Function arguments split at commas outside nested references.
fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `(a,b)`, `"a" "b"` or `'a' 'b'`.
fn cond_args(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    if s.starts_with('(') {
        let end = matching(s, '(', ')')?;
        let args = split_args(&s[1..end]);
        if args.len() != 2 {
            return None;
        }
        return Some((args[0], args[1]));
    }
    let quoted = |t: &str| -> Option<(usize, usize)> {
        let q = t.chars().next()?;
        if q != '"' && q != '\'' {
            return None;
        }
        let end = t[1..].find(q)? + 1;
        Some((1, end))
    };
    let (a0, a1) = quoted(s)?;
    let a = &s[a0..a1];
    let rest = s[a1 + 1..].trim_start();
    let (b0, b1) = quoted(rest)?;
    Some((a, &rest[b0..b1]))
}

fn truncate(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mf(text: &str) -> Makefile {
        Makefile::parse(text, Path::new("Makefile"), &[]).unwrap()
    }

    fn get(m: &Makefile, n: &str) -> Option<String> {
        m.get(n).unwrap().map(|v| v.text)
    }

    #[test]
    fn flavors_and_conditionals() {
        let m = mf("VERSION ?= 0.0.1\nIMAGE_TAG_BASE ?= example.com/op\n\
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)\n\
ifneq ($(origin CHANNELS), undefined)\nBUNDLE_CHANNELS := --channels=$(CHANNELS)\nendif\n\
ifneq ($(origin DEFAULT_CHANNEL), undefined)\nBUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)\nendif\n\
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)\n\
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)\n\
USE_IMAGE_DIGESTS ?= false\nifeq ($(USE_IMAGE_DIGESTS), true)\n\tBUNDLE_GEN_FLAGS += --use-image-digests\nendif\n\
IMG ?= controller:latest\n\
bundle: manifests ## Generate bundle\n\t$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)\n");
        assert_eq!(
            get(&m, "BUNDLE_IMG").unwrap(),
            "example.com/op-bundle:v0.0.1"
        );
        assert_eq!(
            get(&m, "BUNDLE_GEN_FLAGS")
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["-q", "--overwrite", "--version", "0.0.1"]
        );
        assert_eq!(get(&m, "IMG").unwrap(), "controller:latest");
        let rule = m.rule("bundle").unwrap();
        assert_eq!(rule.recipe.len(), 1);
        assert_eq!(rule.recipe[0].0, 18);

        let over = vec![
            ("CHANNELS".to_owned(), "beta,stable".to_owned()),
            ("USE_IMAGE_DIGESTS".to_owned(), "true".to_owned()),
            ("VERSION".to_owned(), "1.2.3".to_owned()),
        ];
        let m = Makefile::parse(
            "VERSION ?= 0.0.1\nVERSION = 9.9.9\nifneq ($(origin CHANNELS), undefined)\nBC := --channels=$(CHANNELS)\nendif\nF ?= --version $(VERSION) $(BC)\nifeq ($(USE_IMAGE_DIGESTS), true)\n\tF += --use-image-digests\nendif\n",
            Path::new("Makefile"),
            &over,
        )
        .unwrap();
        assert_eq!(
            get(&m, "F").unwrap(),
            "--version 1.2.3 --channels=beta,stable --use-image-digests"
        );
    }

    #[test]
    fn simple_versus_recursive() {
        let m = mf("A = $(B)\nC := $(B)\nB = x\nA += y\nD := a\nD += $(B)\n");
        assert_eq!(get(&m, "A").unwrap(), "x y");
        assert_eq!(get(&m, "C").unwrap(), "");
        assert_eq!(get(&m, "D").unwrap(), "a x");
    }

    #[test]
    fn continuation_comments_else_define() {
        let m = mf(
            "X = a \\\n    b # comment\nifeq (1,2)\nY = no\nelse ifeq (1,1)\nY = yes\nelse\nY = other\nendif\n\
define go-install-tool\n@[ -f $(1) ] || echo\nendef\nZ = \\#hash\n",
        );
        assert_eq!(get(&m, "X").unwrap(), "a b");
        assert_eq!(get(&m, "Y").unwrap(), "yes");
        assert_eq!(get(&m, "Z").unwrap(), "#hash");
    }

    #[test]
    fn unknowable_values_name_their_line() {
        let m = mf("GIT := $(shell git describe)\nIMG ?= quay.io/x/op:$(GIT)\nOK = 1\n");
        let err = m.get("IMG").unwrap_err().to_string();
        assert!(err.starts_with("Makefile:2:1:"), "{err}");
        assert!(
            err.contains("$(shell git describe)") && err.contains("--set IMG="),
            "{err}"
        );
        assert_eq!(get(&m, "OK").unwrap(), "1");
        let m = mf("V != git describe\n");
        assert!(
            m.get("V")
                .unwrap_err()
                .to_string()
                .contains("shell command")
        );
        let m = mf("ifeq ($(shell uname),Linux)\nA = 1\nendif\nB = 2\n");
        let err = m.get("A").unwrap_err().to_string();
        assert!(
            err.starts_with("Makefile:2:1:") && err.contains("line 1"),
            "{err}"
        );
        assert_eq!(get(&m, "B").unwrap(), "2");
    }

    #[test]
    fn bad_structure_is_an_error_with_line() {
        let e = Makefile::parse("ifeq (a,b)\nA=1\n", Path::new("Makefile"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Makefile:1:1:") && e.contains("endif"), "{e}");
        let e = Makefile::parse("A=1\nendif\n", Path::new("Makefile"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Makefile:2:1:"), "{e}");
    }

    #[test]
    fn command_line_wins_unless_override() {
        let over = vec![("A".to_owned(), "cli".to_owned())];
        let m = Makefile::parse("A = file\noverride B = o\n", Path::new("M"), &over).unwrap();
        assert_eq!(m.get("A").unwrap().unwrap().text, "cli");
        assert_eq!(m.get("A").unwrap().unwrap().line, None);
        let m = Makefile::parse("override A = forced\n", Path::new("M"), &over).unwrap();
        assert_eq!(m.get("A").unwrap().unwrap().text, "forced");
    }
}
