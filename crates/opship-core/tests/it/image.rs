//! Bundle images: byte-reproducibility over the whole corpus (twice, and from a copy with other
//! mtimes and modes), the exact content of the sample bundle's image, the OCI layout (tags,
//! replacement, verified reads) and the docker archive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use opship_core::image::archive::{self, ArchiveImage};
use opship_core::image::layout::Layout;
use opship_core::image::{BuildOptions, Format, build_bundle};
use rayon::prelude::*;

use crate::{corpus_dir, tracked};

fn corpus_bundles() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for op in std::fs::read_dir(corpus_dir().join("bundles")).unwrap() {
        let op = op.unwrap().path();
        for v in std::fs::read_dir(&op).unwrap() {
            let v = v.unwrap().path();
            if v.is_dir() {
                out.push(v);
            }
        }
    }
    out.sort();
    out
}

/// Copies a tree giving every file and directory other mtimes and modes than the original.
fn copy_scrambled(from: &Path, to: &Path, salt: u64) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_scrambled(&e.path(), &dest, salt + 1);
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o700)).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
            let f = std::fs::File::options().write(true).open(&dest).unwrap();
            f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567_890 + salt * 7))
                .unwrap();
            let mode = if salt.is_multiple_of(2) { 0o600 } else { 0o755 };
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

