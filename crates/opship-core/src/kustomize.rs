//! Building a kustomization with the user's own kustomize: `kustomize build`, else
//! `kubectl kustomize`, found on PATH. opship does not reimplement kustomize (its transformers,
//! patches and generators are kustomize's to define); it runs it the way `make bundle` does and
//! reads the stream it prints.
//!
//! The `kustomize edit` commands of the project's bundle recipe (`cd config/manager &&
//! kustomize edit set image controller=IMG`, `add label`, `set namespace`, ...) are run by
//! kustomize itself, in their directories, on a temporary copy of the directory tree holding
//! the kustomizations, so the build is what the recipe's build gives and the project is never
//! edited. The operator's `set image` keeps the placeholder (`controller=controller`), and a
//! kustomization of the copy that still maps the placeholder elsewhere (the `images:` entry an
//! earlier `make bundle` left behind) has that entry set back to the placeholder, as the same
//! edit would (also with only `kubectl kustomize`): generation then puts the release's
//! operator image there. When edits set the placeholder's image, only the kustomizations they
//! edit are the operator's: another one mapping the placeholder to its own image (a webhook
//! backend's) keeps it. An edit scoped to one kustomization never touches the samples, as a top-level
//! `images:` over the whole build would.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::collections::{BTreeMap, BTreeSet};

use crate::config::KustomizeEdit;
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
                crate::paths::show(&p)
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
                crate::paths::show(for_dir),
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
        format!("{name} {} {}", self.args.join(" "), crate::paths::show(dir))
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Builds the kustomization `dir` and parses the objects it prints. `edits` (directories
/// absolute) are run first, and with `placeholder` every `images:` entry mapping the
/// placeholder elsewhere is set back to it (see the module documentation), so generation puts
/// the release's operator image there. With `envsubst`, the build is piped through
/// `envsubst` with exactly those variables.
pub fn build(
    dir: &Path,
    placeholder: Option<&str>,
    edits: &[KustomizeEdit],
    envsubst: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Object>> {
    let tool = Tool::find(dir)?;
    build_with(&tool, dir, placeholder, edits, envsubst)
}

/// [`build`] with a given tool.
pub fn build_with(
    tool: &Tool,
    dir: &Path,
    placeholder: Option<&str>,
    edits: &[KustomizeEdit],
    envsubst: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Object>> {
    let shown = tool.describe(dir);
    let mut tree = Tree::default();
    visit(dir, placeholder, &mut tree)?;
    let copy;
    let target: PathBuf = if edits.is_empty() && tree.aliased.is_empty() {
        dir.to_path_buf()
    } else {
        copy = Copy::of(dir, &tree, edits)?;
        for e in edits {
            copy.edit(tool, &e.dir, &e.args)?;
        }
        if let Some(p) = placeholder {
            // What is mapped after the recipe's edits (an earlier `make bundle`'s leftovers).
            let mut after = Tree::default();
            visit(&copy.map(dir), Some(p), &mut after)?;
            // The operator's mappings are the ones the recipe's own `set image P=…` sets, in
            // the kustomizations it edits: another kustomization mapping the placeholder
            // elsewhere (a webhook backend built from `controller` into its own image) keeps
            // its image. Without such an edit, a leftover mapping is the operator's.
            let own: BTreeSet<PathBuf> = edits
                .iter()
                .filter(|e| sets_image_of(&e.args, p))
                .filter_map(|e| std::fs::canonicalize(copy.map(&e.dir)).ok())
                .collect();
            for d in &after.aliased {
                if own.is_empty() || own.contains(d) {
                    map_back(d, p)?;
                }
            }
        }
        copy.map(dir)
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
        return Err(Error::Input(format!(
            "`{shown}` failed ({}): {}",
            out.status,
            unmap_text(&out.message(), &target, dir)
        )));
    }
    let (stdout, shown) = match envsubst {
        Some(vars) => (
            envsubst_run(&out.stdout, vars)?,
            format!("{shown} | envsubst"),
        ),
        None => (out.stdout, shown),
    };
    let text = String::from_utf8(stdout)
        .map_err(|_| Error::Input(format!("`{shown}` printed something that is not UTF-8")))?;
    manifest::parse_objects(&text, Path::new(&format!("`{shown}` output")))
}

/// The build piped through `envsubst` (found on PATH) with exactly `vars` in its
/// environment, as the recipe's `| envsubst |` with the release's variables; bounded like
/// the build.
fn envsubst_run(stream: &[u8], vars: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let program = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join("envsubst"))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            Error::Input(
                "the config pipes the build through `envsubst` (`envsubst:`), which is not on PATH; install it (gettext-base)".into(),
            )
        })?;
    let limits = crate::child::Limits::new(TIMEOUT, crate::input::Kind::Manifest.budget());
    let out = crate::child::run(
        Command::new(&program).env_clear().envs(vars),
        Some(stream),
        limits,
        "envsubst",
    )?;
    if !out.status.success() {
        return Err(Error::Input(format!(
            "`envsubst` failed ({}): {}",
            out.status,
            out.message()
        )));
    }
    Ok(out.stdout)
}

