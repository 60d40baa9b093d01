//! Command-line definitions (clap derive only; no logic). Library code never sees these types.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Release a Kubernetes operator: OLM bundle, validation, image, signature, catalog, Helm chart.
#[derive(Debug, Parser)]
#[command(
    name = "opship",
    version,
    about,
    long_about = None,
    after_help = "Examples:\n  opship init --package memcached-operator\n  opship -c bundle/opship.yaml generate bundle --all --check\n  opship validate bundle bundle/0.3.0\n  opship build bundle/0.3.0\n  opship push dist/oci:0.3.0 quay.io/example/op-bundle:v0.3.0\n  opship help push\n\nShell completions: `opship completions bash`; man pages: `opship man --output DIR`."
)]
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
    #[command(
        after_help = "Examples:\n  opship init --package memcached-operator\n  opship init --path deploy/opship.yaml --force"
    )]
    Init(InitArgs),
    /// Generate release artefacts.
    #[command(
        subcommand,
        after_help = "Examples:\n  opship -c bundle/opship.yaml generate bundle --version 0.3.0\n  opship -c bundle/opship.yaml generate bundle --all --check"
    )]
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
        after_help = "Examples:\n  opship pull quay.io/example/bundle:v0.3.0 dist/pulled:0.3.0\n  opship pull 127.0.0.1:5000/memcached-operator-bundle@sha256:<hex> dist/pulled"
    )]
    Pull(PullArgs),
    /// Show a remote image's digest, media type and labels.
    #[command(
        after_help = "Examples:\n  opship inspect quay.io/example/memcached-operator-bundle:v0.3.0\n  opship inspect 127.0.0.1:5000/memcached-operator-bundle:v0.3.0 -o json | jq -r .digest"
    )]
    Inspect(InspectArgs),
    /// List the tags of a repository.
    #[command(
        after_help = "Examples:\n  opship tags quay.io/example/memcached-operator-bundle\n  opship tags 127.0.0.1:5000/memcached-operator-bundle -o json"
    )]
    Tags(TagsArgs),
    /// Check credentials against a registry and store them in the Docker config.
    #[command(
        after_help = "Examples:\n  printf '%s' \"$TOKEN\" | opship login quay.io -u robot --password-stdin\n  echo \"$REGISTRY_PASSWORD\" | opship login registry.example.com:5000 -u ci --password-stdin"
    )]
    Login(LoginArgs),
    /// Helm charts from bundles: render, package, index, push.
    #[command(
        subcommand,
        after_help = "Examples:\n  opship -c bundle/opship.yaml chart render --all --output dist/charts\n  opship chart package dist/charts/0.3.0/memcached-operator --destination dist/packages\n  opship chart push dist/packages/memcached-operator-0.3.0.tgz oci://quay.io/example/charts"
    )]
    Chart(ChartCommand),
    /// Render a bundle into exactly the objects OLM v1 installs (RBAC, CRDs, deployments,
    /// webhooks, certificates), as YAML.
    #[command(
        after_help = "BUNDLE is a bundle directory, `LAYOUT:TAG` / `oci:LAYOUT:TAG` (an image in an \
OCI layout) or a registry reference (pulled and verified first). The watch namespace decides the \
install mode: \"\" AllNamespaces, the install namespace OwnNamespace, another namespace \
SingleNamespace; default: \"\" when the CSV supports AllNamespaces, else the install namespace \
when it supports OwnNamespace, else it must be given. Without -o (or with `-o -`) one YAML \
stream goes to standard output; with `-o DIR` one file per object, `NN_<kind>_<name>.yaml`, \
replacing DIR as a whole. Details: docs/manifests.md.\n\nExamples:\n  opship manifests \
bundle/0.3.0 --namespace memcached-system\n  opship manifests bundle/0.3.0 -n op-system \
--watch-namespace team-a --inline-config config.yaml -o dist/manifests\n  opship manifests \
dist/oci:0.3.0 -n op-system --cert-provider cert-manager | kubectl apply -f -\n  opship \
manifests quay.io/example/op-bundle:v0.3.0 -n op-system -o dist/manifests --force"
    )]
    Manifests(ManifestsArgs),
    /// File-based catalogs: render, validate, add releases, deprecate, graph, templates, image.
    #[command(
        subcommand,
        after_help = "Examples:\n  opship catalog add --bundle bundle/0.3.0 --image quay.io/example/op-bundle:v0.3.0 --channel stable\n  opship catalog validate index\n  opship catalog build index --layout dist/catalog-oci --tag v4.17"
    )]
    Catalog(CatalogCommand),
    /// Manage cosign key pairs.
    #[command(
        subcommand,
        after_help = "Examples:\n  COSIGN_PASSWORD=… opship key generate\n  opship key generate --output-key-prefix release --password-file key-password.txt"
    )]
    Key(KeyCommand),
    /// Sign an image by digest with a cosign key (cosign's `.sig` format, no Fulcio/Rekor).
    #[command(
        after_help = "REF is a registry reference (a tag is resolved to its digest), or \
`LAYOUT:TAG` / `oci:LAYOUT:TAG` for an image in an OCI layout: the signature is then stored in \
the layout under the tag `sha256-<hex>.sig` and `opship push LAYOUT:TAG REF` carries it to the \
registry. The key password comes from --password-stdin (without -u), --password-file, \
COSIGN_PASSWORD (may be empty) or a prompt on a terminal. Signing again with the same key and \
annotations adds nothing (cosign's rule); with --bundle-format every check (the .sig manifest, \
the referrers, the sha256-<hex> fallback tag) passes before anything is written.\n\nExamples:\n  COSIGN_PASSWORD=… opship sign --key cosign.key \
quay.io/example/bundle:v0.3.0\n  opship sign --key cosign.key -a release=0.3.0 --identity \
quay.io/example/bundle dist/oci:0.3.0\n\nVerify elsewhere with: cosign verify --key cosign.pub \
--insecure-ignore-tlog=true REF"
    )]
    #[command(mut_arg("password_stdin", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset).help(
        "Read the key password from standard input (with -u USER: the registry password)"
    )))]
    Sign(SignArgs),
    /// Verify the cosign signatures of an image with a public key, or keylessly by the
    /// signing certificate's identity.
    #[command(
        after_help = "Checks each signature over its payload, the payload's digest \
against the image's, its type, its identity (the repository, unless --identity or \
--any-identity) and the -a annotations. Exit status: 0 at least one signature verified, 1 none \
did (the reason for each is printed), 2 usage or runtime error.\n\nExamples:\n  opship verify \
--key cosign.pub quay.io/example/bundle:v0.3.0\n  opship verify --key cosign.pub -o json \
--identity quay.io/example/bundle mirror.example.com/bundle:v0.3.0\n  opship verify \
--certificate-identity https://github.com/example/op/.github/workflows/release.yml@refs/tags/v0.3.0 \
--certificate-oidc-issuer https://token.actions.githubusercontent.com quay.io/example/bundle:v0.3.0\n\n\
Without --key the signature is verified keylessly (Sigstore bundle or cosign 2 certificate \
annotations): the certificate chain to --trusted-root (default: the public-good root), the \
transparency log, the signing time and the identity options; see docs/signing.md."
    )]
    Verify(VerifyArgs),
    /// Attest an image: sign a predicate (SLSA provenance, SBOM, custom) as an in-toto
    /// statement in cosign's format.
    #[command(
        mut_arg("password_stdin", |a| a.requires(clap::builder::Resettable::<clap::Id>::Reset).help(
            "Read the key password from standard input (with -u USER: the registry password)"
        )),
        after_help = "The statement is signed as a DSSE envelope and stored as a layer of the `sha256-<hex>.att` manifest (cosign 2's format), or with --bundle-format as a Sigstore bundle referrer (cosign 3's default). The same statement already there and verifying with the key is not added again. --type: slsaprovenance, slsaprovenance02, slsaprovenance1, link, spdx, spdxjson, cyclonedx, vuln, openvex, custom, or a predicate type URI; the predicate file is JSON.\n\nExamples:\n  COSIGN_PASSWORD=… opship attest --key cosign.key --type slsaprovenance1 --predicate provenance.json quay.io/example/bundle:v0.3.0\n  opship attest --key cosign.key --password-stdin --type cyclonedx --predicate sbom.json --bundle-format quay.io/example/bundle@sha256:…\n\nVerify elsewhere with: cosign verify-attestation --key cosign.pub --type slsaprovenance1 --insecure-ignore-tlog=true REF"
    )]
    Attest(AttestArgs),
    /// Verify the attestations of an image with a public key, or keylessly by the signing
    /// certificate's identity.
    #[command(
        after_help = "Checks each attestation (`.att` layers, Sigstore bundle and DSSE referrers): the DSSE signature with the key, the statement's subject against the image digest, and with --type its predicate type. Exit status: 0 at least one attestation verified, 1 none did (the reason for each is printed), 2 usage or runtime error.\n\nExamples:\n  opship verify-attestation --key cosign.pub --type slsaprovenance1 quay.io/example/bundle:v0.3.0\n  opship verify-attestation --key cosign.pub -o json quay.io/example/bundle:v0.3.0\n  opship verify-attestation --certificate-identity signer@example.com --certificate-oidc-issuer https://accounts.google.com --type slsaprovenance1 quay.io/example/bundle:v0.3.0"
    )]
    VerifyAttestation(VerifyAttestationArgs),
    /// Verify a Sigstore bundle over a file (cosign's `verify-blob`): keyless by identity, or
    /// with a key.
    #[command(
        after_help = "Checks the bundle (v0.1 to v0.3, message signature or DSSE envelope): the signature over the file, the transparency-log entries (inclusion proof, checkpoint, promise) and their match with the signature, the signing time (Rekor integrated time or RFC 3161 timestamp), the certificate's chain to the trusted root's Fulcio, its validity at that time, its SCT, and the identity policy. Exit status: 0 verified, 1 refused (the reason is printed), 2 usage or runtime error.\n\nExamples:\n  opship verify-blob --bundle a.txt.sigstore.json --certificate-identity https://github.com/example/op/.github/workflows/release.yml@refs/tags/v1.0.0 --certificate-oidc-issuer https://token.actions.githubusercontent.com a.txt\n  opship verify-blob --bundle a.txt.sigstore.json --key cosign.pub --trusted-root trusted_root.json a.txt"
    )]
    VerifyBlob(VerifyBlobArgs),
    /// Print a shell completion script (generated from these command definitions).
    #[command(after_help = "Examples:
  # bash, for the current shell and for every new one:
  source <(opship completions bash)
  opship completions bash > ~/.local/share/bash-completion/completions/opship
  # zsh (a directory on $fpath), fish:
  opship completions zsh > ~/.zfunc/_opship
  opship completions fish > ~/.config/fish/completions/opship.fish")]
    Completions(CompletionsArgs),
    /// Write the man pages: opship.1 and one page per subcommand (opship-push.1, ...).
    #[command(after_help = "Without --output the main page goes to standard output.

