//! Rendering a chart directory from the Handlebars templates in `chart-templates/` (embedded
//! in the binary, each one replaceable from a `--templates` directory).
//!
//! Handlebars runs in strict mode (a variable that does not exist is an error). Helm's own
//! `{{ }}` expressions are written `\{{ ... }}` in the templates (or inside a
//! `{{{{raw}}}} ... {{{{/raw}}}}` block), so Handlebars passes them through untouched. Every
//! value a template writes into a file Helm executes (`templates/…`) goes through one escape,
//! [`helm_text`]: Handlebars' escape function for `{{value}}`, and the `yaml` and `json`
//! helpers. It turns the braces in the data that Helm would read as an action into Go string
//! literals Helm prints back, so bundle data never becomes Helm code and Helm's output is the
//! data byte for byte. Files Helm does not execute (Chart.yaml, values files, `crds/`) are
//! written unescaped. After rendering, every Helm template is checked for actions that were
//! left open or closed without being opened: the traces of a Helm expression that Handlebars
//! mangled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use handlebars::{
    Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderError,
    RenderErrorReason,
};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Model;

/// How often a template is rendered and where its output goes.
/// The embedded templates, by path in the chart (`.hbs` dropped). The objects of the chart
/// are not among them: they are OLM v1's, written by [`crate::olm`].
const DEFAULTS: &[(&str, &str)] = &[
    (
        "Chart.yaml.hbs",
        include_str!("../../../chart-templates/Chart.yaml.hbs"),
    ),
    (
        "values.yaml.hbs",
        include_str!("../../../chart-templates/values.yaml.hbs"),
    ),
    (
        "templates/_helpers.tpl.hbs",
        include_str!("../../../chart-templates/templates/_helpers.tpl.hbs"),
    ),
    (
        "templates/NOTES.txt.hbs",
        include_str!("../../../chart-templates/templates/NOTES.txt.hbs"),
    ),
];

/// The names of the default templates (relative paths under `chart-templates/`).
pub fn default_template_names() -> Vec<&'static str> {
    DEFAULTS.iter().map(|(n, _)| *n).collect()
}

/// The rendered chart: file contents by path relative to the chart directory.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Text that Helm's template engine prints back exactly as it is. Go's `text/template` starts
/// an action at `{{`, so every run of braces that holds `{{` or `}}`, or that begins or ends
/// the text (where it could join a brace of the template around it), is written as a Go
/// string literal action, `{{ "{{" }}`. A run is taken whole, so the inserted action never
/// touches another brace of the data. Braces are the only characters that matter: outside an
/// action Helm copies text unchanged.
pub fn helm_text(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' && bytes[i] != b'}' {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i] == b'{' || bytes[i] == b'}') {
            i += 1;
        }
        let run = &text[start..i];
        if run.contains("{{") || run.contains("}}") || start == 0 || i == bytes.len() {
            out.push_str(&text[copied..start]);
            // Only braces inside: nothing to escape for the Go string literal.
            out.push_str("{{ \"");
            out.push_str(run);
            out.push_str("\" }}");
            copied = i;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Where a registry's output goes, which decides the escaping.
#[derive(Debug, Clone)]
struct Target {
    /// The output is a Helm template (`templates/…`).
    helm: bool,
    /// The model's stand-in for the release namespace (see `model::RELEASE_NAMESPACE`), which
    /// becomes the release namespace in Helm templates: `{{ .Release.Namespace | quote }}`
    /// where it is a whole YAML value, `{{ .Release.Namespace }}` inside a JSON string (a
    /// namespace is a DNS label, safe in any string).
    namespace: String,
}

/// Turns a value into YAML lines: keys sorted, every line indented by `indent`; for a Helm
/// template the text escaped ([`helm_text`]) and the model's namespace stand-in (always a
/// whole string in values given to `yaml`) replaced by the release namespace. Empty values give nothing, so a template can put the helper on a
/// line of its own.
fn yaml_block(value: &Value, indent: usize, target: &Target) -> Result<String, String> {
    let empty = match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if empty {
        return Ok(String::new());
    }
    let text = opship_core::yaml::to_string(value).map_err(|e| e.to_string())?;
    let text = if target.helm {
        // After the escape, which leaves the stand-in (no braces) as it is; the model picks a
        // stand-in that no string of the bundle contains.
        helm_text(&text).replace(&target.namespace, "{{ .Release.Namespace | quote }}")
    } else {
        text
    };
    let pad = " ".repeat(indent);
    let mut out = String::with_capacity(text.len() + text.lines().count() * indent);
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str(&pad);
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

/// `{{yaml VALUE INDENT}}`. (A `helm=false` hash argument of older templates is ignored: the
/// output path decides the escaping.)
struct YamlHelper(Target);

impl handlebars::HelperDef for YamlHelper {
    fn call<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
        out: &mut dyn Output,
    ) -> HelperResult {
        let value = h
            .param(0)
            .ok_or_else(|| RenderErrorReason::ParamNotFoundForIndex("yaml", 0))?;
        let indent = h.param(1).and_then(|p| p.value().as_u64()).unwrap_or(0) as usize;
        let text = yaml_block(value.value(), indent, &self.0)
            .map_err(|e| RenderErrorReason::Other(format!("yaml: {e}")))?;
        out.write(&text)?;
        Ok(())
    }
}

/// `{{json VALUE}}`: the value as one line of JSON (a valid YAML flow value, strings quoted),
/// escaped for a Helm template, where the namespace stand-in may also be part of a string.
struct JsonHelper(Target);

impl handlebars::HelperDef for JsonHelper {
    fn call<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
        out: &mut dyn Output,
    ) -> HelperResult {
        let value = h
            .param(0)
            .ok_or_else(|| RenderErrorReason::ParamNotFoundForIndex("json", 0))?;
        let text = value.value().to_string();
        let text = if self.0.helm {
            helm_text(&text).replace(&self.0.namespace, "{{ .Release.Namespace }}")
        } else {
            text
        };
        out.write(&text)?;
        Ok(())
    }
}

