//! Command-line definitions (clap derive only; no logic). Library code never sees these types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Release a Kubernetes operator: OLM bundle, validation, image, signature, catalog, Helm chart.
#[derive(Debug, Parser)]
#[command(name = "opship", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Project config (default: ./opship.yaml when it exists).
    #[arg(
        long,
        short = 'c',
        global = true,
        value_name = "FILE",
        env = "OPSHIP_CONFIG"
    )]
    pub config: Option<PathBuf>,
    /// More output (-v info, -vv debug).
    #[arg(long, short, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors.
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented starter opship.yaml.
    #[command(after_help = "Example:\n  opship init --package memcached-operator")]
    Init(InitArgs),
    /// Generate release artefacts.
    #[command(subcommand)]
    Generate(GenerateCommand),
    /// Validate bundles; list and explain the rules.
    #[command(
        after_help = "Examples:\n  opship validate bundle bundle/0.3.0\n  opship validate bundle bundles/*/* --select-optional all --k8s-version 1.30\n  opship validate bundle bundle/0.3.0 --output sarif > opship.sarif\n  opship validate --list-rules\n  opship validate --explain CSV004",
        args_conflicts_with_subcommands = true
    )]
    Validate(ValidateArgs),
    /// Build reproducible bundle images into an OCI layout (no container engine).
    #[command(
        after_help = "Prints one line per image: `TAG DIGEST`. Same bundle content, options and \
SOURCE_DATE_EPOCH → same digest on every machine.\n\nExamples:\n  opship build bundle/0.3.0\n  opship build bundle/* --layout dist/oci --archive dist/bundles.tar\n  opship build bundle/0.3.0 --tag v0.3.0 --label com.example.team=storage\n  skopeo copy oci:dist/oci:0.3.0 docker://quay.io/example/memcached-operator-bundle:v0.3.0"
    )]
    Build(BuildArgs),
    /// Push an image from an OCI layout to a registry (blobs the registry lacks, then the
    /// manifest by digest, then the tag).
    #[command(
        after_help = "Prints the pushed digest (with --all-tags: one `REF DIGEST` line per image). \
Credentials: --username/--password-stdin, else `opship login`'s Docker config, containers \
auth.json, credential helpers (docs/registry.md). Plain HTTP only for loopback registries or with \
--insecure.\n\nExamples:\n  opship push dist/oci:0.3.0 127.0.0.1:5000/memcached-operator-bundle:v0.3.0\n  \
opship push dist/oci quay.io/example --all-tags --jobs 8"
    )]
    Push(PushArgs),
    /// Pull an image from a registry into an OCI layout (every digest verified).
    #[command(
        after_help = "Example:\n  opship pull quay.io/example/bundle:v0.3.0 dist/pulled:0.3.0"
    )]
    Pull(PullArgs),
    /// Show a remote image's digest, media type and labels.
    Inspect(InspectArgs),
    /// List the tags of a repository.
    Tags(TagsArgs),
    /// Check credentials against a registry and store them in the Docker config.
    #[command(
        after_help = "Example:\n  printf '%s' \"$TOKEN\" | opship login quay.io -u robot --password-stdin"
    )]
    Login(LoginArgs),
}