Examples:
  opship man | man -l -
  opship man --output /usr/local/share/man/man1
  man -l dist/man/opship-push.1")]
    Man(ManArgs),
    /// Release one version: generate, validate, build, push, sign, catalog, chart; resumable.
    #[command(
        after_help = "Steps already done (same digest in the layout or registry, signature \
present, catalog entry with the same image, same chart) are skipped, so a failed release is \
finished by running the same command again. Without a registry (--registry, OPSHIP_REGISTRY \
or `registry:` in opship.yaml) images stay in the OCI layout dist/oci. Without a key \
(--key, OPSHIP_SIGNING_KEY or `signing:`) one is generated once under .opship/ next to the \
config, unless an identity token is there (GitHub Actions with `id-token: write`, \
SIGSTORE_ID_TOKEN, --identity-token) and a registry: then the release signs keylessly, and \
its checks look for keyless signatures by that identity (--trusted-root). Details: \
docs/release.md.\n\nExamples:\n  opship -c bundle/opship.yaml release \
--version 0.3.0\n  opship -c bundle/opship.yaml release --version 0.3.0 --dry-run\n  \
COSIGN_PASSWORD=… opship release --version 1.2.0 --registry quay.io/example --key cosign.key \
-o json\n  opship release --version 1.2.0 --registry registry.example:5000/op --identity-token \
token.jwt --signing-config signing_config.json --trusted-root trusted_root.json"
    )]
    Release(ReleaseArgs),
}

/// Shells `opship completions` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
    /// PowerShell.
    Powershell,
    /// Elvish.
    Elvish,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write opship.1 and opship-<command>[-<subcommand>].1 into (created when
    /// missing); default: print the main page to standard output.
    #[arg(long, short, value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// `opship release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The version to release (strict semver, no leading `v`).
    #[arg(long, short = 'V')]
    pub version: String,
    /// Print the plan (every step, artefact, reference and file) and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Summary format.
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    /// Push to `REGISTRY[/NAMESPACE]` (default: `registry` of the config; none: OCI layout only).
    #[arg(long, env = "OPSHIP_REGISTRY", value_name = "REGISTRY/NAMESPACE")]
    pub registry: Option<String>,
    /// Cosign private key (default: `signing.key` of the config, else .opship/cosign.key).
    #[arg(long, env = "OPSHIP_SIGNING_KEY", value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Read the key password from standard input (over COSIGN_PASSWORD; a
    /// `signing.passwordFile` still comes first).
    #[arg(long)]
    pub password_stdin: bool,
    /// Allow plain HTTP to a non-loopback registry.
    #[arg(long)]
    pub insecure: bool,
    /// Progress as events while the steps run, on standard error: `jsonl` is one JSON object
    /// per step start, finish and skip (with the step id), instead of the progress lines.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub events: Option<EventFormat>,
    /// Keyless signing, used when no key is configured (no --key, no `signing:`), the release
    /// pushes to a registry and an identity token is there.
    #[command(flatten)]
    pub keyless: KeylessArgs,
    /// Keyless: cosign 3's trusted_root.json the checks verify the release's own keyless
    /// signatures and attestations against, so a re-run finds them (default:
    /// `trusted_root.json` beside --signing-config, else the public-good root).
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
}

