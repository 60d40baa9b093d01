//! Per-rule fixtures: every rule of the registry has a failing and a passing case under
//! `tests/fixtures/<ID>/`, and the findings of each case are snapshotted (see the README there).

use std::path::{Path, PathBuf};

use opship_core::yaml;
use opship_validate::{Options, Suite, rule};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else if e.file_name() != "fixture.yaml" {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Sets `value` at a JSON pointer, creating missing parent maps.
fn set_pointer(root: &mut Value, pointer: &str, value: Value) {
    let mut cur = root;
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, t) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        if let Value::Array(a) = cur {
            let idx: usize = if t == "-" {
                a.push(Value::Null);
                a.len() - 1
            } else {
                t.parse().expect("array index")
            };
            if last {
                a[idx] = value;
                return;
            }
            cur = &mut a[idx];
        } else {
            if !cur.is_object() {
                *cur = Value::Object(Default::default());
            }
            let map = cur.as_object_mut().unwrap();
            if last {
                map.insert(t.clone(), value);
                return;
            }
            cur = map.entry(t.clone()).or_insert(Value::Null);
        }
    }
}

fn delete_pointer(root: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer");
    let last = last.replace("~1", "/").replace("~0", "~");
    match root.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            assert!(m.shift_remove(&last).is_some(), "nothing at {pointer}");
        }
        Some(Value::Array(a)) => {
            a.remove(last.parse::<usize>().unwrap());
        }
        _ => panic!("nothing at {pointer}"),
    }
}

fn edit_yaml(file: &Path, edit: impl FnOnce(&mut Value)) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut doc = yaml::parse_one(&text, file).unwrap().value;
    edit(&mut doc);
    std::fs::write(file, yaml::to_string(&doc).unwrap()).unwrap();
}

/// Builds the case into `dest` and returns the options it asks for.
fn materialize(case: &Path, rule: &rule::Rule, dest: &Path) -> (Options, String, Value) {
    let spec: Value = match std::fs::read_to_string(case.join("fixture.yaml")) {
        Ok(t) => {
            yaml::parse_one(&t, &case.join("fixture.yaml"))
                .unwrap()
                .value
        }
        Err(_) => Value::Object(Default::default()),
    };
    match spec["base"].as_str() {
        Some("none") => {}
        // A real bundle of the shared corpus, read-only there, copied here.
        Some(b) if b.starts_with("corpus:") => copy_tree(
            &crate::corpus_dir()
                .join("bundles")
                .join(&b["corpus:".len()..]),
            dest,
        ),
        _ => copy_tree(&fixtures_dir().join("_base"), dest),
    }
    copy_tree(case, dest);
    if let Some(set) = spec["set"].as_object() {
        for (target, value) in set {
            let (file, pointer) = target.split_once('#').expect("set key is file#pointer");
            edit_yaml(&dest.join(file), |doc| {
                set_pointer(doc, pointer, value.clone())
            });
        }
    }
    if let Some(del) = spec["delete"].as_array() {
        for target in del {
            let target = target.as_str().unwrap();
            match target.split_once('#') {
                Some((file, pointer)) => {
                    edit_yaml(&dest.join(file), |doc| delete_pointer(doc, pointer))
                }
                None => {
                    let p = dest.join(target);
                    if p.is_dir() {
                        std::fs::remove_dir_all(p).unwrap();
                    } else {
                        std::fs::remove_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    }
                }
            }
        }
    }
    let mut opts = Options::default();
    match spec["suites"].as_array() {
        Some(list) => {
            for s in list {
                let s = s.as_str().unwrap();
                opts.optional
                    .insert(Suite::from_name(s).unwrap_or_else(|| panic!("unknown suite {s}")));
            }
        }
        None => {
            if rule.suite.is_optional() {
                opts.optional.insert(rule.suite);
            }
        }
    }
    if let Some(v) = spec["k8sVersion"].as_str() {
        let v = if v.matches('.').count() == 1 {
            format!("{v}.0")
        } else {
            v.to_owned()
        };
        opts.k8s_version = Some(semver::Version::parse(&v).unwrap());
    }
    if let Some(c) = spec["categories"].as_array() {
        opts.categories = Some(c.iter().map(|v| v.as_str().unwrap().to_owned()).collect());
    }
    let description = spec["description"].as_str().unwrap_or_default().to_owned();
    (opts, description, spec)
}

fn render(findings: &[opship_validate::Finding], root: &Path) -> String {
    let mut out = String::new();
    for f in findings {
        let loc = f
            .location
            .as_ref()
            .map(|o| {
                let rel = o
                    .file
                    .strip_prefix(root)
                    .unwrap_or(&o.file)
                    .display()
                    .to_string();
                let rel = if rel.is_empty() { ".".to_owned() } else { rel };
                if o.pos.line == 0 {
                    rel
                } else {
                    format!("{rel}:{}:{}", o.pos.line, o.pos.col)
                }
            })
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{} {} {} [{}] {}\n",
            f.rule.id, f.level, loc, f.object, f.message
        ));
    }
    out
}

fn run_case(rule: &'static rule::Rule, case: &Path) -> (bool, String) {
    let (findings, text) = case_findings(rule, case);
    (findings.iter().any(|f| f.rule.id == rule.id), text)
}

