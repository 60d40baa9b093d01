//! The steps of a release as data: what each does (a typed [`Kind`]), the `opship` command
//! line that does the same by hand, what it reads and writes, the digest that proves it done,
//! and how far it is.

use std::path::PathBuf;

use serde::Serialize;

/// An image a step signs (or, later, attests): where it is and the identity signatures name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// The image digest (`sha256:…`).
    pub digest: String,
    /// The repository signatures name (`registry/path`, cosign's `docker-reference`).
    pub identity: String,
    /// Where the image is.
    pub location: Location,
}

/// Where an image is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Location {
    /// An OCI layout directory and tag.
    Layout {
        /// The layout directory.
        dir: PathBuf,
        /// The tag in it.
        tag: String,
    },
    /// A registry repository (`host/path`); the image is addressed by digest in it.
    Registry {
        /// `host[:port]/path`.
        repository: String,
    },
}

impl Subject {
    /// `REPO@DIGEST` or `LAYOUT:TAG`: the image as `opship sign`/`verify` name it.
    pub fn reference(&self) -> String {
        match &self.location {
            Location::Layout { dir, tag } => format!("{}:{tag}", opship_core::paths::show(dir)),
            Location::Registry { repository } => format!("{repository}@{}", self.digest),
        }
    }

    /// Where cosign keeps the signatures: `REPO:sha256-<hex>.sig` or `LAYOUT:sha256-<hex>.sig`.
    pub fn signature_reference(&self) -> String {
        let tag = format!("sha256-{}.sig", self.digest.trim_start_matches("sha256:"));
        match &self.location {
            Location::Layout { dir, .. } => format!("{}:{tag}", opship_core::paths::show(dir)),
            Location::Registry { repository } => format!("{repository}:{tag}"),
        }
    }
}

impl Subject {
    /// Where cosign keeps the attestations: `REPO:sha256-<hex>.att`.
    pub fn attestation_reference(&self) -> String {
        self.signature_reference()
            .trim_end_matches(".sig")
            .to_owned()
            + ".att"
    }
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Kind {
    /// Write the generated bundle directory.
    GenerateBundle,
    /// Validate the bundle (done on the staged copy, before anything is written).
    ValidateBundle,
    /// Write the bundle image into the layout.
    BuildBundle,
    /// Push an image of the layout to a registry tag.
    Push {
        /// The layout tag.
        tag: String,
        /// The registry reference (`host/path:tag`).
        target: String,
    },
    /// Generate the default signing key.
    GenerateKey,
    /// Sign an image (read: its digest; written: a signature in its `.sig`); done when a
    /// signature by the release key for the subject's identity verifies.
    Sign {
        /// The image signed.
        subject: Subject,
    },
    /// Attest an image with the release's SLSA v1 provenance (registry only; written: a layer
    /// of its `.att`); done when an attestation of the same statement by the release key
    /// verifies.
    Attest {
        /// The image attested.
        subject: Subject,
    },
    /// Add the bundle to a catalog.
    CatalogAdd {
        /// The catalog target's index (position in the plan's catalogs).
        target: usize,
    },
    /// Validate a catalog.
    CatalogValidate {
        /// The catalog target's index.
        target: usize,
    },
    /// Write the catalog image into the layout.
    CatalogBuild {
        /// The catalog target's index.
        target: usize,
    },
    /// Write the rendered Helm chart directory.
    ChartRender,
    /// Write the chart archive.
    ChartPackage,
    /// Push the chart to `oci://`.
    ChartPush {
        /// `host/path/name:version`.
        target: String,
    },
}

/// How far a step is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Already done; why we know.
    Done(String),
    /// Run by this release.
    Ran,
    /// Would run (dry run, or not reached).
    Planned,
    /// Cannot be checked before an earlier step has run (dry run).
    AfterEarlier,
}

impl State {
    /// `done`, `ran` or `planned`: the summary's status.
    pub fn word(&self) -> &'static str {
        match self {
            State::Done(_) => "done",
            State::Ran => "ran",
            State::Planned | State::AfterEarlier => "planned",
        }
    }

    /// Whether the step still has to run.
    pub fn pending(&self) -> bool {
        matches!(self, State::Planned | State::AfterEarlier)
    }
}

/// One step of the plan.
#[derive(Debug, Clone)]
pub struct Step {
    /// Stable id (`bundle`, `sign`, `catalog-add:<target>`, …).
    pub id: String,
    /// What it does.
    pub kind: Kind,
    /// For people.
    pub description: String,
    /// The `opship` command line that does the same by hand (empty when there is none).
    pub command: Vec<String>,
    /// What it reads (files, layout tags, references, digests).
    pub reads: Vec<String>,
    /// What it writes.
    pub writes: Vec<String>,
    /// The digest it produces (known ahead where staging gives it).
    pub digest: Option<String>,
    /// How far it is.
    pub state: State,
}

impl Step {
    /// [`Step::command`] as one POSIX shell line, each word quoted where the shell would
    /// read it otherwise (`'>=0.1.0 <0.3.0'`), so that a pasted line runs what the plan says.
    pub fn command_line(&self) -> String {
        shell_line(&self.command)
    }
}

/// `words` as one POSIX shell command line, quoted where needed.
pub fn shell_line(words: &[String]) -> String {
    // Arguments are Rust strings from flags and files, never NUL; should one be, it is shown
    // escaped rather than quoted wrongly.
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| format!("{words:?}"))
}

#[cfg(test)]
mod shell_tests {
    use super::*;

    /// Issue 28: `--skip-range-value >=0.1.0 <0.3.0` pasted unquoted is a redirection.
    #[test]
    fn command_lines_are_shell_quoted() {
        let words: Vec<String> = [
            "opship",
            "catalog",
            "add",
            "--skip-range-value",
            ">=0.1.0 <0.3.0",
            "--message",
            "it's $HOME",
            "plain",
        ]
        .map(String::from)
        .to_vec();
        let line = shell_line(&words);
        assert_ne!(line, words.join(" "));
        assert!(
            line.ends_with(" plain") && line.starts_with("opship catalog add "),
            "{line}"
        );
        // The shell itself reads back the same words.
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("sh")
            .current_dir(dir.path())
            .arg("-c")
            .arg(format!("set -- {line}; printf '%s\\0' \"$@\""))
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}");
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(String::from)
            .collect();
        assert_eq!(back, words, "{line}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "no redirection"
        );
    }
}
