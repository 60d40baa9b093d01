//! Building a kustomization with the user's own kustomize: `kustomize build`, else
//! `kubectl kustomize`, found on PATH. opship does not reimplement kustomize (its transformers,
//! patches and generators are kustomize's to define); it runs it the way `make bundle` does and
//! reads the stream it prints.
//!
//! The operator image is set as `cd config/manager && kustomize edit set image controller=IMG`
//! would, without editing the user's files: a throw-away kustomization in a temporary directory
//! includes the user's one and maps every name the placeholder was already mapped to (the
//! `images:` entries for `controller` that an earlier `make bundle` left behind) back to the
//! placeholder, which generation then replaces with the release's image.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::manifest::{self, Object};

/// File names kustomize looks for in a kustomization directory, in its order.
pub const FILE_NAMES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// How long one `kustomize build` may take (remote resources included), unless
/// `OPSHIP_CHILD_TIMEOUT` says otherwise.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The kustomization file of `dir`, when `dir` is a kustomization root.
pub fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    FILE_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// Refuses a kustomization name in `dir` that is there but is no regular file (a directory, a
/// FIFO, a device): kustomize cannot use it, and reading `dir` as plain manifests instead
/// would quietly give a near-empty bundle.
pub fn check_kustomization_file(dir: &Path) -> Result<()> {
    for p in FILE_NAMES.iter().map(|n| dir.join(n)) {
        if let Ok(meta) = std::fs::metadata(&p)
            && !meta.is_file()
        {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file (a FIFO, socket or device)"
            };
            return Err(Error::Input(format!(
                "{}: {what}; a kustomization must be a regular file",
                p.display()
            )));
        }
    }
    Ok(())
}

/// A kustomize found on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The program.
    pub program: PathBuf,
    /// Arguments before the directory (`build` or `kustomize`).
    pub args: Vec<String>,
}

impl Tool {
    /// `kustomize build`, else `kubectl kustomize`, from `path` (the PATH variable's value).
    pub fn find_in(path: Option<&OsString>) -> Option<Tool> {
        let dirs: Vec<PathBuf> = path
            .map(std::env::split_paths)
            .into_iter()
            .flatten()
            .collect();
        let lookup = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p));
        if let Some(p) = lookup("kustomize") {
            return Some(Tool {
                program: p,
                args: vec!["build".into()],
            });
        }
        lookup("kubectl").map(|p| Tool {
            program: p,
            args: vec!["kustomize".into()],
        })
    }

    /// The tool on this process's PATH, or an error that names both programs looked for.
    pub fn find(for_dir: &Path) -> Result<Tool> {
        Tool::find_in(std::env::var_os("PATH").as_ref()).ok_or_else(|| {
            Error::Input(format!(
                "{} is a kustomization ({}), and building it needs `kustomize` or `kubectl` on PATH; \
                 neither was found. Install one (kustomize 5, or kubectl, which embeds it), or pass \
                 the saved output of `kustomize build` as the manifests",
                for_dir.display(),
                kustomization_file(for_dir)
                    .and_then(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "kustomization.yaml".into())
            ))
        })
    }

    /// The command as a user would type it.
    pub fn describe(&self, dir: &Path) -> String {
        let name = self
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{name} {} {}", self.args.join(" "), dir.display())
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Builds the kustomization `dir` and parses the objects it prints. With `placeholder`, every
/// image the kustomizations map the placeholder to is mapped back to it (see the module
/// documentation), so generation puts the release's operator image there.
pub fn build(dir: &Path, placeholder: Option<&str>) -> Result<Vec<Object>> {
    let tool = Tool::find(dir)?;
    build_with(&tool, dir, placeholder)
}

/// [`build`] with a given tool.
pub fn build_with(tool: &Tool, dir: &Path, placeholder: Option<&str>) -> Result<Vec<Object>> {
    let shown = tool.describe(dir);
    let aliases = match placeholder {
        Some(p) => image_aliases(dir, p)?,
        None => Vec::new(),
    };
    let wrapper;
    let target: PathBuf = if let (Some(p), false) = (placeholder, aliases.is_empty()) {
        wrapper = crate::fsutil::temp_dir(".opship-kustomize-")
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let from =
            std::fs::canonicalize(wrapper.path()).map_err(|e| Error::io(wrapper.path(), e))?;
        let to = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
        // kustomize refuses absolute resource paths; a relative one may leave the root.
        let rel = relative(&from, &to);
        let images: Vec<Value> = aliases
            .iter()
            .map(|a| serde_json::json!({ "name": a, "newName": p }))
            .collect();
        let k = serde_json::json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [rel.to_string_lossy()],
            "images": images,
        });
        let text = serde_json::to_string_pretty(&k).map_err(|e| Error::Internal(e.to_string()))?;
        let file = wrapper.path().join("kustomization.yaml");
        std::fs::write(&file, text).map_err(|e| Error::io(&file, e))?;
        wrapper.path().to_path_buf()
    } else {
        dir.to_path_buf()
    };
    // A build's output is a manifest stream, with a stream's budget; a resource URL that never
    // answers or a kustomization that recurses without end meets the deadline.
    let limits = crate::child::Limits::new(TIMEOUT, crate::input::Kind::Manifest.budget());
    let out = crate::child::run(
        Command::new(&tool.program).args(&tool.args).arg(&target),
        None,
        limits,
        &shown,
    )?;
    if !out.status.success() {
        let mut err = out.message();
        if target != dir {
            // The wrapper's path means nothing to the user.
            err = err.replace(
                &target.to_string_lossy().into_owned(),
                "<opship's image override>",
            );
        }
        return Err(Error::Input(format!(
            "`{shown}` failed ({}): {err}",
            out.status
        )));
    }
    let stdout = out.stdout;
    let text = String::from_utf8(stdout)
        .map_err(|_| Error::Input(format!("`{shown}` printed something that is not UTF-8")))?;
    manifest::parse_objects(&text, Path::new(&format!("`{shown}` output")))
}

