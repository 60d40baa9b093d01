//! `opship push | pull | inspect | tags | login` against a real registry: Debian's
//! `docker-registry` (distribution 2.8.2) on a loopback port, with `skopeo` as the independent
//! client. A missing tool fails the test (scripts/test installs docker-registry, apache2-utils
//! and skopeo).

use crate::support_registry::{
    TestRegistry, build, isolated, json, ok, run_stdin, skopeo, skopeo_inspect,
};
use std::path::Path;

use crate::{opship, run, tracked};

#[test]
fn push_inspect_repush_pull_tags() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let target = format!("{}/memcached-operator-bundle:v0.3.0", reg.addr);

    let r = ok(run(isolated(&home).args(["push", &src, &target])), "push");
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        r.stderr.contains("0 of 2 blobs already present"),
        "{}",
        r.stderr
    );

    // skopeo sees the same digest and the bundle labels.
    let inspect = skopeo_inspect(&target);
    assert_eq!(inspect["Digest"], digest.as_str());
    let annotations =
        opship_core::image::build::annotations(&tracked("bundle/0.3.0/metadata/annotations.yaml"))
            .unwrap();
    for (k, v) in &annotations {
        assert_eq!(inspect["Labels"][k], v.as_str(), "label {k}");
    }

    // Re-push: nothing uploaded, same digest.
    let r = ok(
        run(isolated(&home).args(["push", &src, &target])),
        "re-push",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        r.stderr.contains("2 of 2 blobs already present"),
        "{}",
        r.stderr
    );

    // A second tag, chunked upload to another repository, and a mount from the first.
    let target2 = format!("{}/memcached-operator-bundle:latest", reg.addr);
    ok(
        run(isolated(&home).args(["push", &src, &target2])),
        "push tag 2",
    );
    let chunked = format!("{}/chunked/bundle:v0.3.0", reg.addr);
    let r = ok(
        run(isolated(&home).args(["push", "--chunked", &src, &chunked])),
        "chunked push",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert!(
        r.stderr.contains("0 of 2 blobs already present"),
        "{}",
        r.stderr
    );
    let mounted = format!("{}/mounted/bundle:v0.3.0", reg.addr);
    let r = ok(
        run(isolated(&home).args([
            "push",
            "--from",
            "memcached-operator-bundle",
            &src,
            &mounted,
        ])),
        "mount push",
    );
    assert_eq!(r.stdout.trim(), digest);
    assert!(r.stderr.contains("2 mounted"), "{}", r.stderr);

    // Tags.
    let r = ok(
        run(isolated(&home).args(["tags", &format!("{}/memcached-operator-bundle", reg.addr)])),
        "tags",
    );
    let mut tags: Vec<&str> = r.stdout.lines().collect();
    tags.sort();
    assert_eq!(tags, ["latest", "v0.3.0"]);

    // Inspect.
    let r = ok(
        run(isolated(&home).args(["inspect", "--output", "json", &target])),
        "inspect",
    );
    let v = json(&r.stdout);
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(
        v["labels"]["operators.operatorframework.io.bundle.package.v1"],
        annotations["operators.operatorframework.io.bundle.package.v1"].as_str()
    );
    let r = ok(
        run(isolated(&home).args(["inspect", &target])),
        "inspect text",
    );
    assert!(r.stdout.contains(&digest), "{}", r.stdout);

    // Pull back into a new layout: same digest, readable by opship-core and skopeo.
    let pulled = tmp.path().join("pulled");
    let r = ok(
        run(isolated(&home).args(["pull", &target, &format!("{}:back", pulled.display())])),
        "pull",
    );
    assert_eq!(r.stdout.trim(), digest);
    let image = opship_core::image::Layout::new(&pulled)
        .read_image("back")
        .unwrap();
    assert_eq!(image.descriptor.digest.as_str(), digest);
    let out = skopeo()
        .args(["inspect", &format!("oci:{}:back", pulled.display())])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["Digest"],
        digest.as_str()
    );
    // Pull by digest, default tag from the reference absent → `latest`.
    let by_digest = format!("{}/memcached-operator-bundle@{digest}", reg.addr);
    ok(
        run(isolated(&home).args(["pull", &by_digest, &pulled.display().to_string()])),
        "pull by digest",
    );
    let image = opship_core::image::Layout::new(&pulled)
        .read_image("latest")
        .unwrap();
    assert_eq!(image.descriptor.digest.as_str(), digest);

    // A missing tag is a clear error quoting the registry.
    let r = run(isolated(&home).args([
        "inspect",
        &format!("{}/memcached-operator-bundle:nope", reg.addr),
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("MANIFEST_UNKNOWN"), "{}", r.stderr);
}

#[test]
fn skopeo_copy_then_pull() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, _) = build(tmp.path(), "0.2.0");
    let target = format!("{}/copied/bundle:0.2.0", reg.addr);
    let out = skopeo()
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:0.2.0", layout.display()))
        .arg(format!("docker://{target}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = skopeo()
        .args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{target}"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let remote = json(&String::from_utf8_lossy(&out.stdout))["Digest"]
        .as_str()
        .unwrap()
        .to_owned();

    let pulled = tmp.path().join("pulled");
    let r = ok(
        run(isolated(&home).args(["pull", &target, &pulled.display().to_string()])),
        "pull",
    );
    assert_eq!(r.stdout.trim(), remote);
    let image = opship_core::image::Layout::new(&pulled)
        .read_image("0.2.0")
        .unwrap();
    assert_eq!(image.descriptor.digest.as_str(), remote);
    assert_eq!(
        run(isolated(&home).args(["tags", &format!("{}/copied/bundle", reg.addr)])).stdout,
        "0.2.0\n"
    );
}

#[test]
fn basic_auth_and_credential_sources() {
    let reg = TestRegistry::start(Some(("alice", "s3cret")));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, digest) = build(tmp.path(), "0.3.0");
    let src = format!("{}:0.3.0", layout.display());
    let target = format!("{}/private/bundle:v0.3.0", reg.addr);
    let repo_ref = format!("{}/private/bundle", reg.addr);

    // Anonymous: refused, exit 2, naming the registry.
    let r = run(isolated(&home).args(["push", &src, &target]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(&reg.addr), "{}", r.stderr);
    assert!(r.stderr.contains("401"), "{}", r.stderr);

    // Wrong password: exit 2 with the registry's answer.
    let r = run_stdin(
        isolated(&home).args(["push", "-u", "alice", "--password-stdin", &src, &target]),
        "wrong\n",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refused the credentials of user `alice`"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("401"), "{}", r.stderr);
    let r = run_stdin(
        isolated(&home).args(["login", &reg.addr, "-u", "alice", "--password-stdin"]),
        "wrong\n",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("UNAUTHORIZED"), "{}", r.stderr);
    assert!(!home.join(".docker/config.json").exists());

    // Right password on the command line.
    let r = ok(
        run_stdin(
            isolated(&home).args(["push", "-u", "alice", "--password-stdin", &src, &target]),
            "s3cret\n",
        ),
        "push with password",
    );
    assert_eq!(r.stdout.trim(), digest);

    // login writes ~/.docker/config.json (0600); later commands use it.
    ok(
        run_stdin(
            isolated(&home).args(["login", &reg.addr, "-u", "alice", "--password-stdin"]),
            "s3cret\n",
        ),
        "login",
    );
    let config_file = home.join(".docker/config.json");
    let config = json(&std::fs::read_to_string(&config_file).unwrap());
    assert_eq!(
        config["auths"][reg.addr.as_str()]["auth"],
        "YWxpY2U6czNjcmV0"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config_file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let r = ok(
        run(isolated(&home).args(["tags", &repo_ref])),
        "tags via config.json",
    );
    assert_eq!(r.stdout, "v0.3.0\n");

    // $DOCKER_CONFIG/config.json and $REGISTRY_AUTH_FILE, with an empty HOME.
    let empty_home = tmp.path().join("empty");
    let docker_config = tmp.path().join("dc");
    std::fs::create_dir_all(&docker_config).unwrap();
    std::fs::copy(&config_file, docker_config.join("config.json")).unwrap();
    let r = ok(
        run(isolated(&empty_home)
            .env("DOCKER_CONFIG", &docker_config)
            .args([
                "pull",
                &target,
                &tmp.path().join("p1").display().to_string(),
            ])),
        "pull via DOCKER_CONFIG",
    );
    assert_eq!(r.stdout.trim(), digest);
    let r = ok(
        run(isolated(&empty_home)
            .env("REGISTRY_AUTH_FILE", docker_config.join("config.json"))
            .args(["inspect", &target])),
        "inspect via REGISTRY_AUTH_FILE",
    );
    assert!(r.stdout.contains(&digest), "{}", r.stdout);

    // A stored wrong password is refused with a clear message.
    std::fs::write(
        docker_config.join("config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"YWxpY2U6d3Jvbmc="}}}}}}"#,
            reg.addr
        ),
    )
    .unwrap();
    let r = run(isolated(&empty_home)
        .env("DOCKER_CONFIG", &docker_config)
        .args(["tags", &repo_ref]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refused the credentials of user `alice`"),
        "{}",
        r.stderr
    );
}

#[test]
fn validate_bundle_images_in_a_registry() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (layout, _) = build(tmp.path(), "0.3.0");
    let target = format!("{}/memcached-operator-bundle:v0.3.0", reg.addr);
    ok(
        run(isolated(&home).args(["push", &format!("{}:0.3.0", layout.display()), &target])),
        "push",
    );
    let r = ok(
        run(isolated(&home).args(["validate", "bundle", &target, "--select-optional", "all"])),
        "validate a registry image",
    );
    assert!(
        r.stdout.contains(&format!("{target}: valid")),
        "{}",
        r.stdout
    );

    // A broken CSV inside the image: found at its line, the file named through the reference.
    let (_t, dir) = crate::sample_copy();
    let csv = dir.join("0.3.0/manifests/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(
        &csv,
        text.replacen("spec:\n", "spec:\n  displayName: [\n", 1),
    )
    .unwrap();
    ok(
        run(opship()
            .args(["build", "--layout"])
            .arg(&layout)
            .args(["--tag", "broken"])
            .arg(dir.join("0.3.0"))),
        "build broken",
    );
    let broken = format!("{}/memcached-operator-bundle:broken", reg.addr);
    ok(
        run(isolated(&home).args(["push", &format!("{}:broken", layout.display()), &broken])),
        "push broken",
    );
    let r = run(isolated(&home).args(["validate", "bundle", &broken, "-o", "json"]));
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v = json(&r.stdout);
    let f = &v["bundles"][0]["findings"][0];
    assert_eq!(f["rule"], "BF008", "{}", r.stdout);
    assert_eq!(
        f["location"]["file"],
        format!("{broken}/manifests/memcached-operator.clusterserviceversion.yaml")
    );

    // A tag the registry does not have: exit 2 quoting the registry.
    let missing = format!("{}/memcached-operator-bundle:nope", reg.addr);
    let r = run(isolated(&home).args(["validate", "bundle", &missing]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("MANIFEST_UNKNOWN"), "{}", r.stderr);
}

#[test]
fn credential_files_and_passwords_that_are_no_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let pipe = tmp.path().join("pipe");
    let out = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .output()
        .unwrap();
    assert!(out.status.success());
    let huge = tmp.path().join("huge.json");
    std::fs::write(&huge, " ".repeat(1 << 20)).unwrap();
    let docker = tmp.path().join("docker");
    std::fs::create_dir(&docker).unwrap();
    std::os::unix::fs::symlink(&pipe, docker.join("config.json")).unwrap();
    let limit = std::time::Duration::from_secs(60);
    // Nothing listens on the port: every case is refused before any request.
    let repo = "127.0.0.1:9/x";
    let not_regular = "is not a regular file (a FIFO, socket or device); a password or \
                       credentials file must be a regular file";
    let cases: [(&str, &str, &Path, &str); 4] = [
        (
            "REGISTRY_AUTH_FILE",
            "/dev/zero",
            Path::new("/dev/zero"),
            not_regular,
        ),
        (
            "REGISTRY_AUTH_FILE",
            pipe.to_str().unwrap(),
            &pipe,
            not_regular,
        ),
        (
            "REGISTRY_AUTH_FILE",
            huge.to_str().unwrap(),
            &huge,
            "is larger than 65536 bytes",
        ),
        (
            "DOCKER_CONFIG",
            docker.to_str().unwrap(),
            &docker.join("config.json"),
            not_regular,
        ),
    ];
    for (var, value, file, why) in cases {
        for args in [vec!["tags", repo], vec!["inspect", "127.0.0.1:9/x:v1"]] {
            let (r, killed) =
                crate::faults::run_bounded(isolated(&home).env(var, value).args(&args), limit);
            assert!(!killed, "{var}={value} {args:?}: still running");
            assert_eq!(r.code, 2, "{var}={value} {args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains(&format!("{}: {why}", file.display())),
                "{var}={value} {args:?}: {}",
                r.stderr
            );
        }
    }
    // An endless password on standard input.
    for args in [
        vec!["tags", "-u", "a", "--password-stdin", repo],
        vec!["login", "127.0.0.1:9", "-u", "a", "--password-stdin"],
    ] {
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let (r, killed) =
            crate::faults::run_bounded_stdin(isolated(&home).args(&args), zero.into(), limit);
        assert!(!killed, "{args:?}: still running");
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("--password-stdin: standard input holds more than 65536 bytes"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert!(!home.join(".docker").exists(), "login stored something");
}