/// Where the templates come from: the embedded defaults, each replaced by a file of the same
/// relative path in `dir` when there is one. Other `*.hbs` files in `dir` are rendered once
/// into the path they name.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    /// Directory of replacements and additions.
    pub dir: Option<PathBuf>,
}

struct Loaded {
    name: String,
    /// What error messages call the template: its file, or `<embedded>/name`.
    shown: String,
    source: String,
}

fn hbs_files(dir: &Path, base: &Path, out: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let ft = e.file_type().map_err(|err| Error::io(&path, err))?;
        let hbs = path.extension().is_some_and(|x| x == "hbs");
        if ft.is_dir() {
            hbs_files(&path, base, out)?;
        } else if ft.is_symlink() && std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            // A linked directory could lead back to its parent; templates are files.
            return Err(Error::invalid(
                &path,
                "is a symlink to a directory; template directories are not followed through symlinks",
            ));
        } else if hbs {
            // Regular files, symlinks and anything else named `*.hbs`: `Templates::load` reads
            // them through `opship_core::input`, which refuses what is not a regular file
            // inside the templates directory.
            let rel = path
                .strip_prefix(base)
                .map_err(|_| Error::invalid(&path, "outside the templates directory"))?;
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

impl Templates {
    fn load(&self) -> Result<Vec<Loaded>> {
        let mut loaded: Vec<Loaded> = DEFAULTS
            .iter()
            .map(|(name, source)| Loaded {
                name: (*name).to_owned(),
                shown: format!("chart-templates/{name} (embedded)"),
                source: (*source).to_owned(),
            })
            .collect();
        if let Some(dir) = &self.dir {
            let mut names = Vec::new();
            hbs_files(dir, dir, &mut names)?;
            for name in names {
                let path = dir.join(&name);
                let source = opship_core::input::read_string_in_tree(
                    dir,
                    &path,
                    opship_core::input::Kind::Manifest,
                )?;
                let shown = opship_core::paths::show(&path).to_string();
                match loaded.iter_mut().find(|l| l.name == name) {
                    Some(l) => {
                        l.source = source;
                        l.shown = shown;
                    }
                    None => loaded.push(Loaded {
                        name,
                        shown,
                        source,
                    }),
                }
            }
        }
        Ok(loaded)
    }
}

fn template_error(shown: &str, e: &handlebars::TemplateError) -> Error {
    Error::Template {
        template: shown.to_owned(),
        line: e.pos().map(|(l, _)| l),
        message: e.reason().to_string(),
    }
}

fn render_error(shown: &str, e: &RenderError) -> Error {
    let mut message = e.reason().to_string();
    if let RenderErrorReason::MissingVariable(Some(path)) = e.reason() {
        message = format!(
            "`{path}` does not exist in the chart context (strict mode); a Helm expression must be written `\\{{{{ ... }}}}`"
        );
    }
    Error::Template {
        template: shown.to_owned(),
        line: e.line_no,
        message,
    }
}

/// Checks that the Helm template text has no action left open and no `}}` that closes
/// nothing. Data never contains either (the `yaml` helper escapes both), so one of them is a
/// Helm expression that Handlebars changed, or a typo in a template.
pub fn check_helm_actions(text: &str) -> std::result::Result<(), (usize, String)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut line = 1;
    let mut open_line = 0;
    let mut in_action = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
        }
        if !in_action {
            if bytes[i..].starts_with(b"{{") {
                in_action = true;
                open_line = line;
                i += 2;
                continue;
            }
            if bytes[i..].starts_with(b"}}") {
                return Err((line, "`}}` that closes no Helm action `{{`".into()));
            }
            i += 1;
            continue;
        }
        match b {
            b'"' | b'\'' | b'`' => {
                let quote = b;
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == b'\\' && quote != b'`' {
                        i += 1;
                    }
                    if i < bytes.len() && bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'/' if bytes[i..].starts_with(b"/*") => match text[i..].find("*/") {
                Some(end) => {
                    line += text[i..i + end].matches('\n').count();
                    i += end + 2;
                }
                None => i = bytes.len(),
            },
            b'}' if bytes[i..].starts_with(b"}}") => {
                in_action = false;
                i += 2;
            }
            b'{' if bytes[i..].starts_with(b"{{") => {
                return Err((
                    line,
                    format!("`{{{{` inside the Helm action opened on line {open_line}"),
                ));
            }
            _ => i += 1,
        }
    }
    if in_action {
        return Err((
            open_line,
            "Helm action `{{` is never closed with `}}`".into(),
        ));
    }
    Ok(())
}