/// `release --events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventFormat {
    /// One JSON object per line.
    Jsonl,
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
    /// Seconds without an answer or data before a request is given up (then retried); see
    /// --deadline for the whole command.
    #[arg(
        long,
        env = "OPSHIP_REGISTRY_TIMEOUT",
        value_name = "SECONDS",
        default_value_t = 60.0
    )]
    pub timeout: f64,
    /// Retries of a request after 408, 429, 500, 502, 503, 504, a dropped connection or a
    /// timeout (backoff 250 ms, doubling); other answers are final.
    #[arg(
        long,
        env = "OPSHIP_REGISTRY_RETRIES",
        value_name = "N",
        default_value_t = 3
    )]
    pub retries: u32,
}

/// The deadline of a registry command (its own struct: `RegistryArgs` is also built in code).
#[derive(Debug, Args)]
pub struct DeadlineArgs {
    /// Seconds the whole command may spend on the registry (every request and byte, retries
    /// and backoff included); 0 for no deadline. A server that trickles data keeps --timeout
    /// from firing, never this.
    #[arg(
        long,
        env = "OPSHIP_REGISTRY_DEADLINE",
        value_name = "SECONDS",
        default_value_t = 600.0
    )]
    pub deadline: f64,
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
    #[command(flatten)]
    pub limits: DeadlineArgs,
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
    #[command(flatten)]
    pub limits: DeadlineArgs,
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
    #[command(flatten)]
    pub limits: DeadlineArgs,
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
    #[command(flatten)]
    pub limits: DeadlineArgs,
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
    #[command(flatten)]
    pub limits: DeadlineArgs,
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
    /// Validate every bundle of an operator directory with the community-operators pipeline's
    /// checks (the `community` suite, operator-level checks reported once).
    #[command(
        after_help = "Exit status: 0 clean or only warnings, 1 errors found, 2 the operator or a bundle could not be validated.\n\nExamples:\n  opship validate operator operators/my-operator\n  opship validate operator operators/my-operator --select-optional suite=operatorframework -o json"
    )]
    Operator(ValidateOperatorArgs),
    /// Check an upgrade before publishing it: the CRDs of NEW against those of OLD, with OLM
    /// v1's CRD upgrade-safety rules and the checks of docs/upgrade.md.
    #[command(
        after_help = "Exit status: 0 safe (or only warnings), 1 the upgrade is unsafe, 2 a bundle could not be read.\n\nExamples:\n  opship validate upgrade --from bundle/0.2.0 --to bundle/0.3.0\n  opship validate upgrade --from quay.io/example/op-bundle:v0.2.0 --to bundle/0.3.0 -o sarif"
    )]
    Upgrade(ValidateUpgradeArgs),
}

#[derive(Debug, Args)]
pub struct ValidateUpgradeArgs {
    /// The release users run: a bundle directory, `LAYOUT:TAG` or a registry reference.
    #[arg(long, value_name = "OLD")]
    pub from: PathBuf,
    /// The release to publish, in the same forms.
    #[arg(long, value_name = "NEW")]
    pub to: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

/// Who issues the serving certificates of webhooks (`opship manifests --cert-provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CertProviderArg {
    /// cert-manager: a self-signed Issuer and a Certificate per webhook deployment.
    CertManager,
    /// OpenShift's service CA operator: serving-cert and inject-cabundle annotations.
    #[value(name = "openshift-serviceca")]
    OpenshiftServiceca,
}

/// `opship manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// Bundle directory, `LAYOUT:TAG` (an image in an OCI layout) or a registry reference.
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,
    /// The namespace the operator is installed into.
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: String,
    /// The namespace the operator watches: "" for all namespaces (overrides `watchNamespace` of
    /// --inline-config; default: "" when the CSV supports AllNamespaces, else --namespace when
    /// it supports OwnNamespace).
    #[arg(long, value_name = "NS")]
    pub watch_namespace: Option<String>,
    /// OLM v1 inline config (a ClusterExtension's `spec.config.inline`): YAML or JSON with
    /// `watchNamespace` and `deploymentConfig`; unknown keys and wrong types are errors.
    #[arg(long, value_name = "FILE")]
    pub inline_config: Option<PathBuf>,
    /// Issue webhook serving certificates with this provider (default: none: webhooks are
    /// rendered without certificates, with a warning, as OLM v1 installs webhooks only with
    /// a provider).
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub cert_provider: Option<CertProviderArg>,
    /// Where to write: `-` for one YAML stream on standard output (the default), or a
    /// directory to hold one `NN_<kind>_<name>.yaml` per object (replaced as a whole).
    #[arg(long, short, value_name = "DIR|-", default_value = "-")]
    pub output: PathBuf,
    /// Replace the output directory even if it holds files opship does not generate there.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ValidateBundleArgs {
    /// Bundle directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub suites: ValidateSuiteArgs,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

#[derive(Debug, Args)]
pub struct ValidateOperatorArgs {
    /// An operator directory of a community-operators style repository
    /// (`operators/<name>` with `ci.yaml` and one directory per bundle version).
    #[arg(value_name = "OPDIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub suites: ValidateSuiteArgs,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = OutputFormat::Human)]
    pub output: OutputFormat,
}

