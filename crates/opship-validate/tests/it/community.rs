//! The community suite against what the community-operators pipeline reported for eleven real
//! operators (`../shared/community`), and fixtures for each check, passing and failing.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use opship_validate::{Level, Options, Suite, community, validate_dir};
use serde_json::Value;

/// `$OPSHIP_COMMUNITY`, `../shared/community` next to the repository, or `/work/shared/community`.
fn community_dir() -> PathBuf {
    if let Ok(p) = std::env::var("OPSHIP_COMMUNITY") {
        return PathBuf::from(p);
    }
    let sibling = crate::repo_dir().join("../shared/community");
    if sibling.is_dir() {
        return sibling;
    }
    PathBuf::from("/work/shared/community")
}

fn community_opts() -> Options {
    Options {
        optional: [Suite::Community].into(),
        ..Options::default()
    }
}

/// A message with the members of a printed Python set (`{…}` at its end) sorted: Python
/// prints sets in no fixed order.
fn normalize(message: &str) -> String {
    if message.ends_with('}')
        && let Some(open) = message.rfind('{')
    {
        let mut members: Vec<&str> = message[open + 1..message.len() - 1].split(", ").collect();
        members.sort_unstable();
        return format!("{}{{{}}}", &message[..open], members.join(", "));
    }
    message.to_owned()
}

type Multiset = BTreeMap<(String, String, String), usize>;

fn ours(dir: &Path, opts: &Options) -> (Multiset, BTreeSet<String>) {
    let report = validate_dir(dir, opts).expect("bundle validates");
    let mut got = Multiset::new();
    for f in report
        .findings
        .iter()
        .filter(|f| f.rule.suite == Suite::Community)
    {
        let kind = match f.level {
            Level::Error => "Fail",
            Level::Warning => "Warn",
        };
        let check = f.rule.check.expect("community findings name their check");
        *got.entry((check.to_owned(), kind.to_owned(), normalize(&f.message)))
            .or_default() += 1;
    }
    let skipped = report.skipped.iter().map(|s| s.check.to_owned()).collect();
    (got, skipped)
}

/// Proof 1: for every bundle, the multiset of (check, Fail/Warn, message) is what the pipeline
/// reported, and every check the pipeline skipped for want of a network service or for FBC is
/// reported skipped.
#[test]
fn every_bundle_agrees_with_the_pipeline() {
    let root = community_dir();
    let text = fs::read_to_string(root.join("expected/static.jsonl")).expect("expected results");
    let opts = community_opts();
    let mut per_operator: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut lines = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let exp: Value = serde_json::from_str(line).expect("a JSON line");
        let dir = exp["dir"].as_str().expect("dir");
        let operator = dir
            .split('/')
            .nth(1)
            .expect("operators/<op>/<ver>")
            .to_owned();
        let mut want = Multiset::new();
        for r in exp["results"].as_array().expect("results") {
            let key = (
                r["check"].as_str().unwrap().to_owned(),
                r["type"].as_str().unwrap().to_owned(),
                normalize(r["message"].as_str().unwrap()),
            );
            *want.entry(key).or_default() += 1;
        }
        let (got, skipped) = ours(&root.join(dir), &opts);
        let mut must_skip: BTreeSet<String> = BTreeSet::new();
        for key in ["skipped", "fbc_skipped"] {
            for c in exp[key].as_array().into_iter().flatten() {
                let c = c.as_str().unwrap();
                if !c.starts_with("check_osdk_") {
                    must_skip.insert(c.to_owned());
                }
            }
        }
        let skip_ok = must_skip.is_subset(&skipped);
        let entry = per_operator.entry(operator).or_default();
        entry.1 += 1;
        if got == want && skip_ok {
            entry.0 += 1;
        } else {
            problems.push(format!(
                "{dir}:\n  missing: {:?}\n  extra: {:?}\n  not skipped: {:?}",
                want.iter()
                    .filter(|(k, n)| got.get(*k) != Some(n))
                    .collect::<Vec<_>>(),
                got.iter()
                    .filter(|(k, n)| want.get(*k) != Some(n))
                    .collect::<Vec<_>>(),
                must_skip.difference(&skipped).collect::<Vec<_>>()
            ));
        }
    }
    for (op, (ok, total)) in &per_operator {
        println!("{op}: {ok}/{total} bundles agree");
    }
    assert_eq!(lines, 38, "static.jsonl has one line per bundle");
    assert_eq!(per_operator.len(), 11);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One `validate bundle` run over many bundles reads each operator directory once and shares
/// it between that operator's bundles: every report equals the bundle validated alone.
#[test]
fn a_run_over_many_bundles_reports_what_each_alone_does() {
    let root = community_dir();
    let opts = community_opts();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for op in fs::read_dir(root.join("operators")).unwrap() {
        for b in fs::read_dir(op.unwrap().path()).unwrap() {
            let b = b.unwrap().path();
            if b.join("metadata").is_dir() {
                dirs.push(b);
            }
        }
    }
    dirs.sort();
    assert_eq!(dirs.len(), 38);
    let together = opship_validate::validate_dirs(&dirs, &opts);
    for (d, r) in dirs.iter().zip(together) {
        let r = r.expect("validates");
        let alone = validate_dir(d, &opts).expect("validates");
        assert_eq!(r.findings, alone.findings, "{}", d.display());
        assert_eq!(r.skipped, alone.skipped, "{}", d.display());
    }
}