/// The literal pieces of a template line: the text between Handlebars expressions, with the
/// `\` of escaped Helm expressions removed.
fn literal_pieces(line: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut rest = line;
    while let Some(i) = rest.find("{{") {
        let escaped = rest[..i].ends_with('\\');
        let before = if escaped { &rest[..i - 1] } else { &rest[..i] };
        pieces.last_mut().expect("never empty").push_str(before);
        if escaped {
            pieces.last_mut().expect("never empty").push_str("{{");
            rest = &rest[i + 2..];
        } else {
            match rest[i..].find("}}") {
                Some(end) => {
                    let mut after = &rest[i + end + 2..];
                    while let Some(a) = after.strip_prefix('}') {
                        after = a;
                    }
                    rest = after;
                    pieces.push(String::new());
                }
                None => rest = "",
            }
        }
    }
    pieces.last_mut().expect("never empty").push_str(rest);
    pieces
}

/// The line of a template that produced `output_line`: the first whose literal pieces appear
/// in it, in order (Handlebars expressions match anything). `None` when no line fits; the
/// error quotes the rendered line then.
fn source_line(source: &str, output_line: &str) -> Option<usize> {
    let want = output_line.trim();
    if want.is_empty() {
        return None;
    }
    let fits = |line: &str| {
        let pieces = literal_pieces(line.trim());
        if pieces.iter().all(|p| p.trim().is_empty()) {
            return false;
        }
        let mut at = 0;
        for (n, p) in pieces.iter().enumerate() {
            match want[at..].find(p.as_str()) {
                Some(i) if n > 0 || i == 0 => at += i + p.len(),
                _ => return false,
            }
        }
        pieces.len() > 1 || at == want.len()
    };
    source.lines().position(fits).map(|i| i + 1)
}