/// What `validate bundle` and `validate operator` run.
#[derive(Debug, Args)]
pub struct ValidateSuiteArgs {
    /// Optional suites, comma-separated: operatorhub, good-practices, deprecated-apis,
    /// bundle-objects, olm-v1, rbac, crd-examples, community, or `all` (all but community).
    /// operator-sdk's selectors (`name=operatorhub`, `suite=operatorframework`) are accepted.
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
    /// The catalog indices of the repository's organization, comma-separated (`v4.16,v4.17`),
    /// as Red Hat's Pyxis service lists them: lets the community suite's
    /// check_replaces_availability compare two OpenShift version ranges (skipped without).
    #[arg(long, value_name = "VERSIONS", value_delimiter = ',')]
    pub ocp_indices: Option<Vec<String>>,
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
    #[arg(long, conflicts_with = "from_operator_sdk")]
    pub package: Option<String>,
    /// Adopt an operator-sdk/kubebuilder project (default when ./PROJECT exists): read
    /// PROJECT, the Makefile's variables, config/manifests and config/manager, and write the
    /// opship.yaml that reproduces its `make bundle`.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub from_operator_sdk: Option<PathBuf>,
    /// With --from-operator-sdk: the kustomization to build, relative to DIR (default: what
    /// the Makefile's bundle recipe builds, else config/manifests).
    #[arg(long, value_name = "DIR")]
    pub manifests: Option<PathBuf>,
    /// With --from-operator-sdk: a make variable as on make's command line (`IMG=…`),
    /// repeatable.
    #[arg(long = "set", value_name = "VAR=VALUE")]
    pub make_vars: Vec<String>,
    /// With --from-operator-sdk: the Makefile target that makes the bundle (default `bundle`;
    /// e.g. `bundle-k8s` when the project has several). Read from a dry run of the project's
    /// own make (`make -n`), which evaluates `$(shell ...)` as `make bundle` does.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// When adopting: let make run what `make -n` runs in spite of -n (recipe lines marked
    /// `+` or holding `$(MAKE)`, rules that remake included makefiles), each named in a
    /// warning first. Without it, make's dry run records them and runs none.
    #[arg(long)]
    pub run_make: bool,
    /// Where to write the config (default: opship.yaml, in DIR when adopting).
    #[arg(long)]
    pub path: Option<PathBuf>,
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
  # The same against a bundle operator-sdk committed: only real differences, not layout:
  opship -c opship.yaml generate bundle --version 0.0.1 --output-dir bundle --check --semantic
  # Images pinned to the digests the registries serve for their tags:
  opship -c bundle/opship.yaml generate bundle --version 0.3.0 --use-image-digests
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
    pub input: Option<PathBuf>,
    /// Base ClusterServiceVersion (default: `csvBase` from the config).
    #[arg(long, value_name = "FILE")]
    pub base_csv: Option<PathBuf>,
    /// Release version (strict semver, no leading `v`; default: `spec.version` of the base
    /// CSV, as operator-sdk takes it).
    #[arg(long, short = 'V')]
    pub version: Option<String>,
    /// Generate every release listed in the config.
    #[arg(long, conflicts_with_all = ["version", "output_dir", "replaces", "skips", "skip_range", "created_at"])]
    pub all: bool,
    /// OLM package name (default: `package` from the config).
    #[arg(long)]
    pub package: Option<String>,
    /// Channels, comma-separated (default: the release's or the config's `channels`, else
    /// alpha).
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<String>>,
    /// Default channel (default: `defaultChannel` from the config; `""` for none, over the
    /// config's).
    #[arg(long, value_name = "CHANNEL")]
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
    /// Also drop objects of this kind instead of refusing them (repeatable; added to
    /// `excludeKinds` from the config, or to the default list, Namespace).
    #[arg(long, value_name = "KIND")]
    pub exclude_kind: Vec<String>,
    /// The operator image, for containers whose image is the placeholder (over `operator.image`
    /// and `operator.tag` from the config; without a tag, the config's tag pattern or
    /// `v{version}`; placeholder: the config's, else `controller`).
    #[arg(long, value_name = "REPO[:TAG]")]
    pub operator_image: Option<String>,
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
    /// With --check: compare parsed objects instead of bytes (objects matched by kind and name
    /// whatever their file names; key order, comments, empty fields and operator-sdk's tool
    /// annotations ignored) and print the real differences.
    #[arg(long, requires = "check")]
    pub semantic: bool,
    /// Replace the output directory even when it holds files a bundle does not have (never the
    /// current directory, an ancestor of it, or a symlink).
    #[arg(long)]
    pub force: bool,
    /// Pin every image given by tag to its digest (`repo@sha256:…`), asking the registries
    /// (default: `useImageDigests` from the config). Multi-arch images keep the index digest.
    #[arg(long)]
    pub use_image_digests: bool,
    /// With --use-image-digests: allow plain HTTP to non-loopback registries.
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, Subcommand)]
pub enum ChartCommand {
    /// Render a Helm chart directory from a bundle (Chart.yaml, values, schema, templates,
    /// values-<env>.yaml per environment of the config).
    #[command(
        after_help = "One bundle writes OUTPUT/<name>/, several (or --all) write \
OUTPUT/<version>/<name>/. The directory is replaced atomically; nothing is written on error.

Examples:
  opship -c bundle/opship.yaml chart render --bundle bundle/0.3.0
  opship -c bundle/opship.yaml chart render --all --output dist/charts
  opship chart render --bundle bundle/0.3.0 --templates my-templates/ --crds crds"
    )]
    Render(ChartRenderArgs),
    /// Package chart directories into reproducible <name>-<version>.tgz archives.
    #[command(
        after_help = "Entry mtimes are SOURCE_DATE_EPOCH (or 0): the same files give the same bytes.\n\nExamples:\n  opship chart package dist/charts/memcached-operator --destination dist/packages\n  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) opship chart package dist/charts/*/memcached-operator -d dist/packages"
    )]
    Package(ChartPackageArgs),
    /// Write index.yaml for the chart archives in a directory.
    #[command(
        after_help = "`created` of new entries and `generated` are SOURCE_DATE_EPOCH (else now).\n\nExamples:\n  opship chart index dist/packages --url https://example.github.io/charts\n  opship chart index dist/packages --merge gh-pages/index.yaml"
    )]
    Index(ChartIndexArgs),
    /// Push a chart archive to an OCI registry with Helm's media types.
    #[command(
        after_help = "The chart goes to REPO/<name>:<version> (`+` in the version becomes `_`), as \
`helm push` puts it; `helm pull oci://REGISTRY/REPO/<name> --version <version>` gets it back.\n\nExamples:\n  opship chart push dist/packages/memcached-operator-0.3.0.tgz oci://127.0.0.1:5000/charts\n  opship chart push dist/packages/memcached-operator-0.3.0.tgz oci://quay.io/example/charts --force"
    )]
    Push(ChartPushArgs),
}

#[derive(Debug, Args)]
pub struct ChartRenderArgs {
    /// Bundle directory (repeatable).
    #[arg(long, short, value_name = "DIR", required_unless_present = "all")]
    pub bundle: Vec<PathBuf>,
    /// Every release of the config (its bundle directories).
    #[arg(long, conflicts_with = "bundle")]
    pub all: bool,
    /// Output directory (default: `chart.output` of the config, else dist/charts).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Directory of templates replacing (same relative path) or adding to the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Chart name (default: `chart.name` of the config, else the bundle's package).
    #[arg(long)]
    pub name: Option<String>,
    /// Where CRDs go: `templates` (upgraded with the release, behind crd.enabled) or `crds`
    /// (Helm's crds/: installed once, never upgraded). Default: `chart.crds`, else templates.
    #[arg(long, value_name = "templates|crds")]
    pub crds: Option<String>,
    /// Also write kustomize overlays next to the chart: OUTPUT[/<version>]/overlays/{base,<env>}.
    #[arg(long)]
    pub overlays: bool,
    /// Replace an existing chart or overlay directory even when it holds files opship does not
    /// write there (default: refuse). Never the current directory, a parent of it or a symlink.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ChartPackageArgs {
    /// Chart directories.
    #[arg(required = true, value_name = "CHART_DIR")]
    pub charts: Vec<PathBuf>,
    /// Where the archives go (default: the current directory).
    #[arg(long, short, default_value = ".")]
    pub destination: PathBuf,
}

