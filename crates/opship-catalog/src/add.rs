//! `opship catalog add` and `opship catalog deprecate`: change one package of a catalog
//! directory (`index/<package>/`) under an exclusive lock, validate the whole package, and
//! only then replace its file atomically, so concurrent pipelines never lose each other's
//! entries and a killed run leaves the previous catalog in place.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{
    Bundle, Catalog, Channel, ChannelEntry, Deprecation, DeprecationEntry, Icon, Package, Reference,
};
use crate::validate;
use crate::write::{self, Format};

/// Which versions the new entry's `skipRange` admits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SkipRangePolicy {
    /// No skipRange.
    #[default]
    None,
    /// `>=X.Y.0 <X.Y.Z`: any earlier patch of the same minor upgrades straight to it.
    Minor,
    /// `>=X.0.0 <X.Y.Z`: any earlier version of the same major.
    Major,
    /// `<X.Y.Z`: any earlier version.
    All,
    /// A range written by the user.
    Custom(String),
}

impl SkipRangePolicy {
    /// A policy named in `opship.yaml`: `none`, `minor`, `major` or `all`.
    pub fn parse(name: &str) -> Option<SkipRangePolicy> {
        match name {
            "none" => Some(SkipRangePolicy::None),
            "minor" => Some(SkipRangePolicy::Minor),
            "major" => Some(SkipRangePolicy::Major),
            "all" => Some(SkipRangePolicy::All),
            _ => None,
        }
    }
}

/// What a `catalogs:` target of `opship.yaml` sets for the bundles added to it, as `catalog
/// add --target` and `release` apply it (flags of `catalog add` win over it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSettings {
    /// Its channels, when it names them (else the project's `channels` apply).
    pub channels: Option<Vec<String>>,
    /// `csvFormat`, else the format its `ocpVersion` needs, else `olm.bundle.object`.
    pub format: crate::render::CsvFormat,
    /// Its `skipRange` policy (`none` when unset).
    pub skip_range: SkipRangePolicy,
}

impl TargetSettings {
    /// The settings of `target`; an error names the target and the value it cannot use.
    pub fn of(target: &opship_core::config::CatalogTarget) -> Result<TargetSettings> {
        use crate::render::CsvFormat;
        let name = &target.name;
        let format = match (target.csv_format.as_deref(), target.ocp_version.as_deref()) {
            (Some(f), _) => CsvFormat::parse(f).ok_or_else(|| {
                Error::Usage(format!(
                    "catalog target `{name}`: csvFormat `{f}` is not bundle-object or \
                     csv-metadata"
                ))
            })?,
            (None, Some(v)) => CsvFormat::for_openshift(v).ok_or_else(|| {
                Error::Usage(format!(
                    "catalog target `{name}`: ocpVersion `{v}`: expected MAJOR.MINOR like 4.17"
                ))
            })?,
            (None, None) => CsvFormat::BundleObject,
        };
        let skip_range = match target.skip_range.as_deref() {
            None => SkipRangePolicy::None,
            Some(r) => SkipRangePolicy::parse(r).ok_or_else(|| {
                Error::Usage(format!(
                    "catalog target skipRange `{r}`: expected none, minor, major or all"
                ))
            })?,
        };
        Ok(TargetSettings {
            channels: target.channels.clone(),
            format,
            skip_range,
        })
    }

    /// The add options of a release into the target: its channels, else `project_channels`
    /// (an error when both are empty), its skipRange policy, no default channel.
    pub fn add_options(&self, target: &str, project_channels: &[String]) -> Result<AddOptions> {
        let channels = match &self.channels {
            Some(c) => c.clone(),
            None if !project_channels.is_empty() => project_channels.to_vec(),
            None => {
                return Err(Error::Usage(format!(
                    "catalog target `{target}`: name its channels (or the project's `channels`)"
                )));
            }
        };
        Ok(AddOptions {
            channels,
            default_channel: None,
            skip_range: self.skip_range.clone(),
            skips: SkipsPolicy::None,
            replace: false,
        })
    }
}

/// Which entries the new entry `skips`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SkipsPolicy {
    /// No skips.
    #[default]
    None,
    /// The other entries of the same major.minor (never the replaced head: skipping and
    /// replacing the same bundle makes OLM v0 ignore the replaces edge).
    SameMinor,
}

