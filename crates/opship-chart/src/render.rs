//! Rendering a chart directory from the Handlebars templates in `chart-templates/` (embedded
//! in the binary, each one replaceable from a `--templates` directory).
//!
//! Handlebars runs in strict mode (a variable that does not exist is an error) without HTML
//! escaping. Helm's own `{{ }}` expressions are written `\{{ ... }}` in the templates (or inside
//! a `{{{{raw}}}} ... {{{{/raw}}}}` block), so Handlebars passes them through untouched. Data
//! from the bundle is emitted by the `yaml` helper, which escapes any `{{`/`}}` in it for
//! Helm, so a CRD description that mentions `{{ .x }}` stays text. After rendering, every
//! Helm template is checked for actions that were left open or closed without being opened:
//! the traces of a Helm expression that Handlebars mangled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use handlebars::{
    Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderError,
    RenderErrorReason,
};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::model::{Model, RELEASE_NAMESPACE};

/// How often a template is rendered and where its output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Once, into the path named by the template (its name without `.hbs`).
    Once,
    /// Once per CRD, into `templates/crds/` or `crds/`.
    PerCrd,
    /// Once per other bundle object, into `templates/objects/`.
    PerObject,
}

/// The default templates, embedded at build time from `chart-templates/` at the repository
/// root. Names are paths relative to that directory.
const DEFAULTS: &[(&str, &str, Scope)] = &[
    (
        "Chart.yaml.hbs",
        include_str!("../../../chart-templates/Chart.yaml.hbs"),
        Scope::Once,
    ),
    (
        "values.yaml.hbs",
        include_str!("../../../chart-templates/values.yaml.hbs"),
        Scope::Once,
    ),
    (
        "templates/_helpers.tpl.hbs",
        include_str!("../../../chart-templates/templates/_helpers.tpl.hbs"),
        Scope::Once,
    ),
    (
        "templates/NOTES.txt.hbs",
        include_str!("../../../chart-templates/templates/NOTES.txt.hbs"),
        Scope::Once,
    ),
    (
        "templates/deployment.yaml.hbs",
        include_str!("../../../chart-templates/templates/deployment.yaml.hbs"),
        Scope::Once,
    ),
    (
        "templates/serviceaccount.yaml.hbs",
        include_str!("../../../chart-templates/templates/serviceaccount.yaml.hbs"),
        Scope::Once,
    ),
    (
        "templates/rbac.yaml.hbs",
        include_str!("../../../chart-templates/templates/rbac.yaml.hbs"),
        Scope::Once,
    ),
    (
        "templates/webhook.yaml.hbs",
        include_str!("../../../chart-templates/templates/webhook.yaml.hbs"),
        Scope::Once,
    ),
    (
        "crd.yaml.hbs",
        include_str!("../../../chart-templates/crd.yaml.hbs"),
        Scope::PerCrd,
    ),
    (
        "object.yaml.hbs",
        include_str!("../../../chart-templates/object.yaml.hbs"),
        Scope::PerObject,
    ),
];

/// The names of the default templates (relative paths under `chart-templates/`).
pub fn default_template_names() -> Vec<&'static str> {
    DEFAULTS.iter().map(|(n, _, _)| *n).collect()
}