#[derive(Debug, Args)]
pub struct ChartIndexArgs {
    /// Directory holding the chart archives; index.yaml is written there.
    pub dir: PathBuf,
    /// Base URL of the archives (default: relative file names).
    #[arg(long)]
    pub url: Option<String>,
    /// Existing index to merge (keeps its other charts and unchanged entries' `created`).
    #[arg(long, value_name = "FILE")]
    pub merge: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ChartPushArgs {
    /// The chart archive.
    pub chart: PathBuf,
    /// `oci://REGISTRY/REPO`.
    pub remote: String,
    /// Push even if the tag exists with different content (default: refuse).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Generate an encrypted cosign key pair (`<prefix>.key`, mode 0600, and `<prefix>.pub`).
    #[command(
        after_help = "The private key is PEM `ENCRYPTED SIGSTORE PRIVATE KEY` (scrypt \
N=32768 r=8 p=1, nacl/secretbox), readable by cosign and skopeo. Password: --password-stdin, \
--password-file, COSIGN_PASSWORD (may be empty), or a prompt (twice) on a terminal.\n\nExamples:\n  \
COSIGN_PASSWORD=… opship key generate --output-key-prefix release\n  \
opship key generate --password-file key-password.txt --force"
    )]
    Generate(KeyGenerateArgs),
}

#[derive(Debug, Args)]
pub struct KeyGenerateArgs {
    /// File name prefix: writes PREFIX.key and PREFIX.pub.
    #[arg(long, default_value = "cosign", value_name = "PREFIX")]
    pub output_key_prefix: PathBuf,
    /// Read the key password from this file (first line).
    #[arg(long, value_name = "FILE", conflicts_with = "password_stdin")]
    pub password_file: Option<PathBuf>,
    /// Read the key password from standard input (its first line).
    #[arg(long)]
    pub password_stdin: bool,
    /// Overwrite existing key files.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// Encrypted cosign private key; without it, keyless signing (an identity token, Fulcio,
    /// Rekor, a timestamp).
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Read the key password from this file (first line) instead of COSIGN_PASSWORD.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Annotation `key=value` for the payload's `optional` section (repeatable).
    #[arg(long = "annotation", short = 'a', value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    /// Identity (`critical.identity.docker-reference`) to sign instead of the image's
    /// repository; required for a layout image whose tag is not a full reference.
    #[arg(long, value_name = "REGISTRY/REPO")]
    pub identity: Option<String>,
    /// Also attach a Sigstore bundle (v0.3, DSSE) as an OCI 1.1 referrer, with the
    /// `sha256-<hex>` fallback tag on registries without the referrers API.
    #[arg(long)]
    pub bundle_format: bool,
    /// Keyless: cosign 3's trusted_root.json; the certificate chain (and SCT, if any), log
    /// entry and inclusion proof, and timestamp the services return are verified against it
    /// before anything is written, as cosign 3's `--trusted-root` does.
    #[arg(long, value_name = "FILE", conflicts_with = "key")]
    pub trusted_root: Option<PathBuf>,
    /// Images: `REGISTRY/REPO:TAG`, `REGISTRY/REPO@DIGEST`, `LAYOUT:TAG` or `oci:LAYOUT:TAG`.
    #[arg(value_name = "REF", required = true)]
    pub references: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: DeadlineArgs,
    #[command(flatten)]
    pub keyless: KeylessArgs,
}

#[derive(Debug, Args)]
pub struct AttestArgs {
    /// Encrypted cosign private key; without it, keyless signing (an identity token, Fulcio,
    /// Rekor, a timestamp).
    #[arg(long, value_name = "KEY")]
    pub key: Option<PathBuf>,
    /// Read the key password from this file (first line) instead of COSIGN_PASSWORD.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// The predicate (JSON).
    #[arg(long, value_name = "FILE")]
    pub predicate: PathBuf,
    /// Predicate type: slsaprovenance, slsaprovenance1, spdxjson, cyclonedx, custom, … or a URI.
    #[arg(long = "type", value_name = "TYPE", default_value = "custom")]
    pub kind: String,
    /// Store a Sigstore bundle referrer only (cosign 3's default). Without it or --format,
    /// a `.att` layer and a bundle referrer both (with --key always; keylessly next to a
    /// `.sig` or `.att`), so cosign 2 and cosign 3 both find it.
    #[arg(long)]
    pub bundle_format: bool,
    /// Keyless: cosign 3's trusted_root.json; the certificate chain (and SCT, if any), log
    /// entry and inclusion proof, and timestamp the services return are verified against it
    /// before anything is written, as cosign 3's `--trusted-root` does.
    #[arg(long, value_name = "FILE", conflicts_with = "key")]
    pub trusted_root: Option<PathBuf>,
    /// Images: `REGISTRY/REPO:TAG` or `REGISTRY/REPO@DIGEST`.
    #[arg(value_name = "REF", required = true)]
    pub references: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: DeadlineArgs,
    #[command(flatten)]
    pub keyless: KeylessArgs,
}

#[derive(Debug, Args)]
pub struct VerifyAttestationArgs {
    /// Public key (PEM `PUBLIC KEY`); without it, keyless by the certificate identity options.
    #[arg(long, value_name = "PUB", conflicts_with_all = ["certificate_identity", "certificate_identity_regexp"])]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub keyless: KeylessVerifyArgs,
    /// Only statements of this predicate type pass (a --type name of `attest`, or a URI).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// Output: text, or JSON (the verified statements).
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    /// Images: `REGISTRY/REPO:TAG` or `REGISTRY/REPO@DIGEST`.
    #[arg(value_name = "REF", required = true)]
    pub references: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: DeadlineArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Public key (PEM `PUBLIC KEY`); without it, keyless by the certificate identity options.
    #[arg(long, value_name = "PUB", conflicts_with_all = ["certificate_identity", "certificate_identity_regexp"])]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub keyless: KeylessVerifyArgs,
    /// Annotation `key=value` the payload must carry (repeatable).
    #[arg(long = "annotation", short = 'a', value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    /// Repository the signatures must name (default: the image's own repository).
    #[arg(long, value_name = "REGISTRY/REPO", conflicts_with = "any_identity")]
    pub identity: Option<String>,
    /// Accept any identity (as `cosign verify` does).
    #[arg(long)]
    pub any_identity: bool,
    /// Output: text, or JSON (the verified payloads, as `cosign verify` prints them).
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    /// Images: `REGISTRY/REPO:TAG`, `REGISTRY/REPO@DIGEST`, `LAYOUT:TAG` or `oci:LAYOUT:TAG`.
    #[arg(value_name = "REF", required = true)]
    pub references: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: DeadlineArgs,
}