/// The names the kustomizations reachable from `dir` map `placeholder` to (`images:` entries
/// with `name: <placeholder>` and a `newName`), so they can be mapped back.
pub fn image_aliases(dir: &Path, placeholder: &str) -> Result<Vec<String>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut aliases = std::collections::BTreeSet::new();
    visit(dir, placeholder, &mut seen, &mut aliases)?;
    Ok(aliases.into_iter().collect())
}

fn visit(
    dir: &Path,
    placeholder: &str,
    seen: &mut std::collections::BTreeSet<PathBuf>,
    aliases: &mut std::collections::BTreeSet<String>,
) -> Result<()> {
    let Ok(real) = std::fs::canonicalize(dir) else {
        return Ok(());
    };
    if !seen.insert(real) || seen.len() > 1000 {
        return Ok(());
    }
    let Some(file) = kustomization_file(dir) else {
        return Ok(());
    };
    let doc = crate::yaml::parse_one(&crate::yaml::read_text(&file)?, &file)?;
    if let Some(images) = doc.value["images"].as_array() {
        for i in images {
            if i["name"].as_str() == Some(placeholder)
                && let Some(n) = i["newName"].as_str()
                && n != placeholder
            {
                aliases.insert(n.to_owned());
            }
        }
    }
    for key in ["resources", "bases", "components"] {
        for r in doc.value[key].as_array().into_iter().flatten() {
            if let Some(r) = r.as_str()
                && !r.contains("://")
                && !r.starts_with("github.com/")
            {
                let p = dir.join(r);
                if p.is_dir() {
                    visit(&p, placeholder, seen, aliases)?;
                }
            }
        }
    }
    Ok(())
}

/// `to` relative to `from` (both absolute, canonical).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative(Path::new("/tmp/a"), Path::new("/work/p/config")),
            PathBuf::from("../../work/p/config")
        );
        assert_eq!(
            relative(Path::new("/a/b"), Path::new("/a/b/c")),
            PathBuf::from("c")
        );
    }

    #[test]
    fn tool_lookup_order() {
        let d = tempfile::tempdir().unwrap();
        let path = OsString::from(d.path());
        assert_eq!(Tool::find_in(Some(&path)), None);
        let exe = |n: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = d.path().join(n);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe("kubectl");
        assert_eq!(Tool::find_in(Some(&path)).unwrap().args, ["kustomize"]);
        exe("kustomize");
        assert_eq!(Tool::find_in(Some(&path)).unwrap().args, ["build"]);
    }
}
