//! `opship completions` and `opship man`: the generated scripts and pages are read by the real
//! tools (bash, groff, man), not only searched for strings.

use std::process::Command;

use crate::opship;

/// The top-level commands every completion script and the main man page must offer.
const COMMANDS: &[&str] = &[
    "init",
    "generate",
    "validate",
    "build",
    "push",
    "pull",
    "inspect",
    "tags",
    "login",
    "chart",
    "manifests",
    "catalog",
    "key",
    "sign",
    "verify",
    "attest",
    "verify-attestation",
    "completions",
    "man",
];

fn stdout_of(args: &[&str]) -> String {
    let out = opship().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "opship {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `bash -c script` with the completion script sourced; returns stdout.
fn bash_with_completion(script: &std::path::Path, body: &str) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}'\n{body}", script.display()))
        .output()
        .expect("bash must be installed");
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completion_is_valid_and_completes_commands_and_flags() {
    let script = stdout_of(&["completions", "bash"]);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("opship.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash must be installed");
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Ask the completion function what it offers, as bash does on <TAB>.
    let complete = |words: &str, cword: usize| {
        bash_with_completion(
            &path,
            &format!(
                "COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; \
                 COMP_POINT=${{#COMP_LINE}}; _opship opship \"${{COMP_WORDS[$COMP_CWORD]}}\" \
                 \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\""
            ),
        )
    };
    let top = complete("opship ''", 1);
    for c in COMMANDS {
        assert!(
            top.lines().any(|l| l == *c),
            "`opship <TAB>` lacks {c}: {top}"
        );
    }
    let pu = complete("opship pu", 1);
    let mut offered: Vec<&str> = pu.lines().collect();
    offered.sort();
    assert_eq!(offered, ["pull", "push"]);
    let flags = complete("opship push --all", 2);
    assert!(flags.lines().any(|l| l == "--all-tags"), "{flags}");
    let sub = complete("opship catalog ''", 2);
    for c in ["render", "validate", "add", "build"] {
        assert!(
            sub.lines().any(|l| l == c),
            "`opship catalog <TAB>` lacks {c}: {sub}"
        );
    }
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout_of(&["completions", shell]);
        for c in ["push", "catalog", "completions", "--all-tags"] {
            assert!(script.contains(c), "{shell} script lacks {c}");
        }
    }
    let out = opship().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// groff's verdict on a page: formats it with every warning on; stderr must be empty.
fn groff_warnings(page: &std::path::Path) -> String {
    let out = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .arg(page)
        .output()
        .expect("groff must be installed (Debian groff-base; scripts/test installs it)");
    assert!(out.status.success(), "groff failed on {}", page.display());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn man_pages_cover_every_command_and_format_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = opship()
        .args(["man", "--output"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for c in COMMANDS {
        assert!(
            names.contains(&format!("opship-{c}.1")),
            "no page for {c}: {names:?}"
        );
    }
    for n in [
        "opship.1",
        "opship-catalog-render.1",
        "opship-chart-push.1",
        "opship-generate-bundle.1",
        "opship-validate-bundle.1",
        "opship-key-generate.1",
    ] {
        assert!(names.contains(&n.to_owned()), "no {n}: {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    for n in &names {
        let warnings = groff_warnings(&dir.join(n));
        assert!(warnings.is_empty(), "{n}: {warnings}");
    }
    // man(1) itself reads the page: name, options and the examples of --help.
    let shown = Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(dir.join("opship-push.1"))
        .env("MANWIDTH", "200")
        .env("LANG", "C.UTF-8")
        .output()
        .expect("man must be installed (Debian man-db; scripts/test installs it)");
    assert!(shown.status.success());
    let text = String::from_utf8_lossy(&shown.stdout);
    for want in [
        "opship-push",
        "--all-tags",
        "--password-stdin",
        "Examples:",
        "opship push dist/oci quay.io/example --all-tags",
    ] {
        assert!(text.contains(want), "man opship-push lacks {want}:\n{text}");
    }
    // Without --output: the main page on stdout, the same bytes as opship.1, every time.
    let main = stdout_of(&["man"]);
    assert_eq!(main, std::fs::read_to_string(dir.join("opship.1")).unwrap());
    assert_eq!(main, stdout_of(&["man"]));
    for c in COMMANDS {
        assert!(
            main.contains(&format!("opship\\-{}(1)", c.replace('-', "\\-"))),
            "main page lacks {c}"
        );
    }
}