/// Who must have signed a keyless signature (cosign's flags).
#[derive(Debug, Clone, Args, Default)]
pub struct CertificateIdentityArgs {
    /// The certificate's identity (email or URI SAN), exactly.
    #[arg(
        long,
        value_name = "ID",
        conflicts_with = "certificate_identity_regexp"
    )]
    pub certificate_identity: Option<String>,
    /// A regular expression the identity must match (unanchored, as cosign's).
    #[arg(long, value_name = "RE")]
    pub certificate_identity_regexp: Option<String>,
    /// The OIDC issuer Fulcio recorded, exactly.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "certificate_oidc_issuer_regexp"
    )]
    pub certificate_oidc_issuer: Option<String>,
    /// A regular expression the OIDC issuer must match.
    #[arg(long, value_name = "RE")]
    pub certificate_oidc_issuer_regexp: Option<String>,
    /// GitHub Actions: the repository (`owner/repo`) the workflow ran in.
    #[arg(long, value_name = "OWNER/REPO")]
    pub certificate_github_workflow_repository: Option<String>,
    /// GitHub Actions: the git ref the workflow ran for.
    #[arg(long, value_name = "REF")]
    pub certificate_github_workflow_ref: Option<String>,
    /// GitHub Actions: the commit the workflow ran for.
    #[arg(long, value_name = "SHA")]
    pub certificate_github_workflow_sha: Option<String>,
    /// GitHub Actions: the event that triggered the workflow.
    #[arg(long, value_name = "EVENT")]
    pub certificate_github_workflow_trigger: Option<String>,
    /// GitHub Actions: the workflow's name.
    #[arg(long, value_name = "NAME")]
    pub certificate_github_workflow_name: Option<String>,
}

/// Keyless verification (without --key): who must have signed, and the Sigstore root.
#[derive(Debug, Clone, Args, Default)]
pub struct KeylessVerifyArgs {
    #[command(flatten)]
    pub identity: CertificateIdentityArgs,
    /// cosign 3's trusted_root.json (default: the public-good Sigstore root, embedded).
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// Accept a signature without a checked transparency-log entry (said on standard error).
    #[arg(long)]
    pub insecure_ignore_tlog: bool,
    /// Accept a certificate without a checked SCT (said on standard error).
    #[arg(long)]
    pub insecure_ignore_sct: bool,
}

/// `opship verify-blob`.
#[derive(Debug, Clone, Args)]
pub struct VerifyBlobArgs {
    /// The Sigstore bundle (`.sigstore.json`).
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,
    /// Verify with this public key (PEM) instead of a certificate identity.
    #[arg(long, value_name = "PUB", conflicts_with_all = ["certificate_identity", "certificate_identity_regexp"])]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub keyless: KeylessVerifyArgs,
    /// The signed file.
    #[arg(value_name = "ARTIFACT")]
    pub artifact: PathBuf,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// Every command, group or leaf, shows realistic examples under `--help`: a new command
    /// without them fails here.
    #[test]
    fn every_command_has_examples() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>, seen: &mut usize) {
            for sub in cmd.get_subcommands() {
                if sub.get_name() == "help" {
                    continue;
                }
                let name = format!("{path} {}", sub.get_name());
                *seen += 1;
                let help = sub
                    .get_after_help()
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                let examples = help.split_once("Examples:").map(|(_, e)| e);
                if !examples.is_some_and(|e| e.contains("opship ")) {
                    missing.push(name.clone());
                }
                walk(sub, &name, missing, seen);
            }
        }
        let mut cmd = super::Cli::command();
        cmd.build();
        let root = cmd
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        assert!(root.contains("Examples:"), "opship --help has no examples");
        let (mut missing, mut seen) = (Vec::new(), 0);
        walk(&cmd, "opship", &mut missing, &mut seen);
        assert!(seen >= 30, "only {seen} commands walked");
        assert!(
            missing.is_empty(),
            "no `Examples:` with an opship command line in the after_help of: {missing:?}"
        );
    }
}

/// `opship catalog ...`.
#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Print the FBC of bundle directories, bundle or catalog images, or catalog directories,
    /// exactly as `opm render` does.
    #[command(
        after_help = "Examples:\n  opship catalog render bundle/0.3.0 --image quay.io/example/op-bundle:v0.3.0\n  opship catalog render index --output yaml\n  opship catalog render dist/oci:0.3.0 --image quay.io/example/op-bundle:v0.3.0\n  opship catalog render 127.0.0.1:5000/op-bundle:v0.3.0 --csv-format csv-metadata"
    )]
    Render(CatalogRenderArgs),
    /// Check a catalog directory with opm's rules (and lints opm lacks).
    #[command(
        after_help = "Exit 0 when opm would accept the catalog, 1 when not (a file that does not parse included), 2 when it cannot be read at all.\n\nExamples:\n  opship catalog validate index\n  opship catalog validate index -o json"
    )]
    Validate(CatalogValidateArgs),
    /// Add a bundle as the new head of channels of its package in a catalog directory.
    #[command(
        after_help = "Examples:\n  opship catalog add --bundle bundle/0.3.0 --image quay.io/example/op-bundle:v0.3.0 --channel stable,fast --skip-range minor\n  opship -c bundle/opship.yaml catalog add --bundle quay.io/example/op-bundle:v0.3.0 --target v4.17 --pin-digest"
    )]
    Add(CatalogAddArgs),
    /// Deprecate a package, channel or bundle (writes `olm.deprecations`).
    #[command(
        after_help = "Examples:\n  opship catalog deprecate --package memcached-operator --bundle memcached-operator.v0.1.0 -m \"0.1.0 leaks connections; use 0.2.0\"\n  opship catalog deprecate --package memcached-operator --channel alpha -m \"use stable\"\n  opship catalog deprecate --package memcached-operator --whole-package -m \"replaced by memcached-operator-v2\""
    )]
    Deprecate(CatalogDeprecateArgs),
    /// Draw the upgrade graph of each package and channel.
    #[command(
        after_help = "Examples:\n  opship catalog graph index --format mermaid > graph.mmd\n  opship catalog graph index -p memcached-operator --format dot | dot -Tsvg > graph.svg"
    )]
    Graph(CatalogGraphArgs),
    /// Render a catalog template (opm's `basic` or `semver`).
    #[command(
        after_help = "Examples:\n  opship catalog template basic catalog-templates/v4.16.yaml -o yaml\n  opship catalog template semver semver.yaml"
    )]
    Template(CatalogTemplateArgs),
    /// Build the catalog image (FROM scratch, /configs, configs label) into an OCI layout.
    #[command(
        after_help = "Prints `TAG DIGEST`.\n\nExamples:\n  opship catalog build index --layout dist/catalog-oci --tag v4.17\n  opship push dist/catalog-oci:v4.17 quay.io/example/catalog:v4.17"
    )]
    Build(CatalogBuildArgs),
    /// Write `<dir>.Dockerfile` next to a catalog directory, as `opm generate dockerfile`.
    #[command(
        after_help = "Examples:\n  opship catalog dockerfile index\n  opship catalog dockerfile index -i scratch -l com.example.team=storage"
    )]
    Dockerfile(CatalogDockerfileArgs),
    /// Verify the signature of every bundle image a catalog references (and of the catalog
    /// image, when given) with the trusted keys or the keyless identity.
    #[command(
        after_help = "Each bundle image must be referenced by digest and have a signature that verifies with one of the --key files (or, without --key, a certificate for the identity options) and names the bundle's own repository. Signatures are read from each image's registry (`.sig` manifests and cosign 3's Sigstore bundle referrers), or with --layout from an OCI layout holding the images and their `.sig` tags. Exit status: 0 every image verified, 1 one did not (each is listed with why), 2 usage or runtime error.\n\nExamples:\n  opship catalog verify index --key cosign.pub --key partner.pub\n  opship catalog verify index --key cosign.pub --catalog-image quay.io/example/catalog:v4.17 -o json\n  opship catalog verify index --certificate-identity-regexp '^https://github.com/example/' --certificate-oidc-issuer https://token.actions.githubusercontent.com"
    )]
    Verify(CatalogVerifyArgs),
}

