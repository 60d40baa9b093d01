//! `opship init --from-operator-sdk` on the five real projects of `../shared/projects`: the
//! config it writes makes `opship generate bundle` give the bundle operator-sdk committed, up to
//! the differences docs/generate.md lists per project. The projects' Makefiles are not in the
//! data, so each test writes one in the shape kubebuilder scaffolds, with the variables the
//! data's README lists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use opship_core::bundle::semantic::Change;

use crate::{copy_dir, opship, run, shared_projects};

/// kubebuilder's Makefile head and `bundle` target.
fn makefile(version: &str, img: &str, tag_base: &str, extra: &str) -> String {
    format!(
        "VERSION ?= {version}\n{extra}\
ifneq ($(origin CHANNELS), undefined)\nBUNDLE_CHANNELS := --channels=$(CHANNELS)\nendif\n\
ifneq ($(origin DEFAULT_CHANNEL), undefined)\nBUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)\nendif\n\
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)\n\
IMAGE_TAG_BASE ?= {tag_base}\nBUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)\n\
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)\n\
USE_IMAGE_DIGESTS ?= false\nifeq ($(USE_IMAGE_DIGESTS), true)\n\tBUNDLE_GEN_FLAGS += --use-image-digests\nendif\n\
IMG ?= {img}\nKUSTOMIZE ?= bin/kustomize\nOPERATOR_SDK ?= bin/operator-sdk\n\n\
.PHONY: manifests kustomize operator-sdk\nmanifests kustomize operator-sdk:\n\n.PHONY: bundle\n\
bundle: manifests kustomize operator-sdk ## Generate bundle manifests and metadata, then validate generated files.\n\
\t$(OPERATOR_SDK) generate kustomize manifests -q\n\
\tcd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)\n\
\t$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)\n\
\t$(OPERATOR_SDK) bundle validate ./bundle\n"
    )
}

/// A copy of the project with its committed bundle moved to `committed/` (with the root
/// `bundle.Dockerfile`, where operator-sdk writes it, next to it).
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join(name);
    copy_dir(&shared_projects().join(name), &p);
    std::fs::rename(p.join("bundle"), p.join("committed")).unwrap();
    if p.join("bundle.Dockerfile").is_file() {
        std::fs::rename(
            p.join("bundle.Dockerfile"),
            p.join("committed/bundle.Dockerfile"),
        )
        .unwrap();
    }
    (t, p)
}

