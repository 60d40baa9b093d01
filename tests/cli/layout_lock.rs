//! Concurrent writers of one OCI layout: `opship build` and `opship pull` processes started
//! together into the same directory must all keep their tags (each `index.json` update holds
//! the layout's file lock).

use std::process::Stdio;

use crate::support_registry::{TestRegistry, build, isolated, ok};
use crate::{opship, run, tracked};

#[test]
fn concurrent_builds_and_pulls_keep_every_tag() {
    let reg = TestRegistry::start(None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let (source, digest) = build(tmp.path(), "0.3.0");
    let remote = format!("{}/lock/bundle:v1", reg.addr);
    ok(
        run(isolated(&home).args(["push", &format!("{}:0.3.0", source.display()), &remote])),
        "push",
    );

    let shared = tmp.path().join("shared");
    let mut children = Vec::new();
    for i in 0..6 {
        let version = ["0.1.0", "0.2.0", "0.3.0"][i % 3];
        children.push((
            format!("b{i}"),
            opship()
                .args(["build", "--layout"])
                .arg(&shared)
                .args(["--tag", &format!("b{i}")])
                .arg(tracked("bundle").join(version))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ));
        children.push((
            format!("p{i}"),
            isolated(&home)
                .args(["pull", &remote, &format!("{}:p{i}", shared.display())])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ));
    }
    for (name, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let layout = opship_core::image::Layout::new(&shared);
    let mut tags = layout.tags().unwrap();
    tags.sort();
    assert_eq!(
        tags,
        [
            "b0", "b1", "b2", "b3", "b4", "b5", "p0", "p1", "p2", "p3", "p4", "p5"
        ]
    );
    for t in &tags {
        let image = layout.read_image(t).unwrap();
        if t.starts_with('p') {
            assert_eq!(image.descriptor.digest.as_str(), digest);
        }
    }
}