/// Options of every registry command.
#[derive(Debug, Args)]
pub struct RegistryArgs {
    /// User name (with --password-stdin); default: stored credentials.
    #[arg(long, short = 'u', requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the password from standard input.
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
    /// Allow plain HTTP to a non-loopback registry.
    #[arg(long)]
    pub insecure: bool,
    /// Seconds without an answer or data before a request is given up (then retried).
    #[arg(
        long,
        env = "OPSHIP_REGISTRY_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 60.0
    )]
    pub timeout: f64,
    /// Retries of a request after 5xx, 429, a dropped connection or a timeout (backoff 250 ms,
    /// doubling).
    #[arg(
        long,
        env = "OPSHIP_REGISTRY_RETRIES",
        value_name = "N",
        default_value_t = 3
    )]
    pub retries: u32,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Source: `LAYOUT:TAG` (an OCI layout directory and the tag in it); with --all-tags, the
    /// layout directory.
    #[arg(value_name = "LAYOUT:TAG")]
    pub source: String,
    /// Destination `REGISTRY/REPO:TAG`; with --all-tags, a namespace `REGISTRY[/PATH]`.
    #[arg(value_name = "REF")]
    pub target: String,
    /// Push every tagged image of the layout under the namespace REF: `NAME:TAG` goes to
    /// `REF/NAME:TAG` (last path part of NAME), a plain `TAG` to `REF/<package>-bundle:TAG`.
    #[arg(long)]
    pub all_tags: bool,
    /// Images pushed at the same time with --all-tags (one connection pool is shared).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 8)]
    pub jobs: usize,
    /// Output format: `REF DIGEST` lines, or a JSON array.
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    /// Repository on the same registry to mount blobs from instead of uploading them.
    #[arg(long, value_name = "REPO")]
    pub from: Option<String>,
    /// Upload blobs in chunks (PATCH) instead of one PUT each.
    #[arg(long)]
    pub chunked: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    /// Source `REGISTRY/REPO:TAG` or `REGISTRY/REPO@DIGEST`.
    #[arg(value_name = "REF")]
    pub source: String,
    /// Destination `LAYOUT[:TAG]` (default tag: the reference's tag, else `latest`).
    #[arg(value_name = "LAYOUT[:TAG]")]
    pub target: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Image `REGISTRY/REPO:TAG` or `REGISTRY/REPO@DIGEST`.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct TagsArgs {
    /// Repository `REGISTRY/REPO`.
    #[arg(value_name = "REPO")]
    pub repository: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Registry host (`quay.io`, `127.0.0.1:5000`).
    pub server: String,
    /// User name.
    #[arg(long, short = 'u')]
    pub username: String,
    /// Read the password from standard input (required: passwords never go on the command line).
    #[arg(long, required = true)]
    pub password_stdin: bool,
    /// Allow plain HTTP to a non-loopback registry.
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegistryOutput {
    /// Plain text.
    Text,
    /// JSON.
    Json,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Bundle directories (`manifests/`, `metadata/`, optional `tests/scorecard/`).
    #[arg(required = true, value_name = "BUNDLE_DIR")]
    pub dirs: Vec<PathBuf>,
    /// OCI image layout to write the images into (created when missing; existing tags
    /// are replaced).
    #[arg(long, value_name = "DIR", default_value = "dist/oci")]
    pub layout: PathBuf,
    /// Tag of the image (only with one bundle; default: the CSV's spec.version, else the
    /// directory's name; `+` becomes `_`).
    #[arg(long, short)]
    pub tag: Option<String>,
    /// Manifest media types.
    #[arg(long, value_enum, default_value_t = ImageFormat::Oci)]
    pub format: ImageFormat,
    /// Also write a `docker load`-able archive (OCI layout + manifest.json) with every image,
    /// named `<package>-bundle:<tag>` unless the tag is a full reference.
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
    /// Extra image label `key=value` (repeatable; overrides an annotation of the same key).
    #[arg(long, value_name = "KEY=VALUE")]
    pub label: Vec<String>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = BuildOutput::Text)]
    pub output: BuildOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageFormat {
    /// OCI image-spec media types.
    Oci,
    /// Docker v2 schema 2 media types.
    Docker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BuildOutput {
    /// `TAG DIGEST` per image.
    Text,
    /// A JSON array of `{dir, tag, digest, config, layer, diffId, size}`.
    Json,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(subcommand)]
    pub command: Option<ValidateCommand>,
    /// List every rule: ID, level, suite and summary.
    #[arg(long, conflicts_with = "explain")]
    pub list_rules: bool,
    /// Print the full description of one rule.
    #[arg(long, value_name = "RULE-ID")]
    pub explain: Option<String>,
    /// Output of --list-rules: `text` or `markdown` (the form of docs/rules.md).
    #[arg(long, value_enum, default_value_t = RulesFormat::Text, requires = "list_rules")]
    pub rules_format: RulesFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RulesFormat {
    Text,
    Markdown,
}

#[derive(Debug, Subcommand)]
pub enum ValidateCommand {
    /// Validate bundle directories (`manifests/` + `metadata/`), like `operator-sdk bundle validate`.
    #[command(
        after_help = "Exit status: 0 clean or only warnings, 1 errors found, 2 a bundle could not be validated.\n\nExamples:\n  opship validate bundle bundle/0.3.0\n  opship validate bundle bundles/*/* --select-optional operatorhub,good-practices\n  opship validate bundle bundle/0.3.0 --select-optional deprecated-apis --k8s-version 1.29\n  opship validate bundle bundle/* --output github"
    )]
    Bundle(ValidateBundleArgs),
}