/// `validate operator`: operator-level findings once, in the operator's own report, and not
/// repeated on its bundles.
#[test]
fn operator_level_checks_are_reported_once() {
    let root = community_dir().join("operators/apicurito");
    let reports = community::validate_operator(&root, &community_opts()).unwrap();
    assert_eq!(reports.len(), 5, "the operator and its four bundles");
    let first = reports[0].as_ref().unwrap();
    assert_eq!(first.name, "apicurito");
    let unique: Vec<_> = first
        .findings
        .iter()
        .filter(|f| f.rule.check == Some("check_operator_name_unique"))
        .collect();
    assert_eq!(unique.len(), 1);
    for r in &reports[1..] {
        let r = r.as_ref().unwrap();
        assert!(
            r.findings
                .iter()
                .all(|f| f.rule.check != Some("check_operator_name_unique")),
            "{}",
            r.name
        );
        assert!(
            r.findings
                .iter()
                .any(|f| f.rule.check == Some("check_using_fbc"))
        );
    }
}

// ------------------------------------------------------------------------------------------
// Fixtures: a small repository per case, written into a temporary directory.

const ICON: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

struct Repo {
    dir: tempfile::TempDir,
}

struct B<'a> {
    version: &'a str,
    csv_name: Option<&'a str>,
    package: &'a str,
    channels: &'a str,
    replaces: Option<&'a str>,
    skip_range: Option<&'a str>,
    spec_version: Option<&'a str>,
    min_kube: Option<&'a str>,
    ocp: Option<&'a str>,
    good_fields: bool,
    release_config: Option<&'a str>,
    network_policy: bool,
}

impl Default for B<'_> {
    fn default() -> Self {
        B {
            version: "1.0.0",
            csv_name: None,
            package: "foo",
            channels: "stable",
            replaces: None,
            skip_range: None,
            spec_version: None,
            min_kube: None,
            ocp: None,
            good_fields: true,
            release_config: None,
            network_policy: false,
        }
    }
}

impl Repo {
    fn new(config_yaml: Option<&str>) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("operators")).unwrap();
        if let Some(c) = config_yaml {
            fs::write(dir.path().join("config.yaml"), c).unwrap();
        }
        Repo { dir }
    }

    fn op(&self, name: &str) -> PathBuf {
        self.dir.path().join("operators").join(name)
    }

    fn ci(&self, op: &str, text: &str) {
        fs::create_dir_all(self.op(op)).unwrap();
        fs::write(self.op(op).join("ci.yaml"), text).unwrap();
    }

    fn bundle(&self, op: &str, b: B<'_>) -> PathBuf {
        let dir = self.op(op).join(b.version);
        fs::create_dir_all(dir.join("manifests")).unwrap();
        fs::create_dir_all(dir.join("metadata")).unwrap();
        let name = b
            .csv_name
            .map_or_else(|| format!("{op}.v{}", b.version), str::to_owned);
        let mut csv = format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\n"
        );
        csv.push_str("  annotations:\n");
        if b.good_fields {
            csv.push_str(
                "    capabilities: Basic Install\n    categories: Database, Monitoring\n    \
                 containerImage: quay.io/example/foo:1.0.0\n    createdAt: \"2024-05-01T10:00:00Z\"\n    \
                 repository: https://github.com/example/foo\n    support: Example Inc.\n    \
                 description: An operator that runs foo for you.\n",
            );
        } else {
            csv.push_str("    capabilities: Sometimes\n    createdAt: yesterday\n");
        }
        if let Some(r) = b.skip_range {
            csv.push_str(&format!("    olm.skipRange: \"{r}\"\n"));
        }
        csv.push_str("spec:\n");
        csv.push_str(&format!(
            "  version: {}\n",
            b.spec_version.unwrap_or(b.version)
        ));
        if let Some(r) = b.replaces {
            csv.push_str(&format!("  replaces: \"{r}\"\n"));
        }
        if let Some(m) = b.min_kube {
            csv.push_str(&format!("  minKubeVersion: {m}\n"));
        }
        if b.good_fields {
            csv.push_str(&format!(
                "  displayName: Foo Operator\n  description: Runs foo, with backups and upgrades.\n  \
                 icon:\n  - base64data: {ICON}\n    mediatype: image/png\n  maintainers:\n  - name: A\n    \
                 email: a@example.com\n  provider:\n    name: Example\n  links:\n  - name: Home\n    \
                 url: https://example.com\n  keywords: [foo]\n"
            ));
        } else {
            csv.push_str("  displayName: F\n  keywords: []\n  maintainers: []\n");
        }
        fs::write(
            dir.join("manifests")
                .join(format!("{op}.clusterserviceversion.yaml")),
            csv,
        )
        .unwrap();
        let mut ann = format!(
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: {}\n  \
             operators.operatorframework.io.bundle.channels.v1: {}\n",
            b.package, b.channels
        );
        if let Some(o) = b.ocp {
            ann.push_str(&format!("  com.redhat.openshift.versions: \"{o}\"\n"));
        }
        fs::write(dir.join("metadata/annotations.yaml"), ann).unwrap();
        if let Some(rc) = b.release_config {
            fs::write(dir.join("release-config.yaml"), rc).unwrap();
        }
        if b.network_policy {
            fs::write(
                dir.join("manifests/deny.yaml"),
                "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny\nspec: {}\n",
            )
            .unwrap();
        }
        dir
    }
}