/// Every finding of a case, and their snapshot text.
fn case_findings(
    rule: &'static rule::Rule,
    case: &Path,
) -> (Vec<opship_validate::Finding>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("0.3.0");
    let (opts, description, spec) = materialize(case, rule, &dest);
    // `image:` builds the bundle into an OCI layout (with `labels` overriding the image's
    // labels) and validates the image instead of the directory.
    let (b, root) = if spec.get("image").is_some() {
        let extra = spec["image"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let image = opship_core::image::build::build_bundle(
            &dest,
            &opship_core::image::build::BuildOptions {
                extra_labels: extra,
                ..Default::default()
            },
        )
        .unwrap();
        let layout = tmp.path().join("oci");
        opship_core::image::layout::Layout::new(&layout)
            .write_images([("fixture", &image)])
            .unwrap();
        let b = opship_validate::load::load_layout(&layout, "fixture").unwrap();
        (b, tmp.path().join("oci:fixture"))
    } else {
        (
            opship_validate::load::load_dir(&dest).unwrap(),
            dest.clone(),
        )
    };
    let findings = opship_validate::validate(&b, &opts);
    let text = format!("# {description}\n{}", render(&findings, &root));
    (findings, text)
}

/// docs/validation-differences.md lists, under "Verdict differences", every rule whose verdict
/// can differ from the reference with a fixture; each listed fixture exists and opship gives
/// it the documented verdict (the reference's is the other one). Under "Former verdict
/// differences" it lists fixed cases, where both verdicts are the same.
#[test]
fn documented_verdict_differences_hold() {
    check_verdict_table("Verdict differences", true);
    check_verdict_table("Former verdict differences", false);
}

fn check_verdict_table(heading: &str, differ: bool) {
    let doc =
        std::fs::read_to_string(crate::repo_dir().join("docs/validation-differences.md")).unwrap();
    let section = doc
        .split(&format!("\n## {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/validation-differences.md has no \"{heading}\" section"));
    let section = section.split("\n## ").next().unwrap();
    let mut rows = 0;
    let mut problems = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | rule | `fixture` | opship | reference | cause |
        let (Some(id), Some(fixture), Some(ours)) = (cells.get(1), cells.get(2), cells.get(3))
        else {
            continue;
        };
        let Some(rule) = rule::find(id) else {
            continue; // the header row
        };
        rows += 1;
        let fixture = fixture.trim_matches('`');
        let case = fixtures_dir().join(fixture);
        if !case.is_dir() {
            problems.push(format!("{id}: fixture {fixture} does not exist"));
            continue;
        }
        let (findings, text) = case_findings(rule, &case);
        let verdict = if findings
            .iter()
            .any(|f| f.level == opship_validate::Level::Error)
        {
            "fail"
        } else {
            "pass"
        };
        if !ours.starts_with(verdict) {
            problems.push(format!(
                "{fixture}: opship says {verdict}, the doc {ours}:\n{text}"
            ));
        }
        let same = cells
            .get(4)
            .is_some_and(|theirs| theirs.starts_with(verdict));
        if same == differ {
            problems.push(format!(
                "{fixture}: under \"{heading}\" but the reference's verdict is {}",
                if same { "the same" } else { "another" }
            ));
        }
    }
    assert!(rows >= 5, "only {rows} rows found under \"{heading}\"");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn base_is_clean_under_every_suite() {
    let b = opship_validate::load::load_dir(&fixtures_dir().join("_base")).unwrap();
    let findings = opship_validate::validate(&b, &Options::all());
    assert!(
        findings.is_empty(),
        "the fixture base must be clean:\n{}",
        render(&findings, &fixtures_dir().join("_base"))
    );
}

#[test]
fn every_rule_has_failing_and_passing_cases() {
    let mut problems = Vec::new();
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_snapshot_path("snapshots/fixtures");
    let _guard = settings.bind_to_scope();
    // OPSHIP_FIXTURE_RULES=CSV,CRD0 limits the run to rules with these ID prefixes.
    let only: Vec<String> = std::env::var("OPSHIP_FIXTURE_RULES")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    for rule in rule::all() {
        if !only.is_empty() && !only.iter().any(|p| rule.id.starts_with(p.as_str())) {
            continue;
        }
        // A community rule needs a repository around the bundle (sibling bundles, ci.yaml,
        // config.yaml): its passing and failing cases are built in tests/it/community.rs.
        // An upgrade rule compares two bundles: its cases are in tests/it/upgrade.rs.
        if matches!(rule.suite, Suite::Community | Suite::Upgrade) {
            continue;
        }
        let dir = fixtures_dir().join(rule.id);
        let mut cases: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect(),
            Err(_) => Vec::new(),
        };
        cases.sort();
        let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
        let fails = cases.iter().filter(|c| name(c).starts_with("fail")).count();
        let passes = cases.iter().filter(|c| name(c).starts_with("pass")).count();
        if fails == 0 || passes == 0 {
            problems.push(format!(
                "{}: needs fail and pass cases ({fails} fail, {passes} pass)",
                rule.id
            ));
        }
        for case in &cases {
            let (fired, text) = run_case(rule, case);
            let expect = name(case).starts_with("fail");
            if fired != expect {
                problems.push(format!(
                    "{}/{}: rule {} but should{}:\n{text}",
                    rule.id,
                    name(case),
                    if fired { "fired" } else { "did not fire" },
                    if expect { "" } else { " not" }
                ));
            }
            insta::assert_snapshot!(format!("{}-{}", rule.id, name(case)), text);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