#[derive(Debug, Args)]
pub struct ValidateBundleArgs {
    /// Bundle directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Optional suites, comma-separated: operatorhub, good-practices, deprecated-apis,
    /// bundle-objects, olm-v1, rbac, crd-examples, or `all`. operator-sdk's selectors
    /// (`name=operatorhub`, `suite=operatorframework`) are accepted.
    #[arg(long, value_name = "SUITES", value_delimiter = ',')]
    pub select_optional: Vec<String>,
    /// Kubernetes version the bundle targets: APIs removed at or before it are errors
    /// (deprecated-apis suite), e.g. 1.30.
    #[arg(long, value_name = "VERSION")]
    pub k8s_version: Option<String>,
    /// JSON file `{"categories": [...]}` replacing the OperatorHub category list
    /// (like operator-sdk's OPERATOR_BUNDLE_CATEGORIES).
    #[arg(long, value_name = "FILE", env = "OPERATOR_BUNDLE_CATEGORIES")]
    pub categories: Option<PathBuf>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Text grouped per bundle (colour on a terminal unless NO_COLOR is set).
    Human,
    /// JSON, schema in docs/validation-output.md.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow annotations.
    Github,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// OLM package name (default: the current directory's name).
    #[arg(long)]
    pub package: Option<String>,
    /// Where to write the config.
    #[arg(long, default_value = "opship.yaml")]
    pub path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum GenerateCommand {
    /// Generate an OLM registry+v1 bundle (manifests/, metadata/, bundle.Dockerfile).
    #[command(after_help = "Examples:
  # The sample operator's 0.2.0, settings from bundle/opship.yaml:
  opship -c bundle/opship.yaml generate bundle --version 0.2.0
  # Every release listed in the config, failing if a committed bundle is out of date:
  opship -c bundle/opship.yaml generate bundle --all --check
  # operator-sdk style, from a kustomize build on stdin:
  kustomize build config/manifests | opship generate bundle --package my-operator \\
      --version 1.2.0 --channels stable --default-channel stable --replaces 1.1.0 \\
      --base-csv config/manifests/bases/my-operator.clusterserviceversion.yaml --output-dir bundle")]
    Bundle(Box<BundleArgs>),
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    /// Manifests: a kustomize-built YAML stream, a directory of manifests, or `-` for stdin
    /// (default: `manifests` from the config).
    #[arg(long, short, value_name = "PATH|-")]
    pub input: Option<String>,
    /// Base ClusterServiceVersion (default: `csvBase` from the config).
    #[arg(long, value_name = "FILE")]
    pub base_csv: Option<PathBuf>,
    /// Release version (strict semver, no leading `v`).
    #[arg(long, short = 'V', required_unless_present = "all")]
    pub version: Option<String>,
    /// Generate every release listed in the config.
    #[arg(long, conflicts_with_all = ["version", "output_dir", "replaces", "skips", "skip_range", "created_at"])]
    pub all: bool,
    /// OLM package name (default: `package` from the config).
    #[arg(long)]
    pub package: Option<String>,
    /// Channels, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<String>>,
    /// Default channel.
    #[arg(long)]
    pub default_channel: Option<String>,
    /// `spec.replaces`: the version (or CSV name) this release upgrades from.
    #[arg(long)]
    pub replaces: Option<String>,
    /// `spec.skips`: versions (or CSV names), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub skips: Option<Vec<String>>,
    /// `olm.skipRange` annotation, e.g. ">=1.0.0 <1.2.0".
    #[arg(long)]
    pub skip_range: Option<String>,
    /// Service accounts whose RBAC is folded into the CSV besides the deployments' own.
    #[arg(long, value_delimiter = ',')]
    pub extra_service_accounts: Option<Vec<String>>,
    /// Drop objects of this kind instead of refusing them (repeatable; default: Namespace).
    #[arg(long, value_name = "KIND")]
    pub exclude_kind: Vec<String>,
    /// Extra bundle label/annotation `key=value` (repeatable; added to the config's).
    #[arg(long, value_name = "KEY=VALUE")]
    pub label: Vec<String>,
    /// `createdAt` annotation. Without it (and without SOURCE_DATE_EPOCH) none is written,
    /// so regenerating an unchanged bundle changes nothing.
    #[arg(long, value_name = "RFC3339")]
    pub created_at: Option<String>,
    /// Output directory (default: `bundleDir` from the config, else `bundle`).
    #[arg(long, short)]
    pub output_dir: Option<PathBuf>,
    /// Write nothing; exit 1 and print a diff if the bundle on disk is out of date.
    #[arg(long)]
    pub check: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
