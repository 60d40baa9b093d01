//! Progress of multi-item commands: plain `[i/n]` lines on a non-terminal stderr with `-v`,
//! nothing with `-q` or by default, a bar on a real terminal (a pty from `script`), never on
//! stdout, and no colour codes anywhere under NO_COLOR.

use std::process::Command;

use crate::support_registry::{TestRegistry, isolated};
use crate::{opship, tracked_tree};

const BUNDLES: [&str; 3] = ["bundle/0.1.0", "bundle/0.2.0", "bundle/0.3.0"];

fn run(global: &[&str], args: &[&str]) -> (String, String) {
    let out = opship()
        .current_dir(tracked_tree())
        .args(global)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "opship {global:?} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn progress_lines(stderr: &str, what: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("] ") && l.contains(&format!(" {what} ")))
        .map(|l| l.trim().to_owned())
        .collect()
}

#[test]
fn validate_reports_each_bundle_with_v_and_nothing_otherwise() {
    let mut args = vec!["validate", "bundle"];
    args.extend(BUNDLES);
    let (plain_out, plain_err) = run(&[], &args);
    let (v_out, v_err) = run(&["-v"], &args);
    let (q_out, q_err) = run(&["-q"], &args);
    // Progress never touches the report on stdout.
    assert_eq!(plain_out, v_out);
    assert_eq!(plain_out, q_out);
    let lines = progress_lines(&v_err, "validated");
    assert_eq!(lines.len(), 3, "{v_err}");
    for b in BUNDLES {
        assert!(
            lines.iter().any(|l| l.ends_with(b)),
            "no line for {b}: {lines:?}"
        );
    }
    // Counted in completion order: 1/3, 2/3, 3/3.
    for (i, l) in lines.iter().enumerate() {
        assert!(l.contains(&format!("[{}/3] validated ", i + 1)), "{l}");
    }
    assert!(
        progress_lines(&plain_err, "validated").is_empty(),
        "{plain_err}"
    );
    assert!(q_err.is_empty(), "-q: {q_err}");
}

#[test]
fn build_and_chart_render_report_each_item() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let mut args = vec!["build", "--layout", layout.to_str().unwrap()];
    args.extend(BUNDLES);
    let (_, err) = run(&["-v"], &args);
    let lines = progress_lines(&err, "built");
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines.last().unwrap().contains("[3/3] built "), "{lines:?}");

    let charts = tmp.path().join("charts");
    let (_, err) = run(
        &["-v", "-c", "bundle/opship.yaml"],
        &[
            "chart",
            "render",
            "--all",
            "--output",
            charts.to_str().unwrap(),
        ],
    );
    let lines = progress_lines(&err, "rendered");
    assert_eq!(
        lines,
        [
            "INFO [1/3] rendered memcached-operator 0.1.0",
            "INFO [2/3] rendered memcached-operator 0.2.0",
            "INFO [3/3] rendered memcached-operator 0.3.0"
        ]
    );
}

#[test]
fn push_all_tags_reports_each_image() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let layout = tmp.path().join("oci");
    let mut args = vec!["build", "--layout", layout.to_str().unwrap()];
    args.extend(BUNDLES);
    run(&[], &args);
    let out = isolated(&tmp.path().join("home"))
        .args(["-v", "push", "--all-tags"])
        .arg(&layout)
        .arg(format!("{}/ops", reg.addr))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines = progress_lines(&err, "pushed");
    assert_eq!(lines.len(), 3, "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for l in stdout.lines() {
        let dest = l.split(' ').next().unwrap();
        assert!(
            lines.iter().any(|p| p.ends_with(dest)),
            "no progress for {dest}: {lines:?}"
        );
    }
    assert!(err.contains("pushed 3 of 3 images"), "{err}");
    // -q: the same result on stdout, not a word on stderr (no progress, no summary).
    let quiet = isolated(&tmp.path().join("home"))
        .args(["-q", "push", "--all-tags"])
        .arg(&layout)
        .arg(format!("{}/ops", reg.addr))
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert_eq!(quiet.stdout, out.stdout);
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
}