/// (check, level, message) of the community findings and the skipped checks of a bundle.
fn run(dir: &Path, opts: &Options) -> (Vec<(String, Level, String)>, Vec<String>) {
    let r = validate_dir(dir, opts).unwrap();
    let f = r
        .findings
        .iter()
        .filter(|f| f.rule.suite == Suite::Community)
        .map(|f| (f.rule.check.unwrap().to_owned(), f.level, f.message.clone()))
        .collect();
    (f, r.skipped.iter().map(|s| s.check.to_owned()).collect())
}

fn of<'a>(f: &'a [(String, Level, String)], check: &str) -> Vec<&'a (String, Level, String)> {
    f.iter().filter(|x| x.0 == check).collect()
}

const CI: &str = "updateGraph: replaces-mode\nreviewers: [a]\n";

#[test]
fn a_clean_operator_passes_every_check() {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    repo.bundle("foo", B::default());
    let b2 = repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            replaces: Some("foo.v1.0.0"),
            ..B::default()
        },
    );
    let (f, skipped) = run(&b2, &community_opts());
    // Only the FBC advice remains.
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "check_using_fbc");
    assert_eq!(f[0].1, Level::Warning);
    assert!(f[0].2.contains("Consider [migrating]"));
    assert!(skipped.is_empty(), "{skipped:?}");
}

#[test]
fn required_fields() {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let b = repo.bundle(
        "foo",
        B {
            good_fields: false,
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    let got: BTreeSet<(Level, String)> = of(&f, "check_required_fields")
        .into_iter()
        .map(|(_, l, m)| (*l, m.clone()))
        .collect();
    let want: BTreeSet<(Level, String)> = [
        (
            Level::Warning,
            "CSV contains an invalid value for metadata.annotations.capabilities",
        ),
        (
            Level::Warning,
            "CSV does not define metadata.annotations.categories",
        ),
        (
            Level::Warning,
            "CSV does not define metadata.annotations.containerImage",
        ),
        (
            Level::Warning,
            "CSV contains an invalid value for metadata.annotations.createdAt",
        ),
        (
            Level::Warning,
            "CSV does not define metadata.annotations.repository",
        ),
        (
            Level::Warning,
            "CSV does not define metadata.annotations.support",
        ),
        (
            Level::Warning,
            "CSV does not define metadata.annotations.description",
        ),
        (
            Level::Error,
            "CSV contains an invalid value for spec.displayName",
        ),
        (Level::Error, "CSV does not define spec.description"),
        (Level::Error, "CSV does not define spec.icon"),
        (
            Level::Error,
            "CSV contains an invalid value for spec.maintainers",
        ),
        (Level::Error, "CSV does not define spec.provider.name"),
        (Level::Error, "CSV does not define spec.links"),
        (
            Level::Warning,
            "CSV contains an invalid value for spec.keywords",
        ),
    ]
    .into_iter()
    .map(|(l, m)| (l, m.to_owned()))
    .collect();
    assert_eq!(got, want);
    // A first bundle: the FBC warning is the one for new operators.
    assert!(
        of(&f, "check_using_fbc")[0]
            .2
            .contains("start directly with FBC")
    );
}

#[test]
fn dangling_bundles_and_graph_loops() {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    repo.bundle("foo", B::default());
    repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            ..B::default()
        },
    );
    let head = repo.bundle(
        "foo",
        B {
            version: "1.2.0",
            replaces: Some("foo.v1.1.0"),
            ..B::default()
        },
    );
    let (f, _) = run(&head, &community_opts());
    assert_eq!(
        of(&f, "check_dangling_bundles")
            .iter()
            .map(|x| x.2.as_str())
            .collect::<Vec<_>>(),
        ["Channel stable has dangling bundles: {Bundle(foo/1.0.0)}"]
    );
    assert!(of(&f, "check_upgrade_graph_loop").is_empty());

    // A skipRange covers 1.0.0: nothing dangles.
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    repo.bundle("foo", B::default());
    repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            replaces: Some("foo.v1.0.0"),
            ..B::default()
        },
    );
    let head = repo.bundle(
        "foo",
        B {
            version: "1.2.0",
            skip_range: Some(">=1.0.0 <1.2.0"),
            ..B::default()
        },
    );
    let (f, _) = run(&head, &community_opts());
    assert!(of(&f, "check_dangling_bundles").is_empty(), "{f:?}");

    // A loop, and an empty replaces.
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    repo.bundle(
        "foo",
        B {
            replaces: Some("foo.v1.1.0"),
            ..B::default()
        },
    );
    let b = repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            replaces: Some("foo.v1.0.0"),
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    let loops = of(&f, "check_upgrade_graph_loop");
    assert_eq!(loops.len(), 1);
    assert!(
        loops[0]
            .2
            .starts_with("Upgrade graph loop detected: Bundle(foo/1."),
        "{loops:?}"
    );
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let b = repo.bundle(
        "foo",
        B {
            replaces: Some(""),
            ..B::default()
        },
    );
    fs::write(
        b.join("manifests/foo.clusterserviceversion.yaml"),
        fs::read_to_string(b.join("manifests/foo.clusterserviceversion.yaml"))
            .unwrap()
            .replace("replaces: \"\"", "replaces: ''"),
    )
    .unwrap();
    let (f, _) = run(&b, &community_opts());
    let msg = "Bundle(foo/1.0.0) has invalid 'replaces' field: ''";
    assert_eq!(of(&f, "check_upgrade_graph_loop")[0].2, msg);
    assert_eq!(of(&f, "check_dangling_bundles")[0].2, msg);
}