/// The real differences of `generated` against `committed`, as `± file path` lines.
fn differences(committed: &Path, generated: &Path) -> BTreeSet<String> {
    let d = opship_core::bundle::semantic_drift_dirs(committed, generated).unwrap();
    d.differences
        .iter()
        .filter(|x| !x.is_note())
        .map(|x| {
            let sign = match &x.change {
                Change::Added(_) => "+",
                Change::Removed(_) => "-",
                Change::Changed { .. } => "~",
                _ => "note",
            };
            format!("{sign} {} {}", x.file(), x.path)
        })
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn init_and_generate(dir: &Path, init: &[&str], config: &str) {
    let r = run(opship().current_dir(dir).arg("init").args(init));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(opship()
        .current_dir(dir)
        .args(["-c", config, "generate", "bundle"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

const CSV_MEMCACHED: &str = "manifests/memcached-operator.clusterserviceversion.yaml";

/// The three operator-sdk samples: only opship's documented additions (containerImage and
/// the operator image in relatedImages).
#[test]
fn operator_sdk_samples_reproduce_make_bundle() {
    for (name, extra) in [
        ("sdk-go-memcached", vec![]),
        ("sdk-go-monitoring-memcached", vec![]),
        // Its kustomization maps no image: `make bundle` was run with IMG on the command line.
        (
            "sdk-helm-memcached",
            vec!["--set", "IMG=quay.io/example/memcached-operator:v0.0.1"],
        ),
    ] {
        let (_t, p) = copy(name);
        std::fs::write(
            p.join("Makefile"),
            makefile(
                "0.0.1",
                "controller:latest",
                "example.com/memcached-operator",
                "",
            ),
        )
        .unwrap();
        // PROJECT is there: a plain `opship init` adopts it.
        init_and_generate(&p, &extra, "opship.yaml");
        assert_eq!(
            differences(&p.join("committed"), &p.join("bundle")),
            set(&[
                &format!("+ {CSV_MEMCACHED} metadata.annotations.containerImage"),
                &format!("+ {CSV_MEMCACHED} spec.relatedImages"),
            ]),
            "{name}"
        );
    }
}

/// argocd-operator: after the same label rewrite its Makefile applies to the bundle.
#[test]
fn argocd_operator_reproduces_make_bundle() {
    let (_t, p) = copy("argocd-operator");
    std::fs::write(
        p.join("Makefile"),
        makefile(
            "0.19.0",
            "$(IMAGE_TAG_BASE):v$(VERSION)",
            "quay.io/argoprojlabs/argocd-operator",
            "CHANNELS ?= alpha\n",
        ),
    )
    .unwrap();
    init_and_generate(&p, &["--from-operator-sdk"], "opship.yaml");
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(cfg.contains("replaces: argocd-operator.v0.18.0"), "{cfg}");
    for f in std::fs::read_dir(p.join("bundle/manifests")).unwrap() {
        let f = f.unwrap().path();
        let text = std::fs::read_to_string(&f).unwrap();
        std::fs::write(
            &f,
            text.replace(
                "control-plane: argocd-operator",
                "control-plane: controller-manager",
            ),
        )
        .unwrap();
    }
    let csv = "manifests/argocd-operator.clusterserviceversion.yaml";
    assert_eq!(
        differences(&p.join("committed"), &p.join("bundle")),
        set(&[
            &format!("+ {csv} metadata.annotations.containerImage"),
            &format!("+ {csv} spec.relatedImages"),
        ])
    );
}

/// opentelemetry-operator: two bundles from two kustomizations, each chosen with --manifests;
/// the base CSV is not in the build, so it becomes csvBase.
#[test]
fn opentelemetry_operator_reproduces_both_bundles() {
    let (_t, p) = copy("opentelemetry-operator");
    for variant in ["community", "openshift"] {
        let cfg = format!("opship-{variant}.yaml");
        let manifests = format!("config/manifests/{variant}");
        let r = run(opship().current_dir(&p).args([
            "init",
            "--from-operator-sdk",
            "--manifests",
            &manifests,
            "--path",
            &cfg,
            "--set",
            "VERSION=0.158.0",
            "--set",
            "IMG=ghcr.io/open-telemetry/opentelemetry-operator/opentelemetry-operator:0.158.0",
        ]));
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("csvBase"), "{}", r.stdout);
        // Two bundles of one project: each its own directory.
        let text = std::fs::read_to_string(p.join(&cfg)).unwrap();
        std::fs::write(
            p.join(&cfg),
            text.replace(
                "bundleDir: bundle\n",
                &format!("bundleDir: bundle/{variant}\n"),
            ),
        )
        .unwrap();
        let r = run(opship()
            .current_dir(&p)
            .args(["-c", &cfg, "generate", "bundle"]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let csv = "manifests/opentelemetry-operator.clusterserviceversion.yaml";
        let mut expected = vec![
            format!("~ {csv} metadata.annotations.containerImage"),
            format!("+ {csv} spec.relatedImages"),
            // The label its release scripts add to both bundles.
            "- bundle.Dockerfile LABEL[\"com.redhat.openshift.versions\"]".to_owned(),
            "- metadata/annotations.yaml annotations[\"com.redhat.openshift.versions\"]".to_owned(),
        ];
        if variant == "openshift" {
            // Added by hand to bundle/openshift/manifests, not in config/.
            for f in [
                "opentelemetry-operator-prometheus-rules_monitoring.coreos.com_v1_prometheusrule.yaml",
                "opentelemetry-operator-prometheus_rbac.authorization.k8s.io_v1_role.yaml",
                "opentelemetry-operator-prometheus_rbac.authorization.k8s.io_v1_rolebinding.yaml",
            ] {
                expected.push(format!("- manifests/{f} "));
            }
        }
        let got: BTreeSet<String> = differences(
            &p.join("committed").join(variant),
            &p.join("bundle").join(variant),
        )
        .into_iter()
        .map(|s| {
            if s.ends_with(' ') {
                s
            } else {
                s.trim_end().to_owned()
            }
        })
        .collect();
        let expected: BTreeSet<String> = expected.into_iter().collect();
        assert_eq!(got, expected, "{variant}");
    }
}

/// Bad input: each a clear error naming the file and line, exit 2, nothing written.
#[test]
fn bad_projects_are_refused_clearly() {
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(p.join("PROJECT"), "layout: [go\nprojectName: x\n").unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("PROJECT:"), "{}", r.stderr);
    assert!(!p.join("opship.yaml").exists());

    // An image built from a command that prints nothing (no git checkout here): refused with
    // the recipe's line, not written into the config.
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        "VERSION ?= 0.0.1\nGIT := $(shell git describe 2>/dev/null)\nIMG ?= quay.io/x/op:$(GIT)\n\
bundle:\n\tcd config/manager && kustomize edit set image controller=$(IMG)\n\
\tkustomize build config/manifests | operator-sdk generate bundle -q --version $(VERSION)\n",
    )
    .unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("Makefile:5") && r.stderr.contains("--set IMG="),
        "{}",
        r.stderr
    );
    assert!(!p.join("opship.yaml").exists());
    // Given as on make's command line, it is used.
    let r = run(opship().current_dir(&p).args([
        "init",
        "--from-operator-sdk",
        "--set",
        "IMG=quay.io/x/op:v0.0.1",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // An existing opship.yaml is kept without --force.
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
}

/// `init` on a copy of a real project; the config text and stdout.
fn init_real(name: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, crate::Run) {
    let (t, p) = copy(name);
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"])
        .args(args));
    (t, p, r)
}

/// Writes `makefile` into the project `p` and runs `init --from-operator-sdk ARGS` there.
fn init_with(p: &Path, makefile: &str, args: &[&str]) -> crate::Run {
    std::fs::write(p.join("Makefile"), makefile).unwrap();
    run(opship()
        .current_dir(p)
        .args(["init", "--from-operator-sdk"])
        .args(args))
}

/// Issue 25, faults 1 and 2 (gitops): the flags of the recipe's own `generate bundle` line,
/// from make's dry run, with the shell's quotes removed (`CHANNELS = "latest,gitops-1.8"`).
#[test]
fn recipe_line_flags_without_shell_quotes() {
    let (_t, p, r) = init_real("gitops", &["--set", "VERSION=1.8.0"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("channels:\n  - latest\n  - gitops-1.8\n")
            && cfg.contains("defaultChannel: latest\n"),
        "{cfg}"
    );
    assert!(cfg.contains("version: \"1.8.0\"\n"), "{cfg}");
    assert!(cfg.contains("Makefile:273: --channels"), "{cfg}");
    assert!(
        !cfg.contains("\"latest") && !cfg.contains("1.8\"\n  -"),
        "{cfg}"
    );
}

/// Issue 25, fault 1 (3scale): `--version $(BUNDLE_VERSION)` written in the recipe line wins
/// over VERSION (0.0.0 there, made 0.0.1 by an `ifeq`).
#[test]
fn recipe_line_version_is_used() {
    let (_t, p, r) = init_real("3scale", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(cfg.contains("version: 0.0.1"), "{cfg}");
    assert!(cfg.contains("Makefile:301: --version"), "{cfg}");
}

/// Issue 25, fault 5 (nhc): no plain `bundle` rule: an error listing the candidates, and
/// `--target bundle-k8s` reads that target with its prerequisite `bundle-base`.
#[test]
fn several_bundle_targets_are_chosen_with_target() {
    let (_t, p, r) = init_real("nhc", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("--target")
            && r.stderr.contains("bundle-k8s")
            && r.stderr.contains("bundle-ocp"),
        "{}",
        r.stderr
    );
    assert!(!p.join("opship.yaml").exists());
    let (_t, p, r) = init_real("nhc", &["--target", "bundle-k8s"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(cfg.contains("manifests: config/manifests/k8s\n"), "{cfg}");
    // `$(MAKE) add-community-edition-to-display-name` after generation is dry-run too: its
    // sed is read with its own line and the line that calls it.
    assert!(
        r.stdout.contains(
            "Makefile:343 (`make add-community-edition-to-display-name` at Makefile:387)"
        ),
        "{}",
        r.stdout
    );
    // That sed sets the CSV's display name: opship's `displayName` setting.
    assert!(
        cfg.contains("displayName: Node Health Check Operator - Community Edition\n"),
        "{cfg}"
    );
}

/// Issue 25, faults 8 and 9 (kmm, snr): with several `kustomize edit set image` lines the
/// operator's is `controller`'s, the others are named; a filter piped between kustomize and
/// operator-sdk is named.
#[test]
fn image_edits_and_filters_are_read_from_the_recipe() {
    let (_t, p, r) = init_real("kmm", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("image: quay.io/edge-infrastructure/kernel-module-management-operator\n"),
        "{cfg}"
    );
    assert!(
        r.stdout.contains("webhook-server") && r.stdout.contains("--extra-service-accounts"),
        "{}",
        r.stdout
    );
    // Every image edit runs, the operator's with the placeholder, the others as written.
    assert!(
        cfg.contains("controller=controller\n")
            && cfg.contains("webhook-server=quay.io/edge-infrastructure/kernel-module-management-webhook-server:"),
        "{cfg}"
    );
    // Fault 9: `| $(ENVSUBST) |` is run, with the release's operator image for `${IMG}`.
    let (_t, p, r) = init_real("snr", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("envsubst:\n  IMG: \"{operatorImage}\"\n"),
        "{cfg}"
    );
    assert!(r.stdout.contains("Makefile:309"), "{}", r.stdout);
    // Any other filter is named, not run.
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        "bundle:\n\tkustomize build config/manifests | sed s/a/b/ | operator-sdk generate bundle -q --version 0.0.1\n",
    )
    .unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("Makefile:2: the recipe pipes the build through `sed s/a/b/`"),
        "{}",
        r.stdout
    );
}

/// Issue 25, faults 3 and 13: a default version that is not a release version is listed, not
/// an error; an image built from the environment (`$(USER)` is not passed to make) is refused
/// with the recipe's line and the `--set` that gives it.
#[test]
fn per_release_versions_and_environment_values() {
    let recipe = "bundle:\n\tcd config/manager && kustomize edit set image controller=$(IMG)\n\
\tkustomize build config/manifests | operator-sdk generate bundle -q --version $(VERSION)\n";
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        format!("VERSION ?= main\nIMG ?= quay.io/x/op:v1\n{recipe}"),
    )
    .unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("`main` is not a release version") && r.stdout.contains("--version"),
        "{}",
        r.stdout
    );
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        format!("VERSION ?= 0.0.1\nIMG ?= quay.io/$(USER)/op:v1\n{recipe}"),
    )
    .unwrap();
    let r = run(opship()
        .current_dir(&p)
        .env("USER", "someone")
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("quay.io//op:v1")
            && r.stderr.contains("Makefile:4")
            && r.stderr.contains("--set IMG="),
        "{}",
        r.stderr
    );
    assert!(!p.join("opship.yaml").exists());
}

/// Issue 25, faults 3 and 4: make itself expands `$(call)`, `$(shell)` and `$(addprefix)` in
/// the values init reads (the old evaluator stopped at each, one variable per run); a value
/// that is not an image reference (a stray word from a broken line) is listed and left out.
#[test]
fn make_functions_in_values_are_expanded_by_make() {
    let (_t, p) = copy("sdk-go-memcached");
    let r = init_with(
        &p,
        "VERSION ?= 0.0.2\ndefine tag\nv$(1)\nendef\n\
IMAGE_TAG_BASE ?= $(addprefix quay.io/,example/op)\n\
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:$(call tag,$(VERSION))\n\
GIT_SHA := $(shell echo abc123)\n\
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-index:$(GIT_SHA) ifneq\n\
IMG ?= $(IMAGE_TAG_BASE):$(call tag,$(VERSION))\n\
bundle:\n\tcd config/manager && kustomize edit set image controller=$(IMG)\n\
\tkustomize build config/manifests | operator-sdk generate bundle -q --version $(VERSION)\n",
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("images.bundle: quay.io/example/op-bundle  <- Makefile:6 (BUNDLE_IMG)")
            && cfg.contains("operator: quay.io/example/op:v{version}")
            && cfg.contains("Makefile:8 (CATALOG_IMG): CATALOG_IMG `quay.io/example/op-index:abc123 ifneq` is not an image reference; not used"),
        "{cfg}"
    );
}

/// Issue 25, fault 6: `--overwrite=false` keeps an existing metadata/ as it is, so its
/// channels and labels are the bundle's; init reads them from the committed annotations.
#[test]
fn overwrite_false_keeps_the_committed_metadata() {
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::create_dir_all(p.join("bundle/metadata")).unwrap();
    std::fs::write(
        p.join("bundle/metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: memcached-operator\n  operators.operatorframework.io.bundle.channels.v1: stable,fast\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n  com.redhat.openshift.versions: v4.14\n",
    )
    .unwrap();
    let r = init_with(
        &p,
        "bundle:\n\tkustomize build config/manifests | operator-sdk generate bundle -q --overwrite=false --version 0.0.1 --channels alpha\n",
        &["--set", "IMG=quay.io/example/memcached-operator:v0.0.1"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("channels:\n  - stable\n  - fast\n")
            && cfg.contains("defaultChannel: stable\n")
            && cfg.contains("com.redhat.openshift.versions: v4.14\n")
            && cfg.contains("(kept by --overwrite=false)")
            && cfg.contains(
                "operator-sdk flag `--overwrite=false` keeps an existing metadata/annotations.yaml"
            ),
        "{cfg}"
    );
}

/// Issue 25, proof 3: hostile Makefiles. make failing and a variable that expands without end
/// are errors quoting make; a recipe that loops in `$(shell)` meets the deadline; nothing is
/// written.
#[test]
fn hostile_makefiles_are_bounded() {
    for (makefile, expect, env) in [
        (
            "bundle:\n\t$(error broken on purpose)\n",
            "broken on purpose",
            None,
        ),
        (
            "X = $(X)x\nbundle:\n\techo $(X)\n",
            "references itself",
            None,
        ),
        (
            "X := $(shell while :; do :; done)\nbundle:\n\techo\n",
            "did not finish within 2 s",
            Some("2"),
        ),
        (
            &*format!("bundle:\n\techo {}\n", "a".repeat(10_000_000)),
            "larger than",
            None,
        ),
    ] {
        let (_t, p) = copy("sdk-go-memcached");
        std::fs::write(p.join("Makefile"), makefile).unwrap();
        let mut c = opship();
        c.current_dir(&p).args(["init", "--from-operator-sdk"]);
        if let Some(t) = env {
            c.env("OPSHIP_CHILD_TIMEOUT", t);
        }
        let r = run(&mut c);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(expect), "{makefile}: {}", r.stderr);
        assert!(!p.join("opship.yaml").exists());
    }
    // No make on PATH: said so, naming the Makefile.
    let (t, p) = copy("sdk-go-memcached");
    std::fs::write(p.join("Makefile"), "bundle:\n\techo\n").unwrap();
    let empty = t.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let r = run(opship()
        .current_dir(&p)
        .env("PATH", &empty)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("needs GNU make on PATH"), "{}", r.stderr);
    assert!(!p.join("opship.yaml").exists());
}

/// One project with its real Makefile: how it is adopted and what remains different from the
/// bundle its `make bundle` committed (docs/generate.md lists each with its cause).
struct RealProject {
    name: &'static str,
    /// `init` arguments beyond `--from-operator-sdk`: only what the project cannot give itself.
    init: &'static [&'static str],
    /// `generate bundle --version`, where the Makefile's default is not a release version.
    version: Option<&'static str>,
    /// The remaining differences, `± file path` (files as the committed bundle names them).
    differences: &'static [&'static str],
}

/// Issue 25, proof 1: the projects of `../shared/projects` with their real Makefiles (all but
/// submariner, which has no committed bundle and whose make needs its Dapper image, and
/// grafana, whose committed bundle is older than its config: see
/// `grafana_runs_the_recipes_kustomize_edit`): `init` from the
/// project's own make dry run, `generate bundle` into the project's `bundle/` over the committed
/// one, then the semantic comparison with what `make bundle` committed.
#[test]
fn real_makefiles_reproduce_make_bundle() {
    const KMM: &str = "manifests/kernel-module-management.clusterserviceversion.yaml";
    const SNR: &str = "manifests/self-node-remediation.clusterserviceversion.yaml";
    const NHC: &str = "manifests/node-healthcheck-operator.clusterserviceversion.yaml";
    const GITOPS: &str = "manifests/gitops-operator.clusterserviceversion.yaml";
    const SCALE: &str = "manifests/3scale-operator.clusterserviceversion.yaml";
    const JAEGER: &str = "manifests/jaeger-operator.clusterserviceversion.yaml";
    let projects = [
        RealProject {
            name: "kmm",
            init: &[],
            version: None,
            differences: &[
                "+ {KMM} metadata.annotations.containerImage",
                "+ {KMM} spec.relatedImages[name=manager]",
                "+ {KMM} spec.relatedImages[name=webhook-server]",
            ],
        },
        RealProject {
            name: "snr",
            init: &[],
            version: None,
            differences: &["+ {SNR} spec.relatedImages"],
        },
        RealProject {
            name: "nhc",
            init: &["--target", "bundle-k8s"],
            version: None,
            differences: &[
                "~ {NHC} metadata.annotations.containerImage",
                "+ {NHC} spec.relatedImages",
            ],
        },
        RealProject {
            name: "gitops",
            // `IMG ?= $(IMAGE):$(VERSION)` with `VERSION ?= ""`: the image init asks for.
            init: &[
                "--set",
                "IMG=quay.io/redhat-developer/gitops-operator:latest",
            ],
            version: Some("1.8.0"),
            differences: &[
                "~ {GITOPS} metadata.annotations.containerImage",
                "+ {GITOPS} spec.relatedImages",
            ],
        },
        RealProject {
            name: "3scale",
            init: &[],
            version: None,
            differences: &[
                "~ {SCALE} metadata.annotations.containerImage",
                "+ {SCALE} spec.install.spec.deployments[name=threescale-operator-controller-manager-v2].label",
                "+ {SCALE} spec.relatedImages",
                "+ manifests/capabilities.3scale.net_applications.yaml spec.versions[name=v1beta1].schema.openAPIV3Schema.properties.spec.properties.accountCR.x-kubernetes-validations",
                "+ manifests/capabilities.3scale.net_backends.yaml spec.versions[name=v1beta1].schema.openAPIV3Schema.properties.spec.properties.systemName.x-kubernetes-validations",
            ],
        },
        RealProject {
            name: "jaeger",
            // `IMG ?= ${IMG_PREFIX}/…` with `IMG_PREFIX ?= quay.io/${USER}` and VERSION from
            // versions.txt, which the data does not hold: the image init asks for.
            init: &["--set", "IMG=quay.io/jaegertracing/jaeger-operator:1.65.0"],
            version: Some("1.65.0"),
            differences: &[
                "~ bundle.Dockerfile LABEL[\"operators.operatorframework.io.bundle.package.v1\"]",
                "~ metadata/annotations.yaml annotations[\"operators.operatorframework.io.bundle.package.v1\"]",
                "~ {JAEGER} metadata.annotations.containerImage",
                "+ {JAEGER} spec.relatedImages",
                "- tests/scorecard/config.yaml ",
            ],
        },
    ];
    for project in projects {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(project.name);
        copy_dir(&shared_projects().join(project.name), &p);
        copy_dir(&p.join("bundle"), &p.join("committed"));
        std::fs::copy(
            p.join("bundle.Dockerfile"),
            p.join("committed/bundle.Dockerfile"),
        )
        .unwrap();
        if !project.init.is_empty() && project.init[0] == "--set" {
            // The value can only come from the environment: init asks for exactly this.
            let r = run(opship()
                .current_dir(&p)
                .args(["init", "--from-operator-sdk"]));
            assert_eq!(r.code, 2, "{}: {}{}", project.name, r.stdout, r.stderr);
            let asked = project.init[1].split('=').next().unwrap();
            assert!(
                r.stderr.contains(&format!("--set {asked}=<image>")),
                "{}: {}",
                project.name,
                r.stderr
            );
            assert!(!p.join("opship.yaml").exists());
        }
        let r = run(opship()
            .current_dir(&p)
            .args(["init", "--from-operator-sdk"])
            .args(project.init));
        assert_eq!(r.code, 0, "{}: {}{}", project.name, r.stdout, r.stderr);
        if project.name == "jaeger" {
            // Fault 4: make expands `$(addprefix)` and `$(shell)` itself; a value the bundle
            // does not need that is built from the environment is named with what it lacks,
            // not fatal. Its Makefile includes tests/e2e/Makefile, which the data does not
            // hold: read as empty, and said so.
            assert!(
                r.stdout.contains("Makefile:28 (BUNDLE_IMG): BUNDLE_IMG `quay.io//jaeger-operator-bundle:v` is built from `USER`")
                    && r.stdout.contains("Makefile:1 includes `tests/e2e/Makefile`, which is missing")
                    && r.stdout.matches("tests/e2e/Makefile").count() == 1,
                "{}",
                r.stdout
            );
        }
        let mut generate = opship();
        generate.current_dir(&p).args(["generate", "bundle"]);
        if let Some(v) = project.version {
            generate.args(["--version", v]);
        }
        let r = run(&mut generate);
        assert_eq!(r.code, 0, "{}: {}", project.name, r.stderr);
        let expected: BTreeSet<String> = project
            .differences
            .iter()
            .map(|d| {
                d.replace("{KMM}", KMM)
                    .replace("{SNR}", SNR)
                    .replace("{NHC}", NHC)
                    .replace("{GITOPS}", GITOPS)
                    .replace("{SCALE}", SCALE)
                    .replace("{JAEGER}", JAEGER)
            })
            .collect();
        assert_eq!(
            differences(&p.join("committed"), &p.join("bundle")),
            expected,
            "{}",
            project.name
        );
    }
}

/// Issue 25, fault 12: a `kustomize build` that fails during init (a resource the
/// kustomization names is missing) is an error with kustomize's message, not a config without
/// `csvBase`; nothing is written.
#[test]
fn failed_kustomize_build_stops_init() {
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        makefile(
            "0.0.1",
            "controller:latest",
            "example.com/memcached-operator",
            "",
        ),
    )
    .unwrap();
    let k = p.join("config/manifests/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("resources:\n", "resources:\n- ../gone\n")).unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("kustomize build")
            && r.stderr.contains("config/manifests")
            && r.stderr.contains("gone"),
        "{}",
        r.stderr
    );
    assert!(!p.join("opship.yaml").exists());
}

/// Issue 25, fault 7 (grafana): the recipe's `cd config/manager && kustomize edit set image
/// controller=$(IMG)` is run by kustomize on a copy of the kustomizations (the project is not
/// edited), so the build is the recipe's: its samples (a `GrafanaNotificationTemplate` that a
/// build-wide `images:` breaks on) reach `alm-examples` unchanged and the manager runs the
/// operator image. The committed bundle (5.9.2, made by `bundle/redhat` with image digests) is
/// older than `config/`, so it is compared by reading: generated as 5.9.2, the metadata differ
/// only by the label `hack/add-openshift-annotations.sh` appends, and the CSV outside what
/// `config/` changed since (CRDs, RBAC, the deployment, images pinned to digests) not at all.
#[test]
fn grafana_runs_the_recipes_kustomize_edit() {
    const CSV: &str = "manifests/grafana-operator.clusterserviceversion.yaml";
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("grafana");
    let shared = shared_projects().join("grafana");
    copy_dir(&shared, &p);
    copy_dir(&p.join("bundle"), &p.join("committed"));
    std::fs::copy(
        p.join("bundle.Dockerfile"),
        p.join("committed/bundle.Dockerfile"),
    )
    .unwrap();
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("kustomizeEdits:\n  - args:\n      - set\n      - image\n      - controller=controller\n    dir: config/manager\n"),
        "{cfg}"
    );
    assert!(r.stdout.contains("Makefile:257"), "{}", r.stdout);
    let r = run(opship()
        .current_dir(&p)
        .args(["generate", "bundle", "--version", "5.9.2"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The project's kustomizations are as they were.
    for f in [
        "config/manager/kustomization.yaml",
        "config/manifests/kustomization.yaml",
    ] {
        assert_eq!(
            std::fs::read(p.join(f)).unwrap(),
            std::fs::read(shared.join(f)).unwrap(),
            "{f}"
        );
    }
    let csv: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(p.join("bundle").join(CSV)).unwrap())
            .unwrap();
    let manager = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
        [0];
    assert_eq!(manager["name"], "manager");
    assert_eq!(manager["image"], "ghcr.io/grafana/grafana-operator:v5.9.2");
    // Every sample as `kustomize build config/samples` gives it: no image override reached it.
    let built = std::process::Command::new("kustomize")
        .args(["build", "config/samples"])
        .current_dir(&shared)
        .output()
        .unwrap();
    assert!(built.status.success());
    let built = opship_core::manifest::parse_objects(
        &String::from_utf8(built.stdout).unwrap(),
        Path::new("samples"),
    )
    .unwrap();
    let examples: Vec<serde_json::Value> = serde_json::from_str(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let mut samples = 0;
    for sample in &built {
        assert!(
            examples.contains(sample.value()),
            "{} rewritten",
            sample.value()["kind"]
        );
        samples += 1;
    }
    assert_eq!(samples, 11);
    let d = differences(&p.join("committed"), &p.join("bundle"));
    let outside_config: BTreeSet<String> = d
        .iter()
        .filter(|x| {
            !x.contains(" manifests/")
                || x.contains(CSV)
                    && ![
                        "spec.install.",
                        "spec.customresourcedefinitions.",
                        "spec.relatedImages",
                        "metadata.annotations.alm-examples",
                        "metadata.annotations.containerImage",
                    ]
                    .iter()
                    .any(|k| x.contains(&format!("{CSV} {k}")))
        })
        .cloned()
        .collect();
    assert_eq!(
        outside_config,
        set(&[
            "- bundle.Dockerfile LABEL[\"com.redhat.openshift.versions\"]",
            "- metadata/annotations.yaml annotations[\"com.redhat.openshift.versions\"]",
        ])
    );
}

/// Issue 25, fault 7: the recipe's other `kustomize edit` commands (`add label`, `set
/// nameprefix`) are run too, in their directories and in order, on a copy: the bundle is what
/// the recipe's build gives, and the project's kustomizations are not edited.
#[test]
fn every_kustomize_edit_of_the_recipe_is_run_on_a_copy() {
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        "VERSION ?= 0.0.1\nIMG ?= quay.io/example/memcached-operator:v$(VERSION)\nKUSTOMIZE ?= bin/kustomize-v5.8.0\n\
bundle:\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG) helper=quay.io/example/helper:v$(VERSION) && $(KUSTOMIZE) edit add label team:storage\n\
\tcd config/default && $(KUSTOMIZE) edit set nameprefix memcached-x-\n\
\t$(KUSTOMIZE) build config/manifests | operator-sdk generate bundle -q --version $(VERSION)\n",
    )
    .unwrap();
    let before: Vec<Vec<u8>> = ["config/manager", "config/default"]
        .iter()
        .map(|d| std::fs::read(p.join(d).join("kustomization.yaml")).unwrap())
        .collect();
    init_and_generate(&p, &["--from-operator-sdk"], "opship.yaml");
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("      - add\n      - label\n      - team:storage\n    dir: config/manager\n"),
        "{cfg}"
    );
    // An image tag holding the version follows the release.
    assert!(
        cfg.contains(
            "      - controller=controller\n      - helper=quay.io/example/helper:v{version}\n"
        ),
        "{cfg}"
    );
    let csv: serde_json::Value = serde_saphyr::from_str(
        &std::fs::read_to_string(p.join("bundle").join(CSV_MEMCACHED)).unwrap(),
    )
    .unwrap();
    let deployment = &csv["spec"]["install"]["spec"]["deployments"][0];
    assert_eq!(deployment["name"], "memcached-x-controller-manager");
    let pod = &deployment["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"]["team"], "storage", "{pod}");
    assert_eq!(
        pod["spec"]["containers"][0]["image"],
        "quay.io/example/memcached-operator:v0.0.1"
    );
    for (d, b) in ["config/manager", "config/default"].iter().zip(before) {
        assert_eq!(
            std::fs::read(p.join(d).join("kustomization.yaml")).unwrap(),
            b,
            "{d}"
        );
    }
}

/// Issue 25, fault 6: the recipe's `sed -i`/`yq -i` edits of the bundle that opship has a
/// setting for (`olm.skipRange`, `replaces`, a bundle label, `displayName`) become those
/// settings, and `generate` gives what the edits gave; any other edit (a CSV annotation, a
/// file copied into `manifests/`: opship has no setting for them) stays listed with its
/// Makefile:LINE.
#[test]
fn recipe_edits_with_a_setting_become_settings() {
    let (_t, p) = copy("sdk-go-memcached");
    std::fs::write(
        p.join("Makefile"),
        "CSV = bundle/manifests/memcached-operator.clusterserviceversion.yaml\n\
bundle:\n\tkustomize build config/manifests | operator-sdk generate bundle -q --version 0.0.2\n\
\tsed -r -i \"s|olm.skipRange: .*|olm.skipRange: '>=0.0.1 <0.0.2'|;\" $(CSV)\n\
\tsed -i \"/  version: 0.0.2/ a\\  replaces: memcached-operator.v0.0.1\" $(CSV)\n\
\tsed -i 's/com.redhat.openshift.versions: .*/com.redhat.openshift.versions: v4.12/' bundle/metadata/annotations.yaml\n\
\tsed -i 's/Memcached/Cached/' $(CSV)\n\
\tyq -i '.spec.displayName = \"Memcached CE\"' $(CSV)\n\
\tyq -i '.metadata.annotations.\"features.operators.openshift.io/disconnected\" = \"true\"' $(CSV)\n\
\tcp extra.yaml bundle/manifests/\n\
\tcd config && cp -v prometheus/rule.yaml ../bundle/manifests/rule.yaml\n\
\tcp made-by-a-script.yaml bundle/manifests/\n\
\tcp -r config/more bundle/manifests/\n\
\tyq -i '.metadata.annotations.x |= \"y\"' $(CSV)\n",
    )
    .unwrap();
    std::fs::write(
        p.join("extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: \"v\"   # kept as written\n",
    )
    .unwrap();
    std::fs::create_dir_all(p.join("config/prometheus")).unwrap();
    std::fs::write(
        p.join("config/prometheus/rule.yaml"),
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: rules\nspec:\n  groups: []\n",
    )
    .unwrap();
    init_and_generate(&p, &["--from-operator-sdk"], "opship.yaml");
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    assert!(
        cfg.contains("com.redhat.openshift.versions: v4.12\n")
            && cfg.contains("replaces: memcached-operator.v0.0.1\n")
            && cfg.contains("skipRange: \">=0.0.1 <0.0.2\"\n"),
        "{cfg}"
    );
    assert!(
        cfg.contains("Makefile:7: the recipe runs `sed -i 's/Memcached/Cached/'")
            && cfg.contains("Makefile:12: the recipe copies `made-by-a-script.yaml` into the bundle's manifests/; it is not a file of the project")
            && cfg.contains("Makefile:13: the recipe runs `cp -r config/more bundle/manifests/`")
            && cfg.contains("Makefile:14: the recipe runs `yq -i '.metadata.annotations.x |= \"y\"'"),
        "{cfg}"
    );
    // CSV annotations and files copied into manifests/ become settings.
    assert!(
        cfg.contains("csvAnnotations:\n  features.operators.openshift.io/disconnected: \"true\"\n")
            && cfg.contains("extraManifests:\n  - extra.yaml\n  - config/prometheus/rule.yaml\n"),
        "{cfg}"
    );
    assert_eq!(
        std::fs::read(p.join("bundle/manifests/extra.yaml")).unwrap(),
        std::fs::read(p.join("extra.yaml")).unwrap()
    );
    assert!(p.join("bundle/manifests/rule.yaml").is_file());
    assert!(cfg.contains("displayName: Memcached CE\n"), "{cfg}");
    let csv = std::fs::read_to_string(p.join("bundle").join(CSV_MEMCACHED)).unwrap();
    assert!(
        csv.contains("olm.skipRange: \">=0.0.1 <0.0.2\"")
            && csv.contains("features.operators.openshift.io/disconnected: \"true\"")
            && csv.contains("replaces: memcached-operator.v0.0.1")
            && csv.contains("\n  displayName: Memcached CE\n"),
        "{csv}"
    );
    let annotations = std::fs::read_to_string(p.join("bundle/metadata/annotations.yaml")).unwrap();
    assert!(
        annotations.contains("com.redhat.openshift.versions: v4.12"),
        "{annotations}"
    );
}

/// submariner (no committed bundle): its make runs the recipe in the Dapper image unless
/// `DAPPER_HOST_ARCH` is set; with the values its Dapper image would give (shipyard's
/// `Makefile.inc`, not in the data, is read as empty and listed; `IS_SEMANTIC_VERSION` is
/// computed with bash's `[[`, which make's `/bin/sh` lacks), init reads the recipe: the
/// `$(CURDIR)` build directory as the project's `config/manifests`, the post-generation
/// `sed -i 's/$(VERSION)/…/g'` as `csvSubstitutions`, the `kustomize edit` of `config/bundle`
/// (built after generation) listed, not run. The bundle generates and validates, each
/// `RELATED_IMAGE_` entry listed once although a container has its name (fault 10).
#[test]
fn submariner_generates_with_dappers_values() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("submariner");
    copy_dir(&shared_projects().join("submariner"), &p);
    // As it is, make would download `Makefile.dapper` even for a dry run: init refuses to run
    // that rule, says so, and reads on without it.
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("make would remake the included makefile `Makefile.dapper` with `curl -sfLO https://raw.githubusercontent.com/submariner-io/shipyard/devel/Makefile.dapper`; opship's dry run refused it")
            && r.stdout.contains("pass --run-make to let make run it"),
        "{}",
        r.stdout
    );
    assert!(!p.join("Makefile.dapper").exists());
    std::fs::remove_file(p.join("opship.yaml")).unwrap();
    // With --run-make, make downloads it; without network (as on this machine) that fails,
    // and init says what to give instead.
    let r = run(opship()
        .current_dir(&p)
        .args(["init", "--from-operator-sdk", "--run-make"]));
    if p.join("Makefile.dapper").exists() {
        let _ = std::fs::remove_file(p.join("opship.yaml"));
    } else {
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(
            r.stderr
                .contains("make could not make `Makefile.dapper`, which Makefile:250 includes")
                && r.stderr.contains("--set VAR=VALUE"),
            "{}",
            r.stderr
        );
        assert!(!p.join("opship.yaml").exists());
    }
    let r = run(opship().current_dir(&p).args([
        "init",
        "--from-operator-sdk",
        "--set",
        "DAPPER_HOST_ARCH=amd64",
        "--set",
        "SHIPYARD_DIR=../shipyard",
        "--set",
        "VERSION=0.15.0",
        "--set",
        "IS_SEMANTIC_VERSION=true",
    ]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
    for want in [
        "manifests: config/manifests\n",
        "csvSubstitutions:\n  - from: $(SHORT_VERSION)\n    to: \"0.15\"\n  - from: $(VERSION)\n    to: \"{version}\"\n",
        "channels:\n  - alpha-0.15\n",
        "Makefile:44 includes `../shipyard/Makefile.inc`, which is missing",
        "Makefile:194: the recipe runs `kustomize edit add resource ../../bundle/manifests/submariner.clusterserviceversion.yaml` in config/bundle, which the build of config/manifests does not read",
        "Makefile:195: the recipe runs `",
        "Makefile:184: the prerequisite `kustomization` runs `sed -e",
    ] {
        assert!(cfg.contains(want), "{want}\n{cfg}");
    }
    let r = run(opship().current_dir(&p).args(["generate", "bundle"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv: serde_json::Value = serde_saphyr::from_str(
        &std::fs::read_to_string(p.join("bundle/manifests/submariner.clusterserviceversion.yaml"))
            .unwrap(),
    )
    .unwrap();
    let text = csv.to_string();
    assert!(!text.contains("$(VERSION)") && !text.contains("$(SHORT_VERSION)"));
    assert!(
        text.contains("--branch release-0.15 "),
        "the base CSV's text"
    );
    let related: Vec<(String, String)> = csv["spec"]["relatedImages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["image"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        related
            .iter()
            .filter(|(n, _)| n == "submariner-operator")
            .collect::<Vec<_>>(),
        [&(
            "submariner-operator".to_owned(),
            "quay.io/submariner/submariner-operator:0.15.0".to_owned()
        )]
    );
    let r = run(opship()
        .current_dir(&p)
        .args(["validate", "bundle", "bundle"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The project's kustomizations are not edited.
    assert_eq!(
        std::fs::read(p.join("config/manifests/kustomization.yaml")).unwrap(),
        std::fs::read(shared_projects().join("submariner/config/manifests/kustomization.yaml"))
            .unwrap()
    );
}

/// Issue 25, faults 1 and 5: operator-sdk's directory flags (`--deploy-dir`, `--crds-dir`,
/// `--kustomize-dir`) are honoured when nothing is piped in and `--input-dir` is named; a
/// `bundle` whose prerequisites each generate a bundle, or that generates none while other
/// targets do, is an error that lists the targets to choose from.
#[test]
fn directory_flags_and_ambiguous_bundle_targets() {
    let (_t, p) = copy("sdk-go-memcached");
    let deploy = p.join("deploy");
    std::fs::create_dir_all(deploy.join("crds")).unwrap();
    for e in std::fs::read_dir(p.join("config/crd/bases")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), deploy.join("crds").join(e.file_name())).unwrap();
    }
    std::fs::copy(
        p.join("config/manager/manager.yaml"),
        deploy.join("manager.yaml"),
    )
    .unwrap();
    for f in ["role.yaml", "role_binding.yaml", "service_account.yaml"] {
        std::fs::copy(p.join("config/rbac").join(f), deploy.join(f)).unwrap();
    }
    std::fs::create_dir_all(p.join("config/custom")).unwrap();
    std::fs::rename(
        p.join("config/manifests/bases"),
        p.join("config/custom/bases"),
    )
    .unwrap();
    let r = init_with(
        &p,
        "bundle:\n\toperator-sdk generate bundle -q --version 0.0.2 --deploy-dir deploy --crds-dir deploy/crds --kustomize-dir config/custom --input-dir bundle\n",
        &["--set", "IMG=quay.io/example/memcached-operator:v0.0.2"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("manifests: deploy  (Makefile:2: --deploy-dir)")
            && r.stdout.contains("(base CSV): config/custom/bases/memcached-operator.clusterserviceversion.yaml  (Makefile:2: --kustomize-dir)")
            && r.stdout.contains("`--input-dir` reads an existing bundle"),
        "{}",
        r.stdout
    );
    let r = run(opship().current_dir(&p).args(["generate", "bundle"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(p.join("bundle").join(CSV_MEMCACHED)).unwrap();
    assert!(
        csv.contains("image: quay.io/example/memcached-operator:v0.0.2")
            && csv.contains("kind: Memcached"),
        "{csv}"
    );

    // Two bundles from one target, into two directories.
    std::fs::remove_file(p.join("opship.yaml")).unwrap();
    std::fs::rename(
        p.join("config/custom/bases"),
        p.join("config/manifests/bases"),
    )
    .unwrap();
    let r = init_with(
        &p,
        "bundle: bundle-k8s bundle-ocp\nbundle-k8s:\n\tkustomize build config/manifests | operator-sdk generate bundle -q\nbundle-ocp:\n\tkustomize build config/manifests | operator-sdk generate bundle -q --channels ocp --output-dir bundle-ocp\n",
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("runs `operator-sdk generate bundle` 2 times into 2 directories (Makefile:3 in `bundle-k8s` into bundle, Makefile:5 in `bundle-ocp` into bundle-ocp)")
            && r.stderr.contains("--target bundle-k8s or --target bundle-ocp"),
        "{}",
        r.stderr
    );
    assert!(!p.join("opship.yaml").exists());
    // Into one directory, the last one's bundle is what `make bundle` leaves.
    let r = init_with(
        &p,
        "bundle: bundle-k8s bundle-ocp\nbundle-k8s:\n\tkustomize build config/manifests | operator-sdk generate bundle -q\nbundle-ocp:\n\tkustomize build config/manifests | operator-sdk generate bundle -q --channels ocp\n",
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("channels: ocp  (Makefile:5: --channels)")
            && r.stdout.contains("Makefile:3: `bundle-k8s` runs an earlier `operator-sdk generate bundle`, whose bundle the one at Makefile:5 replaces"),
        "{}",
        r.stdout
    );
    std::fs::remove_file(p.join("opship.yaml")).unwrap();

    // A `bundle` that makes none, other targets that do.
    let r = init_with(
        &p,
        "bundle:\n\techo nothing here\nbundle-hub:\n\tkustomize build config/manifests | operator-sdk generate bundle -q\nbundle-build:\n\techo docker build\n",
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr
            .contains("but these targets do: bundle-hub; choose one with --target"),
        "{}",
        r.stderr
    );
}

/// Issue 33, item 5: `init` (plain, in a directory with `PROJECT`) runs nothing of the
/// Makefile but what make evaluates to read it (`$(shell …)`, `$(file …)`, `$(eval …)`, listed
/// as such): no recipe line marked `+` or holding `$(MAKE)`/`${MAKE}`, in the bundle target,
/// its prerequisites or its sub-makes, and no rule remaking an included makefile, also when a
/// target or a pattern sets its own SHELL or the Makefile overrides SHELL or MAKE. With
/// `--run-make` they run, each named in a warning first, and the report says they ran.
#[test]
fn init_runs_no_recipe_unless_run_make() {
    let (_t, p) = copy("sdk-go-memcached");
    let m = p.join("markers");
    std::fs::create_dir(&m).unwrap();
    let m = m.display().to_string();
    let makefile = format!(
        "override SHELL := /bin/sh\n.SHELLFLAGS = -ec\nM = {m}\n\
VERSION := $(shell echo 0.0.1)\n$(eval CHANNEL := alpha)\n$(file >$(M)/evaluated-file,x)\n\
include gen.mk\n-include opt.mk\n\
gen.mk:\n\ttouch $(M)/include-gen\n\techo 'GEN = 1' > $@\n\
%.mk: SHELL = /bin/bash\nopt.mk:\n\t+touch $(M)/include-opt\n\
.PHONY: bundle pre post other\n\
bundle: pre other\n\
\t+touch $(M)/bundle-plus\n\
\t$(MAKE) post && touch $(M)/bundle-make\n\
\t$(MAKE) post\n\
\t${{MAKE}} other; touch $(M)/bundle-make-braces\n\
\toperator-sdk generate kustomize manifests -q\n\
\tkustomize build config/manifests | operator-sdk generate bundle -q --overwrite --version $(VERSION)\n\
pre: SHELL := /bin/bash\npre:\n\t+touch $(M)/pre-plus\n\t@$(MAKE) -s post; touch $(M)/pre-make\n\
post:\n\t+touch $(M)/sub-plus\n\techo post\n\
other: override MAKE := make\nother:\n\t$(MAKE) --version >/dev/null && touch $(M)/sub-override-make\n"
    );
    std::fs::write(p.join("Makefile"), &makefile).unwrap();
    let markers = |m: &str| -> BTreeSet<String> {
        std::fs::read_dir(m)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let r = run(opship().current_dir(&p).arg("init"));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Only what make evaluates to read the Makefile ran: `$(file …)`.
    assert_eq!(markers(&m), set(&["evaluated-file"]), "{}", r.stdout);
    assert!(!p.join("gen.mk").exists() && !p.join("opt.mk").exists());
    // Listed: what make evaluated, and each command as not run (by make either).
    for want in [
        "Makefile: make evaluated `$(shell …)` at line 4; `$(eval …)` at line 5; `$(file …)` at line 6",
        "Makefile:10: make would remake the included makefile `gen.mk` with `touch ",
        "Makefile:14: make would remake the included makefile `opt.mk` with `touch ",
        "the recipe runs `touch ",
        "pre-plus` before generation; opship does not run it",
    ] {
        assert!(r.stdout.contains(want), "{want}\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("make ran it"), "{}", r.stdout);
    assert!(!r.stderr.contains("--run-make:"), "{}", r.stderr);
    let report = r.stdout;

    // --run-make: each runs, named in a warning first.
    std::fs::remove_file(p.join("opship.yaml")).unwrap();
    std::fs::remove_file(p.join("markers/evaluated-file")).unwrap();
    let r = run(opship().current_dir(&p).args(["init", "--run-make"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let ran = markers(&m);
    for name in [
        "bundle-plus",
        "bundle-make",
        "bundle-make-braces",
        "pre-plus",
        "pre-make",
        "sub-plus",
        "include-gen",
        "include-opt",
        "sub-override-make",
    ] {
        assert!(ran.contains(name), "{name} not run: {ran:?}");
        assert!(
            r.stderr.contains("--run-make:") && r.stderr.contains(&format!("/{name}")),
            "{name} not named in a warning: {}",
            r.stderr
        );
    }
    // The report never says "not run" of what ran.
    for l in r
        .stdout
        .lines()
        .filter(|l| l.contains("opship does not run it"))
    {
        if l.contains(&m) {
            assert!(l.contains("make ran it in its dry run (--run-make)"), "{l}");
        }
    }
    assert!(
        r.stdout.contains("make ran, with --run-make: `touch "),
        "{}",
        r.stdout
    );
    assert_ne!(report, r.stdout);
}

/// Issue 33, item 12: an upper-case placeholder as IMG (`REPLACE_IMAGE` and other spellings),
/// which make, kustomize and operator-sdk pass through into the bundle, is adopted as no image
/// chosen: the recipe's edit writes it into the manifests as it is, `generate` writes it as
/// operator-sdk does, and the report says so. A value that is no reference and no placeholder
/// is refused citing IMG's own line, without guessing at an environment variable.
#[test]
fn upper_case_image_placeholders_pass_through() {
    for img in [
        "REPLACE_IMAGE",
        "OPERATOR_IMAGE_PLACEHOLDER",
        "IMG-REPLACE-ME:latest",
    ] {
        let (_t, p) = copy("sdk-go-memcached");
        let r = init_with(
            &p,
            &makefile("0.0.1", img, "example.com/memcached-operator", ""),
            &[],
        );
        assert_eq!(r.code, 0, "{img}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout
                .contains(&format!("the operator image `{img}` is a placeholder")),
            "{img}: {}",
            r.stdout
        );
        let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
        assert!(
            cfg.contains(&format!("set image controller={img}")) && !cfg.contains("\noperator:"),
            "{img}: {cfg}"
        );
        let r = run(opship()
            .current_dir(&p)
            .args(["-c", "opship.yaml", "generate", "bundle"]));
        assert_eq!(r.code, 0, "{img}: {}", r.stderr);
        let csv = std::fs::read_to_string(p.join(format!("bundle/{CSV_MEMCACHED}"))).unwrap();
        // kustomize keeps the manifests' tag (`controller:latest`) unless the name has one.
        let want = if img.contains(':') {
            img.to_owned()
        } else {
            format!("{img}:latest")
        };
        assert!(csv.contains(&format!("image: {want}\n")), "{img}: {csv}");
    }
    // Not a placeholder, not a reference: IMG's own line, no speculation.
    let (_t, p) = copy("sdk-go-memcached");
    let r = init_with(
        &p,
        &makefile(
            "0.0.1",
            "Quay.io/Acme/Op:v1",
            "example.com/memcached-operator",
            "",
        ),
        &[],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("Makefile:16 (IMG), through the kustomize edit set image at Makefile:")
            && r.stderr.contains("must be lower-case")
            && !r.stderr.contains("environment variable"),
        "{}",
        r.stderr
    );
}

/// Issue 33, item 11: a kustomization that maps the placeholder name to an image of its own
/// (a webhook backend built from `controller`) keeps it; only the kustomization the recipe's
/// `kustomize edit set image controller=…` edits carries the operator's image.
#[test]
fn other_placeholder_mappings_keep_their_image() {
    for (new_name, new_tag, want) in [
        (
            "quay.io/acme/admission",
            Some("main"),
            "quay.io/acme/admission:main",
        ),
        (
            "ghcr.io/acme/hook-backend",
            None,
            "ghcr.io/acme/hook-backend:latest",
        ),
    ] {
        let (_t, p) = copy("sdk-go-memcached");
        let backend = p.join("config/backend");
        std::fs::create_dir_all(&backend).unwrap();
        std::fs::write(
            backend.join("deployment.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: hook-backend\n  namespace: system\nspec:\n  selector:\n    matchLabels:\n      app: hook-backend\n  template:\n    metadata:\n      labels:\n        app: hook-backend\n    spec:\n      containers:\n      - name: backend\n        image: controller:latest\n",
        )
        .unwrap();
        std::fs::write(
            backend.join("kustomization.yaml"),
            format!(
                "resources:\n- deployment.yaml\nimages:\n- name: controller\n  newName: {new_name}\n{}",
                new_tag.map(|t| format!("  newTag: {t}\n")).unwrap_or_default()
            ),
        )
        .unwrap();
        let manifests = p.join("config/manifests/kustomization.yaml");
        let text = std::fs::read_to_string(&manifests).unwrap();
        std::fs::write(
            &manifests,
            text.replace("- ../default\n", "- ../default\n- ../backend\n"),
        )
        .unwrap();
        let r = init_with(
            &p,
            &makefile(
                "0.0.1",
                "quay.io/acme/memcached-operator:v0.0.1",
                "quay.io/acme/memcached-operator",
                "",
            ),
            &[],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let r = run(opship()
            .current_dir(&p)
            .args(["-c", "opship.yaml", "generate", "bundle"]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let csv: serde_json::Value = serde_saphyr::from_str(
            &std::fs::read_to_string(p.join(format!("bundle/{CSV_MEMCACHED}"))).unwrap(),
        )
        .unwrap();
        let mut images = BTreeSet::new();
        for d in csv["spec"]["install"]["spec"]["deployments"]
            .as_array()
            .unwrap()
        {
            for c in d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
            {
                images.insert(format!(
                    "{}/{}",
                    d["name"].as_str().unwrap(),
                    c["image"].as_str().unwrap()
                ));
            }
        }
        assert_eq!(
            images,
            set(&[
                &format!("hook-backend/{want}"),
                "memcached-operator-controller-manager/quay.io/acme/memcached-operator:v0.0.1",
            ]),
            "{new_name}"
        );
    }
}

/// Issue 33, item 14: a default channel kept from the committed metadata (`--manifests` alone,
/// `--overwrite=false`) is not also reported missing.
#[test]
fn a_kept_default_channel_is_not_reported_missing() {
    for (flags, default) in [("--manifests", "stable-v2"), ("--overwrite=false", "fast")] {
        let (_t, p) = copy("sdk-go-memcached");
        std::fs::create_dir_all(p.join("bundle/metadata")).unwrap();
        std::fs::write(
            p.join("bundle/metadata/annotations.yaml"),
            format!("annotations:\n  operators.operatorframework.io.bundle.package.v1: memcached-operator\n  operators.operatorframework.io.bundle.channels.v1: {default},beta\n  operators.operatorframework.io.bundle.channel.default.v1: {default}\n"),
        )
        .unwrap();
        let r = init_with(
            &p,
            &format!(
                "bundle:\n\tkustomize build config/manifests | operator-sdk generate bundle -q {flags} --version 0.0.1\n"
            ),
            &["--set", "IMG=quay.io/acme/memcached-operator:v0.0.1"],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let cfg = std::fs::read_to_string(p.join("opship.yaml")).unwrap();
        assert!(
            cfg.contains(&format!("defaultChannel: {default}\n")),
            "{cfg}"
        );
        assert!(
            !cfg.contains("no default channel") && !r.stdout.contains("no default channel"),
            "{flags}: {cfg}\n{}",
            r.stdout
        );
    }
}