/// Whether `kustomize edit ARGS` is `set image NAME=…` for `name`.
fn sets_image_of(args: &[String], name: &str) -> bool {
    args.len() > 2
        && args[0] == "set"
        && args[1] == "image"
        && args[2..]
            .iter()
            .any(|a| a.split_once('=').is_some_and(|(n, _)| n == name))
}

/// In the copy's kustomization `dir`, the `images:` entries of `placeholder` set back to it,
/// as `kustomize edit set image P=P` does there (also when only `kubectl kustomize` is
/// installed, which cannot edit); the file is written as JSON, which kustomize reads.
fn map_back(dir: &Path, placeholder: &str) -> Result<()> {
    let Some(file) = kustomization_file(dir) else {
        return Ok(());
    };
    let mut doc = crate::yaml::parse_one(&crate::yaml::read_text(&file)?, &file)?;
    if let Some(images) = doc.value["images"].as_array_mut() {
        for i in images {
            if i["name"].as_str() == Some(placeholder)
                && let Some(m) = i.as_object_mut()
            {
                m.retain(|k, _| k == "name");
                m.insert("newName".into(), placeholder.into());
            }
        }
    }
    let text =
        serde_json::to_string_pretty(&doc.value).map_err(|e| Error::Internal(e.to_string()))?;
    std::fs::write(&file, text).map_err(|e| Error::io(&file, e))
}

/// The copy's paths in a child's message, as the user's own.
fn unmap_text(text: &str, target: &Path, dir: &Path) -> String {
    if target == dir {
        return text.to_owned();
    }
    text.replace(
        &target.to_string_lossy().into_owned(),
        &dir.to_string_lossy(),
    )
}

/// The most a copy of the kustomizations may hold: what a build may print.
const COPY_BUDGET: u64 = 64 * 1024 * 1024;

/// A temporary copy of the directory tree holding every kustomization a build reaches and
/// every edited directory, so `kustomize edit` never touches the project.
struct Copy {
    _tmp: crate::fsutil::TempDir,
    /// The copied directory (canonical) and where it is in the copy.
    from: PathBuf,
    to: PathBuf,
}

impl Copy {
    fn of(dir: &Path, tree: &Tree, edits: &[KustomizeEdit]) -> Result<Copy> {
        let canon = |p: &Path| std::fs::canonicalize(p).map_err(|e| Error::io(p, e));
        let mut root = canon(dir)?;
        let mut parts: Vec<PathBuf> = tree.dirs.iter().cloned().collect();
        for e in edits {
            parts.push(canon(&e.dir).map_err(|_| {
                Error::Input(format!(
                    "{}: the directory of `kustomize edit {}` does not exist",
                    crate::paths::show(&e.dir),
                    e.args.join(" ")
                ))
            })?);
        }
        for p in &parts {
            while !p.starts_with(&root) {
                root = match root.parent() {
                    Some(r) => r.to_path_buf(),
                    None => break,
                };
            }
        }
        if root.parent().is_none() {
            return Err(Error::Input(format!(
                "{}: the kustomizations it reaches share no directory but `/`; opship does not copy the whole file system to run `kustomize edit`",
                crate::paths::show(dir)
            )));
        }
        // A registered temporary: removed on SIGINT/SIGTERM, swept after a SIGKILL.
        let tmp = crate::fsutil::temp_dir(".opship-kustomize-")
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let to = canon(tmp.path())?.join(root.file_name().unwrap_or_else(|| "root".as_ref()));
        let mut left = COPY_BUDGET;
        copy_tree(&root, &to, &mut left, 0)?;
        Ok(Copy {
            _tmp: tmp,
            from: root,
            to,
        })
    }

    /// Where `p` (of the project) is in the copy.
    fn map(&self, p: &Path) -> PathBuf {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        match real.strip_prefix(&self.from) {
            Ok(r) => self.to.join(r),
            Err(_) => p.to_path_buf(),
        }
    }