/// What `add` should do.
#[derive(Debug, Clone, Default)]
pub struct AddOptions {
    /// Channels to add the bundle to (created when missing).
    pub channels: Vec<String>,
    /// Make this channel the package's default.
    pub default_channel: Option<String>,
    /// skipRange policy.
    pub skip_range: SkipRangePolicy,
    /// skips policy.
    pub skips: SkipsPolicy,
    /// Replace a bundle of the same version instead of refusing.
    pub replace: bool,
}

/// What changed.
#[derive(Debug, Clone)]
pub struct AddOutcome {
    /// The file written.
    pub file: PathBuf,
    /// Per channel: the entry added (with its edges).
    pub entries: Vec<(String, ChannelEntry)>,
    /// Whether an existing bundle of the same version was replaced.
    pub replaced: Option<String>,
}

/// An exclusive lock on a package directory, held until dropped.
pub struct PackageLock {
    _file: File,
}

/// Creates `dir` if needed and takes an exclusive lock on it (blocking until other holders
/// are done), then removes what killed runs left there.
pub fn lock_dir(dir: &Path) -> Result<PackageLock> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let file = File::open(dir).map_err(|e| Error::io(dir, e))?;
    file.lock().map_err(|e| Error::io(dir, e))?;
    // A run killed between writing its temporary copy of the package's file and renaming it
    // leaves that copy (`.opship-` and six random characters, the one shape
    // `fsutil::is_temporary` knows); opm would read it as catalog content and every reader
    // refuses the catalog while it is there. Under the lock no other `add` is writing here,
    // and `sweep` leaves alone anything a live process holds or that merely looks alike.
    opship_core::fsutil::sweep(dir)?;
    Ok(PackageLock { _file: file })
}