/// A Handlebars registry of every template whose output goes to `target`.
fn registry<'a>(loaded: &[Loaded], target: Target) -> Result<Handlebars<'a>> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    if target.helm {
        hb.register_escape_fn(helm_text);
    } else {
        hb.register_escape_fn(handlebars::no_escape);
    }
    hb.register_helper("yaml", Box::new(YamlHelper(target.clone())));
    hb.register_helper("json", Box::new(JsonHelper(target)));
    // Every template in both registries, so partials work whatever the output.
    for l in loaded {
        hb.register_template_string(&l.name, &l.source)
            .map_err(|e| template_error(&l.shown, &e))?;
    }
    Ok(hb)
}

/// The bundle object a chart file is rendered from (`CustomResourceDefinition
/// \`x.example.com\``), for messages about that file.
pub fn origin_of(model: &Model, path: &str) -> Option<String> {
    let file = path.rsplit('/').next()?;
    if path.starts_with("templates/crds/") || path.starts_with("crds/") {
        let crd = model.context["crds"]
            .as_array()?
            .iter()
            .find(|c| c["file"].as_str() == Some(file))?;
        return Some(format!(
            "CustomResourceDefinition `{}`",
            crd["name"].as_str().unwrap_or_default()
        ));
    }
    let rest = path.strip_prefix("templates/olm/")?;
    let (kind, name) = rest.strip_suffix(".yaml")?.split_once('-')?;
    Some(format!("{kind} `{name}`"))
}