/// `opship catalog verify`.
#[derive(Debug, Args)]
pub struct CatalogVerifyArgs {
    /// Catalog directory.
    pub index: PathBuf,
    /// Trusted public key (PEM `PUBLIC KEY`; repeatable: an image passes with any of them);
    /// without it, keyless by the certificate identity options.
    #[arg(long, value_name = "PUB", conflicts_with_all = ["certificate_identity", "certificate_identity_regexp"])]
    pub key: Vec<PathBuf>,
    #[command(flatten)]
    pub keyless: KeylessVerifyArgs,
    /// The catalog image, verified too (`REGISTRY/REPO:TAG` or `@DIGEST`).
    #[arg(long, value_name = "REF")]
    pub catalog_image: Option<String>,
    /// Read the images and their signatures from this OCI layout (found by digest).
    #[arg(long, value_name = "DIR")]
    pub layout: Option<PathBuf>,
    /// Output: text, or JSON (one entry per image with its verdict).
    #[arg(long, short, value_enum, default_value_t = RegistryOutput::Text)]
    pub output: RegistryOutput,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: DeadlineArgs,
}

/// How the CSV of a rendered bundle is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CsvFormatArg {
    /// One `olm.bundle.object` per manifest (OpenShift <= 4.16; opm's default).
    BundleObject,
    /// `olm.csv.metadata` instead of bundle objects (OpenShift >= 4.17).
    CsvMetadata,
}

/// Catalog text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogOutput {
    /// opm's JSON.
    Json,
    /// YAML, keys sorted.
    Yaml,
}

#[derive(Debug, Args)]
pub struct CatalogRenderArgs {
    /// Bundle directories, catalog directories, `LAYOUT:TAG` images or registry references.
    #[arg(required = true, value_name = "REF")]
    pub refs: Vec<OsString>,
    /// Image reference written into bundles rendered from a directory or layout.
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = CatalogOutput::Json)]
    pub output: CatalogOutput,
    /// How to carry the CSV.
    #[arg(long, value_enum, default_value_t = CsvFormatArg::BundleObject, conflicts_with = "ocp_version")]
    pub csv_format: CsvFormatArg,
    /// Target OpenShift version: 4.17 and newer get `csv-metadata`, older `bundle-object`.
    #[arg(long, value_name = "4.X")]
    pub ocp_version: Option<String>,
    /// For a registry image: write `REPO@sha256:...` (the digest pulled and verified) as the
    /// image instead of the reference as given.
    #[arg(long, conflicts_with = "image")]
    pub pin_digest: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Validation report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogReport {
    /// opm's error tree and opship's warnings.
    Text,
    /// `{passed, error: {message}, findings: [...]}`.
    Json,
    /// The same as YAML.
    Yaml,
}

#[derive(Debug, Args)]
pub struct CatalogValidateArgs {
    /// Catalog directory.
    pub dir: PathBuf,
    /// Report format.
    #[arg(long, short, value_enum, default_value_t = CatalogReport::Text)]
    pub output: CatalogReport,
}

/// skipRange policy of a new entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SkipRangeArg {
    /// No skipRange.
    None,
    /// `>=X.Y.0 <X.Y.Z`.
    Minor,
    /// `>=X.0.0 <X.Y.Z`.
    Major,
    /// `<X.Y.Z`.
    All,
}

/// skips policy of a new entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SkipsArg {
    /// No skips.
    None,
    /// Earlier entries of the same major.minor, except the replaced head.
    SameMinor,
}

#[derive(Debug, Args)]
pub struct CatalogAddArgs {
    /// The bundle: a directory, a `LAYOUT:TAG` image or a registry reference.
    #[arg(long, value_name = "REF")]
    pub bundle: OsString,
    /// Image reference of the bundle (default: the registry reference given to --bundle).
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Channels to add it to, comma-separated (created when missing; default: the target's
    /// or the project's channels).
    #[arg(long, short = 'C', value_delimiter = ',')]
    pub channel: Vec<String>,
    /// A catalog of `catalogs:` in opship.yaml: its directory, CSV format, channels and
    /// skipRange policy (flags still win).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// Catalog directory; the package lives in `<index>/<package>/` (default: the target's
    /// `dir`, else `index`).
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// Make this channel the package's default.
    #[arg(long, value_name = "CHANNEL")]
    pub default_channel: Option<String>,
    /// skipRange of the new entry (default: the target's policy, else none).
    #[arg(long, value_enum, conflicts_with = "skip_range_value")]
    pub skip_range: Option<SkipRangeArg>,
    /// A literal skipRange for the new entry.
    #[arg(long, value_name = "RANGE")]
    pub skip_range_value: Option<String>,
    /// skips of the new entry.
    #[arg(long, value_enum, default_value_t = SkipsArg::None)]
    pub skips: SkipsArg,
    /// Replace a bundle of the same version instead of refusing.
    #[arg(long)]
    pub replace: bool,
    /// How to carry the CSV (default: from the target, else bundle-object).
    #[arg(long, value_enum, conflicts_with = "ocp_version")]
    pub csv_format: Option<CsvFormatArg>,
    /// Target OpenShift version: 4.17 and newer get `csv-metadata`, older `bundle-object`.
    #[arg(long, value_name = "4.X")]
    pub ocp_version: Option<String>,
    /// For a registry image: write `REPO@sha256:...` (the digest pulled and verified) as the
    /// image instead of the reference as given.
    #[arg(long, conflicts_with = "image")]
    pub pin_digest: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["bundle", "channel", "whole_package"])))]