    /// `kustomize edit ARGS` in the copy of `dir`.
    fn edit(&self, tool: &Tool, dir: &Path, args: &[String]) -> Result<()> {
        let shown = format!(
            "cd {} && kustomize edit {}",
            crate::paths::show(dir),
            args.join(" ")
        );
        if tool.args.first().map(String::as_str) != Some("build") {
            return Err(Error::Input(format!(
                "`{shown}` needs kustomize on PATH (kubectl has no `edit`)"
            )));
        }
        let limits = crate::child::Limits::new(TIMEOUT, 1024 * 1024);
        let at = self.map(dir);
        let out = crate::child::run(
            Command::new(&tool.program)
                .arg("edit")
                .args(args)
                .current_dir(&at),
            None,
            limits,
            &shown,
        )?;
        if !out.status.success() {
            return Err(Error::Input(format!(
                "`{shown}` failed ({}): {}",
                out.status,
                unmap_text(&out.message(), &self.to, &self.from)
            )));
        }
        Ok(())
    }
}

/// Copies `from` to `to` (symbolic links followed, `.git` left out) within `left` bytes.
fn copy_tree(from: &Path, to: &Path, left: &mut u64, depth: usize) -> Result<()> {
    if depth > 64 {
        return Err(Error::Input(format!(
            "{}: more than 64 directory levels (a symbolic link loop?)",
            crate::paths::show(from)
        )));
    }
    // Into a registered temporary: through `fsutil`'s creations, which a signal excludes.
    crate::fsutil::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .map_err(|e| Error::io(from, e))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_name() == ".git" {
            continue;
        }
        let src = e.path();
        let dst = to.join(e.file_name());
        let Ok(meta) = std::fs::metadata(&src) else {
            continue;
        };
        if meta.is_dir() {
            copy_tree(&src, &dst, left, depth + 1)?;
        } else if meta.is_file() {
            if meta.len() > *left {
                return Err(Error::Input(format!(
                    "{}: the kustomizations' directory holds more than {} MiB; opship copies it to run `kustomize edit` and stops there",
                    crate::paths::show(from),
                    COPY_BUDGET / (1024 * 1024)
                )));
            }
            *left -= meta.len();
            crate::fsutil::copy_file(&src, &dst).map_err(|e| Error::io(&src, e))?;
        }
    }
    Ok(())
}

/// The names the kustomizations reachable from `dir` map `placeholder` to (`images:` entries
/// with `name: <placeholder>` and a `newName`), so they can be mapped back.
pub fn image_aliases(dir: &Path, placeholder: &str) -> Result<Vec<String>> {
    let mut tree = Tree::default();
    visit(dir, Some(placeholder), &mut tree)?;
    Ok(tree.aliases.into_iter().collect())
}

/// The directories (canonical) a build of `dir` reads: every kustomization it reaches through
/// `resources`, `bases` and `components`, and the directories of file resources. A `kustomize
/// edit` elsewhere cannot change what the build gives.
pub fn reached(dir: &Path) -> Result<BTreeSet<PathBuf>> {
    let mut tree = Tree::default();
    visit(dir, None, &mut tree)?;
    Ok(tree.dirs)
}

/// What a walk of the kustomizations reachable from a directory found.
#[derive(Default)]
struct Tree {
    /// Every kustomization directory (canonical), and the directories of file resources.
    dirs: BTreeSet<PathBuf>,
    /// Those whose `images:` map the placeholder to another name.
    aliased: BTreeSet<PathBuf>,
    /// The names it is mapped to.
    aliases: BTreeSet<String>,
}

fn visit(dir: &Path, placeholder: Option<&str>, tree: &mut Tree) -> Result<()> {
    let Ok(real) = std::fs::canonicalize(dir) else {
        return Ok(());
    };
    if !tree.dirs.insert(real.clone()) || tree.dirs.len() > 1000 {
        return Ok(());
    }
    let Some(file) = kustomization_file(dir) else {
        return Ok(());
    };
    let doc = crate::yaml::parse_one(&crate::yaml::read_text(&file)?, &file)?;
    if let (Some(images), Some(placeholder)) = (doc.value["images"].as_array(), placeholder) {
        for i in images {
            if i["name"].as_str() == Some(placeholder)
                && let Some(n) = i["newName"].as_str()
                && n != placeholder
            {
                tree.aliases.insert(n.to_owned());
                tree.aliased.insert(real.clone());
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
                    visit(&p, placeholder, tree)?;
                } else if let Some(parent) = p.parent()
                    && let Ok(parent) = std::fs::canonicalize(parent)
                {
                    tree.dirs.insert(parent);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
