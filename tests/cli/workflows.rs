//! The GitHub workflows and the composite action: they parse as YAML, have the jobs and
//! inputs the docs promise, every `opship` command line in them names a real command and
//! real flags, and the CI's drift checks pass on the committed sample operator.

use serde_json::Value;

use crate::{opship, repo, tracked_tree};

fn load(rel: &str) -> Value {
    let path = repo().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{rel}: not YAML: {e}"))
}

/// Every `run:` script of a workflow's jobs or of a composite action's steps.
fn scripts(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut steps = Vec::new();
    if let Some(jobs) = doc["jobs"].as_object() {
        for job in jobs.values() {
            steps.extend(job["steps"].as_array().cloned().unwrap_or_default());
        }
    }
    steps.extend(doc["runs"]["steps"].as_array().cloned().unwrap_or_default());
    for s in steps {
        if let Some(run) = s["run"].as_str() {
            out.push(run.to_owned());
        }
    }
    out
}

/// The `opship` command lines of a script, as tokens after `opship` (continuation lines
/// joined, comments dropped, cut at the first pipe, redirection or list operator).
fn invocations(script: &str) -> Vec<Vec<String>> {
    let joined = script.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        for (i, t) in tokens.iter().enumerate() {
            let t = t.trim_matches('"');
            if t != "opship" && !t.ends_with("/opship") {
                continue;
            }
            // Only where a command starts (not `[ -x "$bin/opship" ]`).
            let starts_command = i == 0
                || matches!(
                    tokens[i - 1],
                    "|" | "||" | "&&" | ";" | "then" | "else" | "do" | "time"
                );
            if !starts_command {
                continue;
            }
            let rest = tokens[i + 1..]
                .iter()
                .take_while(|t| {
                    !matches!(**t, "|" | "||" | "&&" | ";")
                        && !t.starts_with('>')
                        && !t.starts_with("2>")
                })
                .map(|t| (*t).to_owned())
                .collect();
            out.push(rest);
        }
    }
    out
}