/// The one catalog file of a package directory and its format: an existing `catalog.yaml`,
/// `catalog.json` or single file; `catalog.yaml` for a new package.
pub fn package_file(dir: &Path) -> Result<(PathBuf, Format)> {
    let files = if dir.is_dir() {
        crate::load::catalog_files(dir)?
    } else {
        Vec::new()
    };
    let file = match files.as_slice() {
        [] => dir.join("catalog.yaml"),
        [one] => one.clone(),
        many => {
            return Err(Error::Usage(format!(
                "{} holds {} catalog files ({}); `opship catalog add` keeps a package in one file: merge them first (`opship catalog render {} --output yaml`)",
                opship_core::paths::show(dir),
                many.len(),
                many.iter()
                    .map(|p| p
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
                opship_core::paths::show(dir)
            )));
        }
    };
    let format = if file.extension().is_some_and(|e| e == "json") {
        Format::Json
    } else {
        Format::Yaml
    };
    Ok((file, format))
}

/// Validates `cat` and writes it to `file` atomically.
fn commit(cat: &Catalog, file: &Path, format: Format) -> Result<()> {
    let report = validate::validate(cat);
    if !report.passed() {
        return Err(Error::Invalid(format!(
            "the result would not be a valid catalog, nothing written:\n{}",
            report.error_tree()
        )));
    }
    let text = write::to_string(cat, format)?;
    // 0644 for a new file: a catalog copied into an image (`ADD index /configs`) must be
    // readable by the non-root user opm serves as; a temporary file would otherwise keep 0600.
    // An existing file keeps its mode, and a read-only one is the user's "do not change".
    let mode = existing_mode(file)?.unwrap_or(0o644);
    opship_core::fsutil::write_atomic_with_mode(file, text.as_bytes(), mode)?;
    Ok(())
}

/// The permission bits of an existing catalog file; an error when it is read-only.
fn existing_mode(file: &Path) -> Result<Option<u32>> {
    let meta = match std::fs::metadata(file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(file, e)),
    };
    if meta.permissions().readonly() {
        return Err(Error::Usage(format!(
            "{} is read-only; nothing written (make it writable to change the catalog)",
            opship_core::paths::show(file)
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Ok(Some(meta.permissions().mode() & 0o7777))
    }
    #[cfg(not(unix))]
    Ok(Some(0o644))
}

/// Adds a rendered bundle to `index/<package>/`.
pub fn add(index: &Path, bundle: Bundle, opts: &AddOptions) -> Result<AddOutcome> {
    if bundle.package.is_empty() {
        return Err(Error::Usage(format!(
            "bundle {} names no package (operators.operatorframework.io.bundle.package.v1)",
            bundle.name
        )));
    }
    if opts.channels.is_empty() {
        return Err(Error::Usage(
            "name at least one channel (--channel stable,fast)".into(),
        ));
    }
    // The package becomes a directory name: checked before anything is created, so a bundle
    // naming `../../x` cannot make a directory outside the index.
    if let Some(p) = opship_core::naming::path_component_problem(&bundle.package) {
        return Err(Error::Usage(format!(
            "bundle {}: package name {p}; it cannot be a directory of the catalog",
            opship_core::naming::excerpt(&bundle.name)
        )));
    }
    if let Some(p) = opship_core::naming::csv_name_problem(&bundle.name) {
        return Err(Error::Usage(format!(
            "bundle name {p}; OLM refuses such a CSV name (rule CSV001)"
        )));
    }
    let dir = index.join(&bundle.package);
    let _lock = lock_dir(&dir)?;
    let (file, format) = package_file(&dir)?;
    let mut cat = if file.exists() {
        crate::load::load_file(&file)?
    } else {
        Catalog::default()
    };
    let outcome = apply_add(&mut cat, bundle, opts)?;
    commit(&cat, &file, format)?;
    Ok(AddOutcome { file, ..outcome })
}

/// The change of [`add`], on a catalog in memory.
pub fn apply_add(cat: &mut Catalog, bundle: Bundle, opts: &AddOptions) -> Result<AddOutcome> {
    let pkg = bundle.package.clone();
    let version_text = bundle.version().ok_or_else(|| {
        Error::Usage(format!("bundle {} has no olm.package version", bundle.name))
    })?;
    let version = crate::reference::parse_version(&version_text).map_err(|e| {
        Error::Usage(format!(
            "bundle {} version {version_text:?}: {e}",
            bundle.name
        ))
    })?;

    let mut replaced = None;
    if let Some(existing) = cat
        .bundles
        .iter()
        .find(|b| b.package == pkg && b.version().as_deref() == Some(version_text.as_str()))
    {
        if !opts.replace {
            return Err(Error::Usage(format!(
                "package {pkg} already has version {version_text} (bundle {}); pass --replace to replace it",
                existing.name
            )));
        }
        replaced = Some(existing.name.clone());
    }
    if replaced.as_deref() != Some(bundle.name.as_str())
        && cat
            .bundles
            .iter()
            .any(|b| b.package == pkg && b.name == bundle.name)
    {
        return Err(Error::Usage(format!(
            "package {pkg} already has a bundle named {} with another version",
            bundle.name
        )));
    }
    if let Some(old) = &replaced {
        cat.bundles
            .retain(|b| !(b.package == pkg && &b.name == old));
        for ch in cat.channels.iter_mut().filter(|c| c.package == pkg) {
            for e in &mut ch.entries {
                if &e.name == old {
                    e.name = bundle.name.clone();
                }
                if &e.replaces == old {
                    e.replaces = bundle.name.clone();
                }
                for s in &mut e.skips {
                    if s == old {
                        *s = bundle.name.clone();
                    }
                }
            }
        }
    }

    if !cat.packages.iter().any(|p| p.name == pkg) {
        cat.packages.push(new_package(&bundle, opts));
    }
    let versions = cat.versions();
    let mut added = Vec::new();
    for chname in &opts.channels {
        let idx = match cat
            .channels
            .iter()
            .position(|c| c.package == pkg && &c.name == chname)
        {
            Some(i) => i,
            None => {
                cat.channels.push(Channel {
                    name: chname.clone(),
                    package: pkg.clone(),
                    ..Default::default()
                });
                cat.channels.len() - 1
            }
        };
        let ch = &mut cat.channels[idx];
        if ch.entries.iter().any(|e| e.name == bundle.name) {
            // Already there (a --replace of the same name): edges stay as they are.
            continue;
        }
        let head = channel_head(ch)?;
        let mut entry = ChannelEntry {
            name: bundle.name.clone(),
            ..Default::default()
        };
        if let Some(head) = &head {
            if let Some(hv) = versions.get(&(pkg.clone(), head.clone()))
                && hv >= &version
            {
                return Err(Error::Usage(format!(
                    "channel {chname}: the head {head} has version {hv}, not below {version}; opship adds releases as the new head only"
                )));
            }
            entry.replaces = head.clone();
        }
        entry.skip_range = skip_range(&opts.skip_range, &version);
        if opts.skips == SkipsPolicy::SameMinor {
            for e in &ch.entries {
                if Some(&e.name) == head.as_ref() {
                    continue;
                }
                if let Some(v) = versions.get(&(pkg.clone(), e.name.clone()))
                    && v.major == version.major
                    && v.minor == version.minor
                    && v < &version
                {
                    entry.skips.push(e.name.clone());
                }
            }
        }
        ch.entries.push(entry.clone());
        added.push((chname.clone(), entry));
    }
    if let Some(d) = &opts.default_channel {
        let p = cat
            .packages
            .iter_mut()
            .find(|p| p.name == pkg)
            .expect("package exists");
        p.default_channel = d.clone();
    }
    cat.bundles.push(bundle);
    Ok(AddOutcome {
        file: PathBuf::new(),
        entries: added,
        replaced,
    })
}

/// The skipRange a policy gives `version`; empty when the range would admit nothing (the
/// first patch of a minor under `minor`, and so on).
pub fn skip_range(policy: &SkipRangePolicy, version: &semver::Version) -> String {
    let floor = match policy {
        SkipRangePolicy::None => return String::new(),
        SkipRangePolicy::Custom(r) => return r.clone(),
        SkipRangePolicy::Minor => semver::Version::new(version.major, version.minor, 0),
        SkipRangePolicy::Major => semver::Version::new(version.major, 0, 0),
        SkipRangePolicy::All => semver::Version::new(0, 0, 0),
    };
    if &floor >= version {
        return String::new();
    }
    if floor == semver::Version::new(0, 0, 0) {
        format!("<{version}")
    } else {
        format!(">={floor} <{version}")
    }
}

/// The channel's head as opm finds it (the entry nobody replaces or skips); `None` for an
/// empty channel; an error when the channel is already broken.
pub fn channel_head(ch: &Channel) -> Result<Option<String>> {
    if ch.entries.is_empty() {
        return Ok(None);
    }
    let incoming: std::collections::BTreeSet<&str> = ch
        .entries
        .iter()
        .flat_map(|e| {
            std::iter::once(e.replaces.as_str())
                .filter(|r| !r.is_empty())
                .chain(e.skips.iter().map(String::as_str))
        })
        .collect();
    let heads: Vec<&ChannelEntry> = ch
        .entries
        .iter()
        .filter(|e| !incoming.contains(e.name.as_str()))
        .collect();
    match heads.as_slice() {
        [one] => Ok(Some(one.name.clone())),
        _ => Err(Error::Invalid(format!(
            "channel {} of package {} has {} heads; fix it before adding releases (`opship catalog validate`)",
            ch.name,
            ch.package,
            heads.len()
        ))),
    }
}

/// A new `olm.package`: default channel as asked or the first channel, description and icon
/// from the bundle's CSV (as opm's semver template does).
fn new_package(bundle: &Bundle, opts: &AddOptions) -> Package {
    let csv = bundle.csv();
    let description = csv
        .as_ref()
        .and_then(|c| c.pointer("/spec/description"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let icon = csv
        .as_ref()
        .and_then(|c| c.pointer("/spec/icon/0"))
        .and_then(|i| {
            use base64::Engine;
            let data = i.get("base64data")?.as_str()?;
            Some(Icon {
                data: base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .ok(),
                media_type: i.get("mediatype")?.as_str()?.to_owned(),
            })
        });
    Package {
        name: bundle.package.clone(),
        default_channel: opts
            .default_channel
            .clone()
            .unwrap_or_else(|| opts.channels[0].clone()),
        icon,
        description,
        properties: Vec::new(),
        origin: None,
    }
}

/// What to deprecate.
#[derive(Debug, Clone)]
pub enum Target {
    /// The whole package.
    Package,
    /// A channel.
    Channel(String),
    /// A bundle.
    Bundle(String),
}

/// Adds (or updates the message of) a deprecation entry of `package`.
pub fn deprecate(index: &Path, package: &str, target: Target, message: &str) -> Result<PathBuf> {
    if message.trim().is_empty() {
        return Err(Error::Usage(
            "a deprecation needs a message (--message)".into(),
        ));
    }
    if let Some(p) = opship_core::naming::path_component_problem(package) {
        return Err(Error::Usage(format!("package name {p}")));
    }
    let dir = index.join(package);
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: no such package directory",
            opship_core::paths::show(&dir)
        )));
    }
    let _lock = lock_dir(&dir)?;
    let (file, format) = package_file(&dir)?;
    let mut cat = crate::load::load_file(&file)?;
    let reference = match target {
        Target::Package => Reference {
            schema: crate::model::SCHEMA_PACKAGE.into(),
            name: String::new(),
        },
        Target::Channel(n) => Reference {
            schema: crate::model::SCHEMA_CHANNEL.into(),
            name: n,
        },
        Target::Bundle(n) => Reference {
            schema: crate::model::SCHEMA_BUNDLE.into(),
            name: n,
        },
    };
    let idx = match cat.deprecations.iter().position(|d| d.package == package) {
        Some(i) => i,
        None => {
            cat.deprecations.push(Deprecation {
                package: package.to_owned(),
                ..Default::default()
            });
            cat.deprecations.len() - 1
        }
    };
    let d = &mut cat.deprecations[idx];
    match d.entries.iter_mut().find(|e| e.reference == reference) {
        Some(e) => e.message = message.to_owned(),
        None => d.entries.push(DeprecationEntry {
            reference,
            message: message.to_owned(),
        }),
    }
    commit(&cat, &file, format)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::CsvFormat;
    use opship_core::config::CatalogTarget;

    fn target(
        ocp: Option<&str>,
        format: Option<&str>,
        skip_range: Option<&str>,
        channels: Option<&[&str]>,
    ) -> CatalogTarget {
        CatalogTarget {
            name: "t".into(),
            dir: "catalogs/t".into(),
            ocp_version: ocp.map(str::to_owned),
            csv_format: format.map(str::to_owned),
            channels: channels.map(|c| c.iter().map(|s| s.to_string()).collect()),
            skip_range: skip_range.map(str::to_owned),
        }
    }

    #[test]
    fn a_target_gives_its_format_skip_range_and_channels() {
        let s = TargetSettings::of(&target(Some("4.17"), None, Some("minor"), None)).unwrap();
        assert_eq!(s.format, CsvFormat::CsvMetadata);
        assert_eq!(s.skip_range, SkipRangePolicy::Minor);
        let s = TargetSettings::of(&target(Some("v4.16"), None, None, None)).unwrap();
        assert_eq!(s.format, CsvFormat::BundleObject);
        assert_eq!(s.skip_range, SkipRangePolicy::None);
        // csvFormat wins over ocpVersion.
        let s = TargetSettings::of(&target(Some("4.18"), Some("bundle-object"), None, None));
        assert_eq!(s.unwrap().format, CsvFormat::BundleObject);

        let own = TargetSettings::of(&target(None, None, None, Some(&["fast"]))).unwrap();
        let opts = own.add_options("t", &["stable".to_owned()]).unwrap();
        assert_eq!(opts.channels, ["fast"]);
        let none = TargetSettings::of(&target(None, None, None, None)).unwrap();
        assert_eq!(
            none.add_options("t", &["stable".to_owned()])
                .unwrap()
                .channels,
            ["stable"]
        );
        let e = none.add_options("t", &[]).unwrap_err().to_string();
        assert!(e.contains("catalog target `t`: name its channels"), "{e}");
    }

    #[test]
    fn a_target_with_a_value_it_cannot_use_is_an_error_naming_it() {
        for (t, what) in [
            (target(Some("4"), None, None, None), "ocpVersion `4`"),
            (target(None, Some("json"), None, None), "csvFormat `json`"),
            (target(None, None, Some("patch"), None), "skipRange `patch`"),
        ] {
            let e = TargetSettings::of(&t).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
    }
}