#[test]
fn quiet_silences_status_notes_but_not_errors() {
    let (_, err) = run(&[], &["catalog", "validate", "index"]);
    assert!(err.contains("index: valid"), "{err}");
    let (_, err) = run(&["-q"], &["catalog", "validate", "index"]);
    assert!(err.is_empty(), "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let (_, err) = run(&["-q"], &["man", "--output", tmp.path().to_str().unwrap()]);
    assert!(err.is_empty(), "{err}");
    // An error still shows.
    let out = opship()
        .args(["-q", "catalog", "validate"])
        .arg(tmp.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
}

/// Runs a command line under a pseudo-terminal (`script`), returning everything it wrote.
fn on_tty(cmdline: &str, env: &[(&str, &str)]) -> String {
    let bin = std::env::var_os("OPSHIP_TEST_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_opship").into());
    let mut c = Command::new("script");
    c.args([
        "-qec",
        &format!("'{}' {cmdline}", bin.display()),
        "/dev/null",
    ])
    .current_dir(tracked_tree())
    .env_remove("NO_COLOR")
    .env_remove("OPSHIP_CONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .output()
        .expect("script (util-linux/bsdutils) must be installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_terminal_gets_a_bar_unless_quiet_and_no_colour_under_no_color() {
    let cmd = format!("validate bundle {}", BUNDLES.join(" "));
    let shown = on_tty(&cmd, &[]);
    assert!(shown.contains("validated ["), "no bar: {shown:?}");
    // The bar is cleared at the end ("erase line"), and the report follows.
    assert!(shown.contains("\x1b[2K"), "{shown:?}");
    assert!(shown.contains("3 bundles, 0 errors"), "{shown:?}");
    // Human output is coloured on a terminal...
    assert!(shown.contains("\x1b[32m"), "{shown:?}");
    // ...and not under NO_COLOR: no SGR sequence at all, bar included.
    let plain = on_tty(&cmd, &[("NO_COLOR", "1")]);
    assert!(plain.contains("validated ["), "{plain:?}");
    assert!(!has_sgr(&plain), "colour under NO_COLOR: {plain:?}");
    // -q: no bar.
    let quiet = on_tty(&format!("-q {cmd}"), &[]);
    assert!(!quiet.contains("validated ["), "{quiet:?}");
    // One item: no bar either.
    let one = on_tty("validate bundle bundle/0.3.0", &[]);
    assert!(!one.contains("validated ["), "{one:?}");
}

/// Whether `text` holds an SGR (colour/bold) escape `ESC [ ... m`.
fn has_sgr(text: &str) -> bool {
    text.match_indices("\x1b[").any(|(i, _)| {
        text[i + 2..]
            .chars()
            .find(|c| !c.is_ascii_digit() && *c != ';')
            == Some('m')
    })
}

#[test]
fn sign_and_verify_report_each_image() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let layout = tmp.path().join("oci");
    let mut args = vec!["build", "--layout", layout.to_str().unwrap()];
    args.extend(BUNDLES);
    run(&[], &args);
    let pushed = isolated(&home)
        .args(["-q", "push", "--all-tags"])
        .arg(&layout)
        .arg(format!("{}/ops", reg.addr))
        .output()
        .unwrap();
    assert!(pushed.status.success());
    let refs: Vec<String> = String::from_utf8(pushed.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    assert_eq!(refs.len(), 3);
    let prefix = tmp.path().join("k");
    let keygen = isolated(&home)
        .env("COSIGN_PASSWORD", "")
        .args(["key", "generate", "--output-key-prefix"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(keygen.status.success());
    for (verb, key) in [("sign", "k.key"), ("verify", "k.pub")] {
        let out = isolated(&home)
            .env("COSIGN_PASSWORD", "")
            .args(["-v", verb, "--key"])
            .arg(tmp.path().join(key))
            .args(&refs)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{verb}: {err}");
        let word = if verb == "sign" { "signed" } else { "verified" };
        let lines = progress_lines(&err, word);
        assert_eq!(lines.len(), 3, "{verb}: {err}");
        for r in &refs {
            assert!(
                lines.iter().any(|l| l.ends_with(r.as_str())),
                "{verb}: no line for {r}: {lines:?}"
            );
        }
    }
}