fn help(path: &[&str]) -> Option<String> {
    let out = opship().arg("help").args(path).output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Commands the release branch adds: tolerated as missing only until they exist (then they are
/// checked like every other).
const COMING_FROM_RELEASE_BRANCH: &[&str] = &["release"];

/// Checks that `tokens` (after `opship`) name an existing command and only its flags; returns
/// the command path, or None for a line built at run time (`$OPSHIP_COMMAND`).
fn check_invocation(file: &str, tokens: &[String]) -> Option<Vec<String>> {
    let mut i = 0;
    // Global options.
    while i < tokens.len() {
        match tokens[i].as_str() {
            "-v" | "-vv" | "-q" | "--verbose" | "--quiet" => i += 1,
            "-c" | "--config" => i += 2,
            t if t.starts_with("\"${global") => i += 1,
            _ => break,
        }
    }
    let first = tokens.get(i)?;
    if first.starts_with('$') || first.starts_with("\"$") {
        return None;
    }
    if first == "--version" || first == "--help" {
        return Some(vec![first.clone()]);
    }
    let mut path = vec![first.clone()];
    let Some(mut text) = help(&[first]) else {
        assert!(
            COMING_FROM_RELEASE_BRANCH.contains(&first.as_str()),
            "{file}: `opship {}`: no such command",
            tokens.join(" ")
        );
        return Some(path);
    };
    i += 1;
    if text.contains("\nCommands:") {
        let sub = tokens
            .get(i)
            .unwrap_or_else(|| panic!("{file}: `opship {first}` without subcommand"));
        text = help(&[first, sub])
            .unwrap_or_else(|| panic!("{file}: `opship {first} {sub}`: no such command"));
        path.push(sub.clone());
        i += 1;
    }
    for t in &tokens[i..] {
        let t = t.trim_matches('"');
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap();
            assert!(
                text.contains(&format!("--{name}")),
                "{file}: `opship {}` has no flag --{name}",
                path.join(" ")
            );
        } else if t.len() == 2 && t.starts_with('-') && t != "--" {
            assert!(
                text.contains(&format!("{t},")),
                "{file}: `opship {}` has no flag {t}",
                path.join(" ")
            );
        }
    }
    Some(path)
}

fn commands_of(rel: &str) -> Vec<Vec<String>> {
    let doc = load(rel);
    let mut found = Vec::new();
    for script in scripts(&doc) {
        for inv in invocations(&script) {
            if let Some(path) = check_invocation(rel, &inv) {
                found.push(path);
            }
        }
    }
    found
}

fn has(found: &[Vec<String>], path: &[&str]) -> bool {
    found
        .iter()
        .any(|p| p.iter().map(String::as_str).eq(path.iter().copied()))
}

#[test]
fn ci_workflow_runs_the_checks_and_its_drift_checks_pass() {
    let doc = load(".github/workflows/ci.yml");
    let jobs = doc["jobs"].as_object().expect("ci.yml: jobs");
    assert!(jobs.contains_key("test"), "ci.yml: no job test");
    let all = scripts(&doc).join("\n");
    for want in [
        "cargo fmt --all -- --check",
        "cargo clippy --workspace --all-targets --locked -- -D warnings",
        "scripts/test",
        "opship -c bundle/opship.yaml generate bundle --all --check",
        "opship catalog validate index",
    ] {
        assert!(all.contains(want), "ci.yml does not run `{want}`");
    }
    let found = commands_of(".github/workflows/ci.yml");
    assert!(has(&found, &["generate", "bundle"]) && has(&found, &["catalog", "validate"]));
    // The drift job's opship lines, run as written on this checkout, pass.
    let bin = std::env::var_os("OPSHIP_TEST_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into());
    let bin_dir = bin.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let drift = jobs["test"]["steps"].as_array().unwrap();
    let mut ran = 0;
    for step in drift {
        let Some(run) = step["run"].as_str() else {
            continue;
        };
        // Checks only: a step that writes a file (`> opship.sarif`) is not run here.
        if !run.trim_start().starts_with("opship ") || run.contains('>') {
            continue;
        }
        let out = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", run])
            .current_dir(tracked_tree())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env_remove("OPSHIP_CONFIG")
            .env_remove("SOURCE_DATE_EPOCH")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ci.yml step `{run}` fails here:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} check steps ran");
}

#[test]
fn release_workflow_releases_on_tags_with_secrets_sarif_and_commit_back() {
    let doc = load(".github/workflows/release.yml");
    // `on` stays a string key (YAML 1.2: not a boolean).
    let tags = &doc["on"]["push"]["tags"];
    assert_eq!(tags, &serde_json::json!(["v*"]), "release.yml trigger");
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    for want in [
        "cargo build --release --locked",
        "${GITHUB_REF_NAME#v}",
        "--password-stdin",
        "secrets.COSIGN_PASSWORD",
        "secrets.COSIGN_KEY",
        "secrets.REGISTRY_USERNAME",
        "secrets.REGISTRY_PASSWORD",
        "chmod 0600",
        "github/codeql-action/upload-sarif",
        "--output sarif",
        "git add index bundle",
        "git push",
    ] {
        assert!(text.contains(want), "release.yml lacks `{want}`");
    }
    let found = commands_of(".github/workflows/release.yml");
    for p in [&["login"][..], &["validate", "bundle"], &["release"]] {
        assert!(
            has(&found, p),
            "release.yml does not run opship {p:?}: {found:?}"
        );
    }
}

#[test]
fn composite_action_declares_its_inputs_and_runs_opship() {
    let doc = load("action.yml");
    assert_eq!(doc["runs"]["using"], "composite");
    let inputs = doc["inputs"].as_object().expect("action.yml: inputs");
    for i in [
        "version",
        "command",
        "args",
        "config",
        "registry",
        "working-directory",
    ] {
        assert!(inputs.contains_key(i), "action.yml: no input {i}");
    }
    let all = scripts(&doc).join("\n");
    assert!(all.contains("cargo install --locked --root"));
    assert!(all.contains("--git"));
    // Every `${{ inputs.X }}` the action uses is declared.
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    for (pos, _) in text.match_indices("inputs.") {
        let name: String = text[pos + 7..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        assert!(
            inputs.contains_key(&name),
            "action.yml uses undeclared input {name}"
        );
    }
    let found = commands_of("action.yml");
    assert!(has(&found, &["--version"]), "{found:?}");
    // The install step's shell is valid bash.
    for script in scripts(&doc) {
        let out = std::process::Command::new("bash")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