/// The rendered chart: file contents by path relative to the chart directory.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Turns a value into YAML lines for a Helm template: keys sorted, `{{`/`}}` in the data
/// escaped so Helm prints them literally, the namespace placeholder replaced by the release
/// namespace, every line indented by `indent`. Empty values give nothing, so a template can
/// put the helper on a line of its own.
pub fn yaml_block(value: &Value, indent: usize, helm: bool) -> Result<String, String> {
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
    let text = if helm {
        // One pass, so the `{{` that the escape itself contains is not escaped again.
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find(['{', '}']) {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(after) = tail.strip_prefix("{{") {
                out.push_str("{{ \"{{\" }}");
                rest = after;
            } else if let Some(after) = tail.strip_prefix("}}") {
                out.push_str("{{ \"}}\" }}");
                rest = after;
            } else {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
        out.push_str(rest);
        out.replace(RELEASE_NAMESPACE, "{{ .Release.Namespace | quote }}")
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

/// `{{yaml VALUE INDENT}}`, with `helm=false` for files Helm does not template (`crds/`).
fn yaml_helper(
    h: &Helper<'_>,
    _: &Handlebars<'_>,
    _: &Context,
    _: &mut RenderContext<'_, '_>,
    out: &mut dyn Output,
) -> HelperResult {
    let value = h
        .param(0)
        .ok_or_else(|| RenderErrorReason::ParamNotFoundForIndex("yaml", 0))?;
    let indent = h.param(1).and_then(|p| p.value().as_u64()).unwrap_or(0) as usize;
    let helm = h
        .hash_get("helm")
        .and_then(|v| v.value().as_bool())
        .unwrap_or(true);
    let text = yaml_block(value.value(), indent, helm)
        .map_err(|e| RenderErrorReason::Other(format!("yaml: {e}")))?;
    out.write(&text)?;
    Ok(())
}

/// `{{json VALUE}}`: the value as one line of JSON (a valid YAML flow value, strings quoted).
fn json_helper(
    h: &Helper<'_>,
    _: &Handlebars<'_>,
    _: &Context,
    _: &mut RenderContext<'_, '_>,
    out: &mut dyn Output,
) -> HelperResult {
    let value = h
        .param(0)
        .ok_or_else(|| RenderErrorReason::ParamNotFoundForIndex("json", 0))?;
    out.write(&value.value().to_string())?;
    Ok(())
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
    scope: Scope,
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
        if ft.is_dir() {
            hbs_files(&path, base, out)?;
        } else if ft.is_file() && path.extension().is_some_and(|x| x == "hbs") {
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
            .map(|(name, source, scope)| Loaded {
                name: (*name).to_owned(),
                shown: format!("chart-templates/{name} (embedded)"),
                source: (*source).to_owned(),
                scope: *scope,
            })
            .collect();
        if let Some(dir) = &self.dir {
            let mut names = Vec::new();
            hbs_files(dir, dir, &mut names)?;
            for name in names {
                let path = dir.join(&name);
                let source = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
                let shown = path.display().to_string();
                match loaded.iter_mut().find(|l| l.name == name) {
                    Some(l) => {
                        l.source = source;
                        l.shown = shown;
                    }
                    None => loaded.push(Loaded {
                        name,
                        shown,
                        source,
                        scope: Scope::Once,
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

/// Where CRD output goes, by placement.
fn crd_path(model: &Model, file: &str) -> String {
    if model.context["crdsInTemplates"].as_bool().unwrap_or(true) {
        format!("templates/crds/{file}")
    } else {
        format!("crds/{file}")
    }
}

/// A name safe as one file name.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Renders every template for `model`. Nothing touches the disk; the caller writes the
/// result atomically.
pub fn render(model: &Model, templates: &Templates) -> Result<Files> {
    let loaded = templates.load()?;
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb.register_helper("yaml", Box::new(yaml_helper));
    hb.register_helper("json", Box::new(json_helper));
    for l in &loaded {
        hb.register_template_string(&l.name, &l.source)
            .map_err(|e| template_error(&l.shown, &e))?;
    }
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
        match l.scope {
            Scope::Once => {
                let text = hb
                    .render(&l.name, ctx)
                    .map_err(|e| render_error(&l.shown, &e))?;
                let path = l.name.trim_end_matches(".hbs").to_owned();
                emit(path, text, l)?;
            }
            Scope::PerCrd => {
                for crd in ctx["crds"].as_array().into_iter().flatten() {
                    let item_ctx = json!({
                        "chart": ctx["chart"],
                        "crdsInTemplates": ctx["crdsInTemplates"],
                        "webhooks": ctx["webhooks"],
                        "crd": crd,
                    });
                    let text = hb
                        .render(&l.name, &item_ctx)
                        .map_err(|e| render_error(&l.shown, &e))?;
                    let file = file_safe(crd["file"].as_str().unwrap_or("crd.yaml"));
                    emit(crd_path(model, &file), text, l)?;
                }
            }
            Scope::PerObject => {
                for obj in ctx["objects"].as_array().into_iter().flatten() {
                    let item_ctx = json!({
                        "chart": ctx["chart"],
                        "object": obj,
                    });
                    let text = hb
                        .render(&l.name, &item_ctx)
                        .map_err(|e| render_error(&l.shown, &e))?;
                    let file = file_safe(&format!(
                        "{}-{}.yaml",
                        obj["kind"].as_str().unwrap_or("object").to_lowercase(),
                        obj["name"].as_str().unwrap_or("unnamed")
                    ));
                    emit(format!("templates/objects/{file}"), text, l)?;
                }
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_escapes_helm_delimiters() {
        let v = json!({"d": "use {{ .Values.x }} here", "ns": RELEASE_NAMESPACE});
        let out = yaml_block(&v, 2, true).unwrap();
        assert!(out.contains(r#"{{ "{{" }} .Values.x {{ "}}" }}"#), "{out}");
        assert!(out.contains("{{ .Release.Namespace | quote }}"), "{out}");
        assert!(check_helm_actions(&out).is_ok());
        assert!(out.lines().all(|l| l.starts_with("  ")));
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