#[test]
fn api_version_constraints() {
    let cases: [(Option<&str>, Option<&str>); 5] = [
        (Some("1.23.0"), None),
        (Some("1.25.0"), Some("v4.10-v4.12")),
        (Some("1.25.0"), Some("v4.12")),
        (Some("1.25.0"), Some("v4.5,v4.7")),
        (Some("one"), Some("v4.12")),
    ];
    let want: [&[(&str, Level)]; 5] = [
        &[(
            "minKubeVersion is set to 1.23.0 but com.redhat.openshift.versions is not set",
            Level::Error,
        )],
        &[(
            "OCP version(s) 4.10,4.11 conflict with minKubeVersion=1.25.0",
            Level::Error,
        )],
        &[],
        &[
            (
                "Comma separated list of versions in com.redhat.openshift.versions is only supported for v4.5 and v4.6",
                Level::Warning,
            ),
            (
                "OCP version(s) 4.5,4.6,4.7,4.8,4.9,4.10,4.11 conflict with minKubeVersion=1.25.0",
                Level::Error,
            ),
        ],
        &[(
            "Invalid minKubeVersion: one is not valid SemVer string",
            Level::Error,
        )],
    ];
    for ((min, ocp), want) in cases.into_iter().zip(want) {
        let repo = Repo::new(None);
        repo.ci("foo", CI);
        let b = repo.bundle(
            "foo",
            B {
                min_kube: min,
                ocp,
                ..B::default()
            },
        );
        let (f, _) = run(&b, &community_opts());
        let got: Vec<(&str, Level)> = of(&f, "check_api_version_constraints")
            .iter()
            .map(|x| (x.2.as_str(), x.1))
            .collect();
        assert_eq!(got, want, "{min:?} {ocp:?}");
    }
}

#[test]
fn operator_names_and_directories() {
    let repo = Repo::new(None);
    repo.ci("foo", "updateGraph: sideways\nreviewers: [a]\n");
    repo.bundle("foo", B::default());
    let b = repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            csv_name: Some("bar.v1.1.0"),
            package: "bar",
            replaces: Some("foo.v1.0.0"),
            spec_version: Some("1.1.1"),
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    let names: BTreeSet<&str> = of(&f, "check_operator_name")
        .iter()
        .map(|x| x.2.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "Operator name from annotations.yaml (bar) does not match the name defined in other bundles (foo)",
            "Operator name from the CSV (bar) does not match the name defined in other bundles (foo)",
            "Operator name from annotations.yaml (bar) does not match the operator's directory name (foo)",
        ]
        .into()
    );
    assert_eq!(
        normalize(&of(&f, "check_operator_name_unique")[0].2),
        "Bundles use multiple operator names: {'bar', 'foo'}"
    );
    let dir = of(&f, "check_operator_version_directory_name");
    assert_eq!(
        dir[0].2,
        "Bundle directory name 'foo/1.1.0' does not match the expected operator CSV version '1.1.1' from ./operators/foo/1.1.0/manifests/foo.clusterserviceversion.yaml."
    );
    // ci.yaml: a wrong updateGraph, by two checks.
    assert_eq!(
        of(&f, "check_ci_upgrade_graph")[0].2,
        "The 'updateGraph' option in ci.yaml must be one of ['replaces-mode', 'semver-mode']"
    );
    assert_eq!(
        of(&f, "check_schema_operator_ci_config")[0].2,
        "Operator's 'ci.yaml' contains invalid data which does not comply with the schema: 'sideways' is not one of ['replaces-mode', 'semver-mode']"
    );
    // No ci.yaml at all: a warning.
    let repo = Repo::new(None);
    let b = repo.bundle("foo", B::default());
    let (f, _) = run(&b, &community_opts());
    assert_eq!(of(&f, "check_ci_upgrade_graph")[0].1, Level::Warning);
}

#[test]
fn replaces_availability() {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    repo.bundle(
        "foo",
        B {
            ocp: Some("v4.14"),
            ..B::default()
        },
    );
    let missing = repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            replaces: Some("foo.v0.9.0"),
            ocp: Some("v4.14"),
            ..B::default()
        },
    );
    let (f, _) = run(&missing, &community_opts());
    assert!(
        of(&f, "check_replaces_availability")[0].2.starts_with(
            "Bundle(foo/1.1.0) attempts to replace version '0.9.0' which does not exist in the submitted PR branch. Available versions: ['1.0.0', '1.1.0']."
        ),
        "{f:?}"
    );
    let wider = repo.bundle(
        "foo",
        B {
            version: "1.2.0",
            replaces: Some("foo.v1.0.0"),
            ocp: Some("v4.12"),
            ..B::default()
        },
    );
    // Different ranges need the index list: skipped without it...
    let (f, skipped) = run(&wider, &community_opts());
    assert!(of(&f, "check_replaces_availability").is_empty());
    assert!(skipped.contains(&"check_replaces_availability".to_owned()));
    // ... and compared with it.
    let mut opts = community_opts();
    opts.ocp_indices = Some(
        ["v4.12", "v4.13", "v4.14", "v4.15"]
            .map(str::to_owned)
            .to_vec(),
    );
    let (f, skipped) = run(&wider, &opts);
    assert!(!skipped.contains(&"check_replaces_availability".to_owned()));
    assert_eq!(
        of(&f, "check_replaces_availability")[0].2,
        "Replaces bundle Bundle(foo/1.0.0) ['v4.14', 'v4.15'] does not support the same OCP versions as bundle Bundle(foo/1.2.0) ['v4.12', 'v4.13', 'v4.14', 'v4.15']. In order to fix this issue, align the OCP version range to match the range of the replaced bundle. This can be done by setting the `com.redhat.openshift.versions` annotation in the `metadata/annotations.yaml` file.\n`Bundle(foo/1.2.0)` - `v4.12`\n`Bundle(foo/1.0.0)` - `v4.14`"
    );
}