/// Renders every template for `model`. Nothing touches the disk; the caller writes the
/// result atomically.
pub fn render(model: &Model, templates: &Templates) -> Result<Files> {
    let loaded = templates.load()?;
    let helm = registry(
        &loaded,
        Target {
            helm: true,
            namespace: model.release_namespace.clone(),
        },
    )?;
    let plain = registry(
        &loaded,
        Target {
            helm: false,
            namespace: model.release_namespace.clone(),
        },
    )?;
    let for_path = |path: &str| {
        if path.starts_with("templates/") {
            &helm
        } else {
            &plain
        }
    };
    let mut files = Files::new();
    let mut emit = |path: String, text: String, l: &Loaded| -> Result<()> {
        if text.trim().is_empty() {
            return Ok(());
        }
        let helm_templated = path.starts_with("templates/");
        if helm_templated && let Err((line, message)) = check_helm_actions(&text) {
            let bad = text.lines().nth(line - 1).unwrap_or("");
            return Err(Error::Template {
                template: l.shown.clone(),
                line: source_line(&l.source, bad),
                message: format!("{message} (rendered {path}, line {line}: `{}`)", bad.trim()),
            });
        }
        let mut text = text;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        files.insert(path, text.into_bytes());
        Ok(())
    };
    let ctx = &model.context;
    for l in &loaded {
        let path = l.name.trim_end_matches(".hbs").to_owned();
        let text = for_path(&path)
            .render(&l.name, ctx)
            .map_err(|e| render_error(&l.shown, &e))?;
        emit(path, text, l)?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_escapes_helm_delimiters() {
        let ns = "__NS__".to_owned();
        let v = json!({"d": "use {{ .Values.x }} here", "ns": ns});
        let target = Target {
            helm: true,
            namespace: ns,
        };
        let out = yaml_block(&v, 2, &target).unwrap();
        assert!(out.contains(r#"{{ "{{" }} .Values.x {{ "}}" }}"#), "{out}");
        assert!(out.contains("{{ .Release.Namespace | quote }}"), "{out}");
        assert!(check_helm_actions(&out).is_ok());
        assert!(out.lines().all(|l| l.starts_with("  ")));
    }

    /// What Go's text/template does with escaped text: literal text is copied, a
    /// `{{ "..." }}` action (the only action `helm_text` writes) prints its string, and any
    /// other action is shown as `<action>`, so data that became code is visible.
    fn go_template_output(text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(i) = rest.find("{{") {
            out.push_str(&rest[..i]);
            let action = &rest[i + 2..];
            if let Some(body) = action.strip_prefix(" \"") {
                let end = body
                    .find("\" }}")
                    .ok_or_else(|| format!("unterminated: {rest}"))?;
                out.push_str(&body[..end]);
                rest = &body[end + 4..];
            } else {
                let end = action
                    .find("}}")
                    .ok_or_else(|| format!("unterminated: {rest}"))?;
                out.push_str(&format!("<{}>", action[..end].trim()));
                rest = &action[end + 2..];
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    #[test]
    fn helm_text_round_trips_and_leaves_no_action() {
        let cases = [
            "plain text",
            "{{ .Values.pwned }}",
            "{{ include \"x\" . }}",
            "{{/* comment",
            "}}",
            "{",
            "}",
            "a{",
            "}a",
            "{{{",
            "}}}",
            "{}{}",
            "x {}\ny: {\"a\": {\"b\": 1}}",
            "{{- trim -}}",
            "\"{{\" }} {{ \"}}\"",
            "emptyDir: {}",
            "",
        ];
        for c in cases {
            let escaped = helm_text(c);
            assert!(check_helm_actions(&escaped).is_ok(), "{c:?} -> {escaped:?}");
            // Whatever the template puts around it, the data stays text: no brace of the
            // data joins a brace of the template into an action.
            for (before, after, shown_before, shown_after) in [
                ("", "", "", ""),
                ("{{ .A }}", "{{ .B }}", "<.A>", "<.B>"),
                ("x", "y", "x", "y"),
            ] {
                let joined = format!("{before}{escaped}{after}");
                assert_eq!(
                    go_template_output(&joined),
                    Ok(format!("{shown_before}{c}{shown_after}")),
                    "{c:?} -> {joined:?}"
                );
            }
        }
        assert_eq!(
            helm_text("a {} b"),
            "a {} b",
            "harmless braces stay as they are"
        );
        // Without the escape the check on the test's own model of Go sees the code.
        assert_eq!(
            go_template_output("a{{ .Values.x }}").unwrap(),
            "a<.Values.x>"
        );
    }

    /// `{{value}}`, `{{json value}}` and `{{yaml value}}` all escape for a Helm template and
    /// none does for a file Helm does not execute.
    #[test]
    fn every_way_into_a_template_is_escaped() {
        let loaded = [Loaded {
            name: "t".into(),
            shown: "t".into(),
            source: "a: {{x}}\nb: {{json x}}\nc:\n{{yaml y 2}}\n".into(),
        }];
        let ctx = json!({"x": "{{ .Values.p }}", "y": {"k": "}} {{"}});
        let target = |helm| Target {
            helm,
            namespace: "__NS__".into(),
        };
        let helm = registry(&loaded, target(true))
            .unwrap()
            .render("t", &ctx)
            .unwrap();
        assert_eq!(
            go_template_output(&helm).unwrap(),
            "a: {{ .Values.p }}\nb: \"{{ .Values.p }}\"\nc:\n  k: \"}} {{\"\n",
            "{helm}"
        );
        assert!(!helm.contains("{{ .Values.p }}"), "{helm}");
        let plain = registry(&loaded, target(false))
            .unwrap()
            .render("t", &ctx)
            .unwrap();
        assert_eq!(
            plain,
            "a: {{ .Values.p }}\nb: \"{{ .Values.p }}\"\nc:\n  k: \"}} {{\"\n"
        );
    }

    #[test]
    fn template_lines_are_found_from_their_output() {
        let src = "a: 1\n  labels:\n    \\{{- include \"{{chart.name}}.labels\" . | nindent 4 }\nb: \\{{ .Values.x }\n";
        assert_eq!(
            source_line(src, r#"    {{- include "demo.labels" . | nindent 4 }"#),
            Some(3)
        );
        assert_eq!(source_line(src, "b: {{ .Values.x }"), Some(4));
        assert_eq!(source_line(src, "c: {{ .Values.y }"), None);
    }

    #[test]
    fn helm_action_checks() {
        assert!(check_helm_actions("a: {{ .Values.x }}\nb: {{ \"}}\" }}").is_ok());
        assert!(check_helm_actions("{{/* a }} */}}").is_ok());
        assert_eq!(check_helm_actions("a\nb: {{ .Values.x\n").unwrap_err().0, 2);
        assert_eq!(
            check_helm_actions("a\n\nb: .Values.x }}\n").unwrap_err().0,
            3
        );
    }
}