pub struct CatalogDeprecateArgs {
    /// The package.
    #[arg(long)]
    pub package: String,
    /// Deprecate this bundle (its name).
    #[arg(long)]
    pub bundle: Option<String>,
    /// Deprecate this channel.
    #[arg(long)]
    pub channel: Option<String>,
    /// Deprecate the whole package.
    #[arg(long)]
    pub whole_package: bool,
    /// What users are told.
    #[arg(long, short)]
    pub message: String,
    /// Catalog directory.
    #[arg(long, default_value = "index")]
    pub index: PathBuf,
}

/// Graph format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// Mermaid (opm's `alpha render-graph`).
    Mermaid,
    /// Graphviz dot.
    Dot,
}

#[derive(Debug, Args)]
pub struct CatalogGraphArgs {
    /// Catalog directory (or any reference `catalog render` takes).
    #[arg(value_name = "REF")]
    pub dir: OsString,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub format: GraphFormat,
    /// Only this package.
    #[arg(long, short)]
    pub package: Option<String>,
    /// Mark skipped entries, whose edges OLM v0 ignores.
    #[arg(long)]
    pub draw_v0_semantics: bool,
    /// Only edges from this bundle's version on.
    #[arg(long, value_name = "BUNDLE")]
    pub minimum_edge: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// What `catalog template` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TemplateOutput {
    /// opm's JSON.
    Json,
    /// YAML, keys sorted.
    Yaml,
    /// The upgrade graph of the result (as opm's `render-template -o mermaid`).
    Mermaid,
}

/// Template type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TemplateKind {
    /// `olm.template.basic` or a plain FBC stream with image-only bundles.
    Basic,
    /// `olm.semver`.
    Semver,
}

#[derive(Debug, Args)]
pub struct CatalogTemplateArgs {
    /// Template type.
    #[arg(value_enum)]
    pub kind: TemplateKind,
    /// Template file (`-` for standard input).
    pub file: PathBuf,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = TemplateOutput::Json)]
    pub output: TemplateOutput,
    /// How to carry the CSV of rendered bundles.
    #[arg(long, value_enum, default_value_t = CsvFormatArg::BundleObject, conflicts_with = "ocp_version")]
    pub csv_format: CsvFormatArg,
    /// Target OpenShift version: 4.17 and newer get `csv-metadata`, older `bundle-object`.
    #[arg(long, value_name = "4.X")]
    pub ocp_version: Option<String>,
    /// Write registry bundles as `REPO@sha256:...` (the digest pulled and verified) instead
    /// of the reference as written in the template.
    #[arg(long)]
    pub pin_digest: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct CatalogBuildArgs {
    /// Catalog directory.
    pub dir: PathBuf,
    /// OCI layout to write into.
    #[arg(long, default_value = "dist/catalog-oci")]
    pub layout: PathBuf,
    /// Tag in the layout.
    #[arg(long, default_value = "latest")]
    pub tag: String,
    /// Extra label `key=value` (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub label: Vec<String>,
    /// Manifest media types (FROM-scratch images).
    #[arg(long, value_enum, default_value_t = ImageFormat::Oci)]
    pub format: ImageFormat,
    /// Build on an opm base image instead of scratch (OLM v0 with the opm binary):
    /// `LAYOUT:TAG` (an image or a multi-arch index, e.g. from `skopeo copy --all`) or a
    /// registry reference (single-platform).
    #[arg(long, value_name = "IMAGE")]
    pub base: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct CatalogDockerfileArgs {
    /// Catalog directory.
    pub dir: PathBuf,
    /// Final stage image (`scratch` for a binary-less catalog).
    #[arg(
        long,
        short = 'i',
        default_value = "quay.io/operator-framework/opm:latest"
    )]
    pub base_image: String,
    /// Builder stage image (must contain /bin/opm).
    #[arg(
        long,
        short = 'b',
        default_value = "quay.io/operator-framework/opm:latest"
    )]
    pub builder_image: String,
    /// Extra label `key=value` (repeatable).
    #[arg(long, short = 'l', value_name = "KEY=VALUE")]
    pub extra_labels: Vec<String>,
}

/// Signature formats of `sign` and `attest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SignFormat {
    /// cosign 3's Sigstore bundle referrers.
    Cosign3,
    /// cosign 2's `.sig` / `.att` manifests.
    Cosign2,
}

/// Keyless signing (no --key): the identity token and the Sigstore services. Its `Debug`
/// withholds the token.
#[derive(Args)]
pub struct KeylessArgs {
    /// OIDC identity token for keyless signing: a file holding it, or the token (else
    /// SIGSTORE_ID_TOKEN, else GitHub Actions' ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN).
    #[arg(long, value_name = "FILE|TOKEN")]
    pub identity_token: Option<String>,
    /// cosign 3's signing_config.json naming Fulcio, Rekor and the timestamp authority
    /// (default: the public-good instance).
    #[arg(long, value_name = "FILE")]
    pub signing_config: Option<PathBuf>,
    /// Fulcio URL (over the signing config's).
    #[arg(long, value_name = "URL")]
    pub fulcio_url: Option<String>,
    /// Rekor URL (over the signing config's).
    #[arg(long, value_name = "URL")]
    pub rekor_url: Option<String>,
    /// Timestamp authority endpoint (over the signing config's).
    #[arg(long, value_name = "URL")]
    pub timestamp_server_url: Option<String>,
    /// Signature format: cosign3 (Sigstore bundle referrers) or cosign2 (`.sig`/`.att`).
    /// Default: the format the image's signatures already have; for a new image cosign3 when
    /// keyless, cosign2 with a key (see docs/signing.md).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<SignFormat>,
}

impl std::fmt::Debug for KeylessArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeylessArgs")
            .field(
                "identity_token",
                &self
                    .identity_token
                    .as_ref()
                    .map(|_| opship_oci::redact::WITHHELD),
            )
            .field("signing_config", &self.signing_config)
            .field("fulcio_url", &self.fulcio_url)
            .field("rekor_url", &self.rekor_url)
            .field("timestamp_server_url", &self.timestamp_server_url)
            .field("format", &self.format)
            .finish()
    }
}