#[test]
fn network_policies_are_refused() {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let b = repo.bundle(
        "foo",
        B {
            network_policy: true,
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    assert_eq!(
        of(&f, "check_network_policy_presence")[0].2,
        "Bundle contains a NetworkPolicy in deny.yaml. Network policies are not a supported resource that Operator Lifecycle Manager(OLM) can install and manage."
    );
}

#[test]
fn fbc_operators_and_release_config() {
    let repo = Repo::new(None);
    repo.ci(
        "foo",
        "reviewers: [a]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [v4.19, v4.20]\n  - template_name: semver.yaml\n    type: olm.semver\n    catalog_names: [v4.20]\n",
    );
    fs::create_dir_all(repo.op("foo").join("catalog-templates")).unwrap();
    let b = repo.bundle(
        "foo",
        B {
            // No replaces: FBC operators do not need one, the graph checks are off.
            release_config: Some(
                "catalog_templates:\n- template_name: basic.yaml\n  channels: [stable]\n- template_name: semver.yaml\n  channels: [stable]\n- template_name: other.yaml\n  channels: [stable, stable]\n",
            ),
            ..B::default()
        },
    );
    repo.bundle(
        "foo",
        B {
            version: "0.9.0",
            ..B::default()
        },
    );
    let (f, skipped) = run(&b, &community_opts());
    let rc: BTreeSet<&str> = of(&f, "check_bundle_release_config")
        .iter()
        .map(|x| x.2.as_str())
        .collect();
    assert_eq!(
        rc,
        [
            "Bundle's 'release-config.yaml' contains a semver catalog template 'semver.yaml' with invalid channels: ['stable']. Allowed channels are: ['Fast', 'Candidate', 'Stable']. Follow olm [documentation](https://olm.operatorframework.io/docs/reference/catalog-templates/#specification) to see more details about semver template.",
            "Bundle's 'release-config.yaml' contains a catalog template 'other.yaml' that is not defined in the ci.yaml file under 'catalog_mapping'. Add the template to the 'catalog_mapping.",
        ]
        .into()
    );
    assert_eq!(
        of(&f, "check_validate_schema_bundle_release_config")[0].2,
        "Bundle's 'release-config.yaml' contains invalid data which does not comply with the schema: ['stable', 'stable'] has non-unique elements"
    );
    assert_eq!(
        of(&f, "check_catalog_usage_ci_config")[0].2,
        "Operator's 'ci.yaml' contains multiple templates '['basic.yaml', 'semver.yaml']' for the same catalog 'v4.20'."
    );
    for off in [
        "check_dangling_bundles",
        "check_api_version_constraints",
        "check_using_fbc",
        "check_operator_name_unique",
        "check_ci_upgrade_graph",
        "check_upgrade_graph_loop",
        "check_replaces_availability",
    ] {
        assert!(skipped.contains(&off.to_owned()), "{off} is off for FBC");
        assert!(of(&f, off).is_empty());
    }

    // release-config.yaml without FBC.
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let b = repo.bundle(
        "foo",
        B {
            release_config: Some(
                "catalog_templates:\n- template_name: basic.yaml\n  channels: [stable]\n",
            ),
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    assert_eq!(
        of(&f, "check_bundle_release_config")[0].2,
        "Bundle's 'release-config.yaml' is used but FBC is not enabled for the operator. Update the 'fbc.enabled' field in the ci.yaml file."
    );
}

#[test]
fn waivers_in_the_repository_config_switch_checks_off() {
    let config = "organization: community-operators\ntests:\n  - name: check_dangling_bundles\n    ignore_operators:\n      - ^fo+$\n  - name: check_operator_name\n    ignore_operators:\n      - ^other\n";
    let repo = Repo::new(Some(config));
    repo.ci("foo", CI);
    repo.bundle("foo", B::default());
    let b = repo.bundle(
        "foo",
        B {
            version: "1.1.0",
            package: "bar",
            ..B::default()
        },
    );
    let (f, skipped) = run(&b, &community_opts());
    assert!(of(&f, "check_dangling_bundles").is_empty());
    assert!(skipped.contains(&"check_dangling_bundles".to_owned()));
    // Waived for another operator only: still runs.
    assert!(!of(&f, "check_operator_name").is_empty());
    // Without the waiver the same operator dangles.
    fs::remove_file(repo.dir.path().join("config.yaml")).unwrap();
    let (f, _) = run(&b, &community_opts());
    assert_eq!(of(&f, "check_dangling_bundles").len(), 1);
}

#[test]
fn not_selected_not_run_and_not_in_all() {
    let repo = Repo::new(None);
    let b = repo.bundle("foo", B::default());
    let (f, _) = run(&b, &Options::default());
    assert!(f.is_empty());
    let (f, _) = run(&b, &Options::all());
    assert!(f.is_empty(), "--select-optional all leaves community out");
}

// ------------------------------------------------------------------------------------------
// Symlinks out of the operator directory, at every depth: never followed, never quoted.

/// What a file outside the operator directory holds: a YAML document that, read in place of
/// any of the operator's files, would be quoted in a finding.
const OUTSIDE: &str = "updateGraph: OUTSIDE-SECRET-1\ncatalog_templates: OUTSIDE-SECRET-2\napiVersion: v1\nkind: ClusterServiceVersion\nmetadata:\n  name: OUTSIDE-SECRET-3.v1.0.0\nannotations:\n  operators.operatorframework.io.bundle.package.v1: OUTSIDE-SECRET-4\n  operators.operatorframework.io.bundle.channels.v1: OUTSIDE-SECRET-5\n";

/// Every message, object and skip reason of a `validate operator` run and of a `validate
/// bundle` run over the bundle directories of the operator. Of a bundle directory that is
/// itself a symlink only the community checks count: the user named it, and the other suites
/// read the directory named; the community checks read its operator directory, which it
/// leads out of.
fn everything_said(op: &Path) -> String {
    let mut out = String::new();
    let mut say = |r: &opship_validate::BundleReport, community_only: bool| {
        for f in &r.findings {
            if !community_only || f.rule.suite == Suite::Community {
                out.push_str(&format!("{} {} {}\n", f.rule.id, f.object, f.message));
            }
        }
        for s in &r.skipped {
            out.push_str(&format!("skipped {} {}\n", s.check, s.reason));
        }
    };
    for r in community::validate_operator(op, &community_opts()).unwrap() {
        say(&r.unwrap(), false);
    }
    let mut dirs: Vec<PathBuf> = fs::read_dir(op)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("metadata").is_dir())
        .collect();
    dirs.sort();
    for (d, r) in dirs
        .iter()
        .zip(opship_validate::validate_dirs(&dirs, &community_opts()))
    {
        say(&r.unwrap(), d.is_symlink());
    }
    out
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_operator_directory_are_not_followed() {
    use std::os::unix::fs::symlink;
    type Link = fn(&Path, &Path, &Path);
    // (what is a link, how it is made: operator directory, the outside file, an outside
    // bundle directory whose every file is the outside text)
    let cases: [(&str, Link); 8] = [
        ("ci.yaml", |op, file, _| {
            fs::remove_file(op.join("ci.yaml")).unwrap();
            symlink(file, op.join("ci.yaml")).unwrap();
        }),
        ("release-config.yaml", |op, file, _| {
            symlink(file, op.join("1.1.0/release-config.yaml")).unwrap();
        }),
        ("the CSV", |op, file, _| {
            let csv = op.join("1.1.0/manifests/foo.clusterserviceversion.yaml");
            fs::remove_file(&csv).unwrap();
            symlink(file, csv).unwrap();
        }),
        ("annotations.yaml", |op, file, _| {
            let a = op.join("1.1.0/metadata/annotations.yaml");
            fs::remove_file(&a).unwrap();
            symlink(file, a).unwrap();
        }),
        ("a manifest", |op, file, _| {
            symlink(file, op.join("1.1.0/manifests/extra.yaml")).unwrap();
        }),
        ("manifests/", |op, _, bundle| {
            fs::remove_dir_all(op.join("1.1.0/manifests")).unwrap();
            symlink(bundle.join("manifests"), op.join("1.1.0/manifests")).unwrap();
        }),
        ("metadata/", |op, _, bundle| {
            fs::remove_dir_all(op.join("1.1.0/metadata")).unwrap();
            symlink(bundle.join("metadata"), op.join("1.1.0/metadata")).unwrap();
        }),
        ("a bundle directory", |op, _, bundle| {
            symlink(bundle, op.join("2.0.0")).unwrap();
        }),
    ];
    for (what, link) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("secret.yaml");
        fs::write(&file, OUTSIDE).unwrap();
        let bundle = tmp.path().join("elsewhere/2.0.0");
        for f in [
            "manifests/foo.clusterserviceversion.yaml",
            "metadata/annotations.yaml",
            "release-config.yaml",
        ] {
            fs::create_dir_all(bundle.join(f).parent().unwrap()).unwrap();
            fs::write(bundle.join(f), OUTSIDE).unwrap();
        }
        let repo = Repo::new(None);
        repo.ci("foo", CI);
        repo.bundle("foo", B::default());
        repo.bundle(
            "foo",
            B {
                version: "1.1.0",
                replaces: Some("foo.v1.0.0"),
                ..B::default()
            },
        );
        let op = repo.op("foo");
        link(&op, &file, &bundle);
        let said = everything_said(&op);
        assert!(!said.contains("OUTSIDE-SECRET"), "{what}:\n{said}");
        assert!(said.contains("leads out of"), "{what}:\n{said}");
    }
}

#[cfg(unix)]
#[test]
fn symlinks_inside_the_operator_directory_are_followed() {
    let repo = Repo::new(None);
    repo.ci("foo", "updateGraph: not-a-mode\n");
    let op = repo.op("foo");
    fs::rename(op.join("ci.yaml"), op.join("ci-real.yaml")).unwrap();
    std::os::unix::fs::symlink("ci-real.yaml", op.join("ci.yaml")).unwrap();
    let b = repo.bundle("foo", B::default());
    let (f, _) = run(&b, &community_opts());
    assert_eq!(
        of(&f, "check_schema_operator_ci_config")[0].2,
        "Operator's 'ci.yaml' contains invalid data which does not comply with the schema: 'not-a-mode' is not one of ['replaces-mode', 'semver-mode']"
    );
}

/// A value of a file in the tree is quoted at most `EXCERPT_BYTES` (200) bytes long, also
/// when it has spaces (which the general cut of long findings keeps whole up to 4 KiB).
#[test]
fn long_values_are_quoted_as_an_excerpt() {
    let long = "some words of a token ".repeat(30); // 660 bytes
    let long = long.trim_end();
    let repo = Repo::new(None);
    repo.ci(
        "foo",
        &format!("updateGraph: {long}\nreviewers: b {long}\n"),
    );
    let b = repo.bundle(
        "foo",
        B {
            release_config: Some(&format!("catalog_templates: c {long}\n")),
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    let mut quoted = 0;
    for (check, _, m) in &f {
        if m.contains("some words") {
            assert!(m.len() < 450, "{check}: {} bytes: {m}", m.len());
            assert!(m.contains(" bytes)"), "{m}");
            quoted += 1;
        }
    }
    assert!(quoted >= 3, "{f:?}");
}

// ------------------------------------------------------------------------------------------
// createdAt as the pipeline reads it: PyYAML makes a plain timestamp-like scalar a datetime
// (one-digit month, day and hour allowed), a quoted one stays a string for dateutil's strict
// `isoparse`.

/// Whether the pipeline's `check_required_fields` accepts `createdAt` written as `yaml` (the
/// text after `createdAt:` in the CSV's annotations, with `{}` lines inserted before it).
/// Every verdict below was checked with PyYAML 6.0.3 and python-dateutil 2.9.0.post0, the
/// pipeline's versions: `yaml.safe_load` of the CSV, then `validate_timestamp`.
#[test]
fn created_at_is_judged_as_pyyaml_and_dateutil_read_it() {
    let cases: &[(&str, bool)] = &[
        // The two spellings, and their plain forms.
        ("\"2023-9-26T00:00:00Z\"", false),
        ("'2023-9-26T00:00:00Z'", false),
        ("2023-9-26T00:00:00Z", true),
        ("\"2023-06-07T8:55:00Z\"", false),
        ("'2023-06-07T8:55:00Z'", false),
        ("2023-06-07T8:55:00Z", true),
        ("\"2024-1-5\"", false),
        ("2024-1-5", false),
        ("\"2024-01-05\"", true),
        ("2024-01-05", true),
        // Separators, case, fractions, zones.
        ("\"2023-06-07t08:55:00z\"", true),
        ("2023-06-07t08:55:00Z", true),
        ("\"2023-06-07 08:55:00\"", true),
        ("\"2023-06-07  08:55:00\"", false),
        ("\"2023-06-07T08:55:00.123456789Z\"", true),
        ("\"2023-06-07T08:55:00,5Z\"", true),
        ("\"2023-06-07T08:55:00.Z\"", false),
        ("2023-06-07T08:55:00.Z", true),
        ("\"2023-06-07T08:55:00 +05:30\"", false),
        ("2023-06-07T08:55:00 +05:30", true),
        ("\"2023-06-07 8:55:00 -5\"", false),
        ("2023-06-07 8:55:00 -5", true),
        ("\"2023-06-07T08:55:00+0530\"", true),
        ("\"2023-06-07T08:55:00+5\"", false),
        ("2023-06-07T08:55:00+5", true),
        // dateutil's other forms and its leniencies.
        ("\"20230607T085500Z\"", true),
        ("\"2023-W05-3\"", true),
        ("\"2023-366\"", false),
        ("\"2024-366\"", true),
        ("\"2023-06-07T 8:55:00Z\"", true),
        ("\"2023-06-07T24:00:00\"", true),
        // Block scalars, tags, anchors and aliases, flow mappings, comments.
        ("|-\n      2023-06-07T08:55:00Z", true),
        (">-\n      2023-9-26T00:00:00Z", false),
        ("!!str 2023-9-26T00:00:00Z", false),
        ("&d 2023-9-26T00:00:00Z", true),
        (
            "{}    other: &d 2023-9-26T00:00:00Z\n    createdAt: *d",
            true,
        ),
        (
            "{}    other: &d \"2023-9-26T00:00:00Z\"\n    createdAt: *d",
            false,
        ),
        ("2023-9-26T00:00:00Z # made by hand", true),
        ("2023-06-07\n      08:55:00", true),
    ];
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let b = repo.bundle("foo", B::default());
    let csv_path = b.join("manifests/foo.clusterserviceversion.yaml");
    let csv = fs::read_to_string(&csv_path).unwrap();
    let line = "    createdAt: \"2024-05-01T10:00:00Z\"\n";
    assert!(csv.contains(line));
    let mut wrong = Vec::new();
    for (yaml, passes) in cases {
        let written = match yaml.strip_prefix("{}") {
            Some(lines) => format!("{lines}\n"),
            None => format!("    createdAt: {yaml}\n"),
        };
        fs::write(&csv_path, csv.replace(line, &written)).unwrap();
        let (f, _) = run(&b, &community_opts());
        let warned = of(&f, "check_required_fields")
            .iter()
            .any(|x| x.2 == "CSV contains an invalid value for metadata.annotations.createdAt");
        if warned == *passes {
            wrong.push(format!("{yaml}: pipeline passes={passes}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ------------------------------------------------------------------------------------------
// Long operators: the graph checks are exact on thousands of versions (their time is measured
// in BENCHMARKS.md, with scripts/synthetic-community-operator; no test asserts timing).

/// An operator of `n` versions `0.I.J` in one channel, each replacing the previous one and,
/// with `skip_ranges`, skipping every earlier version through its olm.skipRange.
fn long_operator(n: usize, skip_ranges: bool) -> (Repo, Vec<String>) {
    let repo = Repo::new(None);
    repo.ci("foo", CI);
    let versions: Vec<String> = (0..n)
        .map(|i| format!("0.{}.{}", i / 100, i % 100))
        .collect();
    for (i, v) in versions.iter().enumerate() {
        let replaces = (i > 0).then(|| format!("foo.v{}", versions[i - 1]));
        let range = (skip_ranges && i > 0).then(|| format!(">=0.0.0 <{v}"));
        repo.bundle(
            "foo",
            B {
                version: v,
                replaces: replaces.as_deref(),
                skip_range: range.as_deref(),
                ..B::default()
            },
        );
    }
    (repo, versions)
}

fn set_replaces(repo: &Repo, version: &str, replaces: &str) {
    let csv = repo
        .op("foo")
        .join(version)
        .join("manifests/foo.clusterserviceversion.yaml");
    let text = fs::read_to_string(&csv).unwrap();
    let text = match text.find("  replaces: ") {
        Some(at) => {
            let end = at + text[at..].find('\n').unwrap();
            format!("{}  replaces: \"{replaces}\"{}", &text[..at], &text[end..])
        }
        None => text.replace("spec:\n", &format!("spec:\n  replaces: \"{replaces}\"\n")),
    };
    fs::write(csv, text).unwrap();
}

#[test]
fn graph_checks_on_two_thousand_versions() {
    let (repo, versions) = long_operator(2000, true);
    let last = repo.op("foo").join(&versions[1999]);
    let (f, _) = run(&last, &community_opts());
    for check in [
        "check_dangling_bundles",
        "check_upgrade_graph_loop",
        "check_replaces_availability",
    ] {
        assert!(of(&f, check).is_empty(), "{check}: {:?}", of(&f, check));
    }
    // The first version replaces the last: every version is on a loop.
    set_replaces(&repo, &versions[0], &format!("foo.v{}", versions[1999]));
    let (f, _) = run(&last, &community_opts());
    let loops = of(&f, "check_upgrade_graph_loop");
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert!(
        loops[0]
            .2
            .starts_with("Upgrade graph loop detected: Bundle(foo/0."),
        "{loops:?}"
    );

    // Without skipRanges a chain broken in the middle leaves one bundle dangling, told by
    // every bundle of the channel.
    let (repo, versions) = long_operator(2000, false);
    set_replaces(&repo, &versions[1000], "foo.v9.9.9");
    for v in [&versions[0], &versions[1000], &versions[1999]] {
        let (f, _) = run(&repo.op("foo").join(v), &community_opts());
        assert_eq!(
            of(&f, "check_dangling_bundles")
                .iter()
                .map(|x| x.2.as_str())
                .collect::<Vec<_>>(),
            [format!(
                "Channel stable has dangling bundles: {{Bundle(foo/{})}}",
                versions[999]
            )],
            "{v}"
        );
    }
    // The replaced version does not exist: the list of the 2,000 versions is cut.
    let (f, _) = run(&repo.op("foo").join(&versions[1000]), &community_opts());
    let missing = of(&f, "check_replaces_availability");
    assert_eq!(missing.len(), 1);
    let m = &missing[0].2;
    assert!(
        m.starts_with(&format!(
            "Bundle(foo/{}) attempts to replace version '9.9.9' which does not exist in the submitted PR branch. Available versions: ['0.0.0', '0.0.1', ",
            versions[1000]
        )) && m.len() < 4200
            && m.ends_with("before each submission to include all previously merged versions."),
        "{} bytes: {m}",
        m.len()
    );
}

#[test]
fn a_release_config_of_many_templates() {
    let mut rc = String::from("catalog_templates:\n");
    for i in 0..20_000 {
        rc.push_str(&format!(
            "- template_name: basic.yaml\n  channels: [c{i}]\n"
        ));
    }
    // One duplicate, at the end.
    rc.push_str("- template_name: basic.yaml\n  channels: [c0]\n");
    let repo = Repo::new(None);
    repo.ci(
        "foo",
        "reviewers: [a]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [v4.19]\n",
    );
    let b = repo.bundle(
        "foo",
        B {
            release_config: Some(&rc),
            ..B::default()
        },
    );
    let (f, _) = run(&b, &community_opts());
    assert!(of(&f, "check_bundle_release_config").is_empty(), "{f:?}");
    let schema = of(&f, "check_validate_schema_bundle_release_config");
    assert_eq!(schema.len(), 1);
    assert!(
        schema[0].2.starts_with(
            "Bundle's 'release-config.yaml' contains invalid data which does not comply with the schema: [{'template_name': 'basic.yaml', 'channels': ['c0']}, "
        ) && schema[0].2.len() < 500,
        "{}",
        schema[0].2
    );
    assert!(
        schema[0].2.ends_with(" bytes) has non-unique elements"),
        "{}",
        schema[0].2
    );
}