#[test]
fn corpus_images_are_reproducible() {
    let bundles = corpus_bundles();
    assert_eq!(bundles.len(), 237, "corpus bundle count");
    let opts = BuildOptions::default();
    let failures: Vec<String> = bundles
        .par_iter()
        .enumerate()
        .filter_map(|(i, dir)| {
            let tmp = tempfile::tempdir().unwrap();
            let tag = format!("t{i}");
            let mut digests = Vec::new();
            for n in 0..2 {
                let image = match build_bundle(dir, &opts) {
                    Ok(i) => i,
                    Err(e) => return Some(format!("{}: {e}", dir.display())),
                };
                let layout = Layout::new(tmp.path().join(format!("layout{n}")));
                layout.write_images([(tag.as_str(), &image)]).unwrap();
                let back = layout.read_image(&tag).unwrap();
                assert_eq!(back.manifest_bytes, image.manifest);
                assert_eq!(back.config_bytes, image.config);
                digests.push((image.digest().clone(), image.layer.diff_id.clone()));
            }
            let copy = tmp.path().join("copy");
            copy_scrambled(dir, &copy, i as u64);
            let image = build_bundle(&copy, &opts).unwrap();
            digests.push((image.digest().clone(), image.layer.diff_id.clone()));
            if digests.iter().any(|d| *d != digests[0]) {
                return Some(format!("{}: digests differ: {digests:?}", dir.display()));
            }
            None
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn epoch_and_labels_change_the_digest_and_nothing_else() {
    let dir = tracked("bundle/0.3.0");
    let base = build_bundle(&dir, &BuildOptions::default()).unwrap();
    let later = build_bundle(
        &dir,
        &BuildOptions {
            epoch: 1_700_000_000,
            ..Default::default()
        },
    )
    .unwrap();
    assert_ne!(base.digest(), later.digest());
    assert_ne!(base.layer.diff_id, later.layer.diff_id);
    let config: serde_json::Value = serde_json::from_slice(&later.config).unwrap();
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(later.layer.gzip.as_slice()));
    for e in a.entries().unwrap() {
        assert_eq!(e.unwrap().header().mtime().unwrap(), 1_700_000_000);
    }

    let labelled = build_bundle(
        &dir,
        &BuildOptions {
            extra_labels: BTreeMap::from([("com.example.team".into(), "storage".into())]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(labelled.layer.digest, base.layer.digest);
    assert_eq!(labelled.labels["com.example.team"], "storage");
    assert_ne!(labelled.digest(), base.digest());
}

#[test]
fn sample_bundle_image() {
    let dir = tracked("bundle/0.3.0");
    let image = build_bundle(&dir, &BuildOptions::default()).unwrap();

    // The layer: sorted, explicit directories, fixed metadata.
    let mut listing = Vec::new();
    let tar = {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(image.layer.gzip.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    assert_eq!(
        opship_core::image::Digest::of(&tar),
        image.layer.diff_id,
        "diff_id is the sha256 of the uncompressed tar"
    );
    let mut a = tar::Archive::new(tar.as_slice());
    for e in a.entries().unwrap() {
        let e = e.unwrap();
        let h = e.header();
        listing.push(format!(
            "{:o} {}/{} {:?}/{:?} {} {} {}",
            h.mode().unwrap(),
            h.uid().unwrap(),
            h.gid().unwrap(),
            h.username().unwrap().unwrap_or(""),
            h.groupname().unwrap().unwrap_or(""),
            h.mtime().unwrap(),
            h.size().unwrap(),
            e.path().unwrap().display()
        ));
    }
    insta::assert_snapshot!("sample_layer", listing.join("\n"));
    assert_eq!(image.layer.entries.len(), listing.len());
    // gzip header: no flags, mtime 0, XFL 0, OS 255.
    assert_eq!(
        &image.layer.gzip[..10],
        &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]
    );

    // Labels = metadata/annotations.yaml.
    let annotations =
        opship_core::image::build::annotations(&dir.join("metadata/annotations.yaml")).unwrap();
    assert_eq!(image.labels, annotations);
    assert_eq!(
        image.labels["operators.operatorframework.io.bundle.package.v1"],
        "memcached-operator"
    );

    let text = format!(
        "manifest {}\n{}\nconfig\n{}\n",
        image.digest(),
        String::from_utf8(image.manifest.clone()).unwrap(),
        String::from_utf8(image.config.clone()).unwrap()
    );
    insta::assert_snapshot!("sample_manifest_config", text);

    let docker = build_bundle(
        &dir,
        &BuildOptions {
            format: Format::Docker,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(docker.layer.digest, image.layer.digest);
    let m: serde_json::Value = serde_json::from_slice(&docker.manifest).unwrap();
    assert_eq!(
        m["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.docker.container.image.v1+json"
    );
    assert_eq!(
        m["layers"][0]["mediaType"],
        "application/vnd.docker.image.rootfs.diff.tar.gzip"
    );
    assert!(m.get("annotations").is_none());
}

#[test]
fn layout_tags_replace_and_reads_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let layout = Layout::new(tmp.path().join("oci"));
    let a = build_bundle(&tracked("bundle/0.2.0"), &BuildOptions::default()).unwrap();
    let b = build_bundle(&tracked("bundle/0.3.0"), &BuildOptions::default()).unwrap();
    layout
        .write_images([("0.2.0", &a), ("latest", &a)])
        .unwrap();
    layout
        .write_images([("latest", &b), ("0.3.0", &b)])
        .unwrap();
    assert_eq!(layout.tags().unwrap(), ["0.2.0", "latest", "0.3.0"]);
    assert_eq!(
        &layout.read_image("latest").unwrap().descriptor.digest,
        b.digest()
    );
    assert_eq!(
        std::fs::read(tmp.path().join("oci/oci-layout")).unwrap(),
        br#"{"imageLayoutVersion":"1.0.0"}"#
    );
    // No temporary files left behind.
    for d in [tmp.path().join("oci"), tmp.path().join("oci/blobs/sha256")] {
        for e in std::fs::read_dir(d).unwrap() {
            let n = e.unwrap().file_name();
            assert!(!n.to_string_lossy().starts_with('.'), "{n:?}");
        }
    }
    // Six blobs: a layer, a config and a manifest per image.
    let blobs = std::fs::read_dir(tmp.path().join("oci/blobs/sha256"))
        .unwrap()
        .count();
    assert_eq!(blobs, 6);

    let err = layout.read_image("nope").unwrap_err().to_string();
    assert!(err.contains("no image tagged `nope`"), "{err}");

    // A corrupted blob is detected, with the file named.
    let path = layout.blob_path(&b.layer.digest);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let err = layout.read_image("0.3.0").unwrap_err().to_string();
    assert!(
        err.contains(b.layer.digest.hex()) && err.contains("hashes to"),
        "{err}"
    );
    // Rewriting repairs the damaged blob.
    layout.write_images([("0.3.0", &b)]).unwrap();
    layout.read_image("0.3.0").unwrap();
    // Bad tags are refused before anything is written.
    assert!(layout.write_images([("bad tag", &a)]).is_err());
}

#[test]
fn archive_is_deterministic_and_complete() {
    let img = build_bundle(&tracked("bundle/0.3.0"), &BuildOptions::default()).unwrap();
    let rt = archive::repo_tag("0.3.0", &img.labels);
    assert_eq!(rt, "memcached-operator-bundle:0.3.0");
    let entries = [ArchiveImage {
        repo_tag: &rt,
        tag: "0.3.0",
        image: &img,
    }];
    let one = archive::archive_bytes(&entries, 0).unwrap();
    let two = archive::archive_bytes(&entries, 0).unwrap();
    assert_eq!(one, two);
    let mut names = Vec::new();
    let mut manifest_json = None;
    for e in tar::Archive::new(one.as_slice()).entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        if name == "manifest.json" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut e, &mut s).unwrap();
            manifest_json = Some(s);
        }
        names.push(name);
    }
    let layer = format!("blobs/sha256/{}", img.layer.digest.hex());
    assert!(names.contains(&layer));
    assert_eq!(names[0], "blobs/");
    assert_eq!(
        names[names.len() - 3..],
        ["index.json", "manifest.json", "oci-layout"]
    );
    let m: serde_json::Value = serde_json::from_str(&manifest_json.unwrap()).unwrap();
    assert_eq!(m[0]["RepoTags"][0], "memcached-operator-bundle:0.3.0");
    assert_eq!(m[0]["Layers"][0], layer.as_str());
}

#[test]
fn refused_inputs_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    crate_copy(&tracked("bundle/0.3.0"), &dir);
    std::os::unix::fs::symlink("annotations.yaml", dir.join("metadata/link.yaml")).unwrap();
    let err = build_bundle(&dir, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("metadata/link.yaml") && err.contains("symbolic link"),
        "{err}"
    );
    std::fs::remove_file(dir.join("metadata/link.yaml")).unwrap();
    let other = tmp.path().join("elsewhere");
    std::fs::rename(dir.join("manifests"), &other).unwrap();
    std::os::unix::fs::symlink(&other, dir.join("manifests")).unwrap();
    let err = build_bundle(&dir, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("manifests") && err.contains("symbolic link"),
        "{err}"
    );
    std::fs::remove_file(dir.join("manifests")).unwrap();
    std::fs::rename(&other, dir.join("manifests")).unwrap();

    std::fs::write(dir.join("metadata/annotations.yaml"), "annotations: {}\n").unwrap();
    let err = build_bundle(&dir, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("annotations.yaml") && err.contains("bundle.package.v1"),
        "{err}"
    );

    std::fs::remove_dir_all(dir.join("metadata")).unwrap();
    let err = build_bundle(&dir, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("metadata"), "{err}");
}

fn crate_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            crate_copy(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn concurrent_writers_keep_each_others_tags() {
    // Eight writers, each tagging twenty images into one layout at the same time: every
    // read-modify-write of index.json holds the layout's lock, so no tag is lost.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("oci");
    let a = build_bundle(&tracked("bundle/0.2.0"), &BuildOptions::default()).unwrap();
    let b = build_bundle(&tracked("bundle/0.3.0"), &BuildOptions::default()).unwrap();
    std::thread::scope(|s| {
        for w in 0..8 {
            let (dir, a, b) = (&dir, &a, &b);
            s.spawn(move || {
                let layout = Layout::new(dir);
                for i in 0..20 {
                    let image = if (w + i) % 2 == 0 { a } else { b };
                    layout
                        .write_images([(format!("w{w}-{i}").as_str(), image)])
                        .unwrap();
                }
            });
        }
    });
    let layout = Layout::new(&dir);
    let mut tags = layout.tags().unwrap();
    tags.sort();
    let mut expected: Vec<String> = (0..8)
        .flat_map(|w| (0..20).map(move |i| format!("w{w}-{i}")))
        .collect();
    expected.sort();
    assert_eq!(tags, expected);
    for w in 0..8 {
        let image = layout.read_image(&format!("w{w}-0")).unwrap();
        let want = if w % 2 == 0 { a.digest() } else { b.digest() };
        assert_eq!(&image.descriptor.digest, want);
    }
}
