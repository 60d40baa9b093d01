//! `opship build`: bundle directories → reproducible images in an OCI layout (and optionally a
//! `docker load` archive). Bundles are built in parallel; the layout's `index.json` is written
//! once, last.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use opship_core::image::archive::{self, ArchiveImage};
use opship_core::image::{BuildOptions, Format, Image, Layout, build};

use super::{CmdError, ExitStatus};
use crate::cli::{BuildArgs, BuildOutput, ImageFormat};

/// Runs `opship build ...`.
pub fn run(args: &BuildArgs) -> Result<ExitStatus, CmdError> {
    if args.tag.is_some() && args.dirs.len() > 1 {
        return Err(
            "--tag names one image; with several bundles each gets its CSV's version".into(),
        );
    }
    let mut extra_labels = BTreeMap::new();
    for l in &args.label {
        let (k, v) = l
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| format!("--label `{l}`: expected KEY=VALUE"))?;
        extra_labels.insert(k.trim().to_owned(), v.to_owned());
    }
    let opts = BuildOptions {
        epoch: super::source_date_epoch()?.unwrap_or(0),
        extra_labels,
        format: match args.format {
            ImageFormat::Oci => Format::Oci,
            ImageFormat::Docker => Format::Docker,
        },
    };
    let layout = Layout::new(&args.layout);
    layout.init()?;

    let progress = super::progress::Progress::new("built", args.dirs.len());
    let built = parallel(&args.dirs, |dir| -> Result<(String, Image), CmdError> {
        let image = build::build_bundle(dir, &opts)?;
        let tag = match &args.tag {
            Some(t) => t.clone(),
            None => build::default_tag(dir),
        };
        opship_core::image::layout::check_tag(&tag)
            .map_err(|e| format!("{}: {e}", opship_core::paths::show(dir)))?;
        layout.write_blobs(&image)?;
        progress.item_done(&opship_core::paths::show(dir).to_string());
        Ok((tag, image))
    });
    drop(progress);
    let mut images: Vec<(PathBuf, String, Image)> = Vec::with_capacity(built.len());
    for (dir, r) in args.dirs.iter().zip(built) {
        let (tag, image) = r.ok_or_else(|| {
            format!(
                "{}: internal error while building",
                opship_core::paths::show(dir)
            )
        })??;
        images.push((dir.clone(), tag, image));
    }
    // Default tags that collide (bundles of several operators at one version) are qualified
    // with the package: `<package>-bundle:<version>`, the name `docker load` would use too.
    if args.tag.is_none() {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, t, _) in &images {
            *count.entry(t.as_str()).or_default() += 1;
        }
        let clashing: Vec<String> = count
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(t, _)| t.to_owned())
            .collect();
        for (_, tag, image) in &mut images {
            if clashing.contains(tag) {
                *tag = archive::repo_tag(tag, &image.labels);
            }
        }
    }
    let mut by_tag: BTreeMap<&str, &Path> = BTreeMap::new();
    for (dir, tag, _) in &images {
        if let Some(other) = by_tag.insert(tag, dir) {
            return Err(format!(
                "{} and {} both get the tag `{tag}`; build them into different layouts or pass --tag",
                opship_core::paths::show(other),
                opship_core::paths::show(dir)
            )
            .into());
        }
    }
    layout.write_images(images.iter().map(|(_, t, i)| (t.as_str(), i)))?;

    if let Some(path) = &args.archive {
        let repo_tags: Vec<String> = images
            .iter()
            .map(|(_, t, i)| archive::repo_tag(t, &i.labels))
            .collect();
        let entries: Vec<ArchiveImage<'_>> = images
            .iter()
            .zip(&repo_tags)
            .map(|((_, tag, image), repo_tag)| ArchiveImage {
                repo_tag,
                tag,
                image,
            })
            .collect();
        archive::write_archive(path, &entries, opts.epoch)?;
    }

    let mut out = String::new();
    match args.output {
        BuildOutput::Text => {
            for (_, tag, image) in &images {
                out.push_str(&format!("{tag} {}\n", image.digest()));
            }
        }
        BuildOutput::Json => {
            let list: Vec<serde_json::Value> = images
                .iter()
                .map(|(dir, tag, image)| {
                    serde_json::json!({
                        "dir": opship_core::paths::show(dir).to_string(),
                        "tag": tag,
                        "digest": image.digest().as_str(),
                        "mediaType": image.manifest_descriptor.media_type,
                        "size": image.manifest_descriptor.size,
                        "config": opship_core::image::Digest::of(&image.config).as_str(),
                        "layer": image.layer.digest.as_str(),
                        "diffId": image.layer.diff_id.as_str(),
                    })
                })
                .collect();
            out = serde_json::to_string_pretty(&list)? + "\n";
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitStatus::Success)
}

/// Runs `f` over `items` on all cores; results in input order (`None` where a worker
/// panicked).
fn parallel<T, R, F>(items: &[T], f: F) -> Vec<Option<R>>
where
    T: AsRef<Path> + Sync,
    R: Send,
    F: Fn(&Path) -> R + Sync,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item.as_ref())));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let mut results: Vec<Option<R>> = items.iter().map(|_| None).collect();
    for (i, r) in done {
        results[i] = Some(r);
    }
    results
}
