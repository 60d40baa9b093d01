//! Broken templates are errors naming the template file and line; a replaced or added
//! template is used.

use std::path::Path;

use opship_chart::{Error, Options, Templates};

use crate::tracked;

fn render_with(name: &str, text: &str) -> (tempfile::TempDir, Result<opship_chart::Chart, Error>) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(name);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    let r = opship_chart::render_bundle(
        &tracked("bundle/0.3.0"),
        &Options::default(),
        &Templates {
            dir: Some(tmp.path().to_path_buf()),
        },
        &Default::default(),
    );
    (tmp, r)
}

fn template_error(name: &str, text: &str) -> (String, Option<usize>, String) {
    let (tmp, r) = render_with(name, text);
    match r {
        Err(Error::Template {
            template,
            line,
            message,
        }) => {
            let shown = tmp.path().join(name).display().to_string();
            assert_eq!(template, shown, "the error names the template file");
            (template, line, message)
        }
        Err(e) => panic!("{name}: expected a template error, got {e}"),
        Ok(_) => panic!("{name}: the broken template rendered"),
    }
}

#[test]
fn handlebars_syntax_error_names_file_and_line() {
    let (_, line, msg) = template_error(
        "templates/deployment.yaml.hbs",
        "# a comment\n{{#each deployments}}\nname: {{name}}\n{{/if}}\n",
    );
    assert_eq!(line, Some(4), "{msg}");
}

#[test]
fn missing_variable_is_an_error_in_strict_mode() {
    let (_, line, msg) = template_error(
        "templates/NOTES.txt.hbs",
        "Installed.\n\nChart {{chart.nmae}} is ready.\n",
    );
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("chart.nmae"), "{msg}");
}

/// A Helm expression written without its backslash is taken by Handlebars: an error, not a
/// silently emptied value.
#[test]
fn unescaped_helm_expression_is_an_error() {
    let (_, line, msg) = template_error(
        "templates/serviceaccount.yaml.hbs",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n  namespace: {{ .Release.Namespace }}\n",
    );
    assert_eq!(line, Some(5), "{msg}");
}

/// A Helm expression that lost a brace would reach Helm broken; the check on the rendered
/// text catches it and points at the template line.
#[test]
fn mangled_helm_expression_is_an_error() {
    let (_, line, msg) = template_error(
        "templates/extra.yaml.hbs",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  replicas: \\{{ .Values.replicas }\n",
    );
    assert_eq!(line, Some(6), "{msg}");
    assert!(msg.contains("never closed"), "{msg}");
    let (_, line, msg) = template_error(
        "templates/extra.yaml.hbs",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  replicas: \\{ .Values.replicas }}\n",
    );
    assert_eq!(line, Some(6), "{msg}");
    assert!(msg.contains("closes no Helm action"), "{msg}");
}

/// A template of the same name replaces the embedded one; a new one is added to the chart.
#[test]
fn templates_are_replaced_and_added() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("templates")).unwrap();
    std::fs::write(
        tmp.path().join("templates/NOTES.txt.hbs"),
        "{{chart.name}} on \\{{ .Release.Namespace }}\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("templates/extra.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{chart.name}}-extra\ndata:\n  csv: {{json csv.name}}\n",
    )
    .unwrap();
    let chart = opship_chart::render_bundle(
        &tracked("bundle/0.3.0"),
        &Options::default(),
        &Templates {
            dir: Some(tmp.path().to_path_buf()),
        },
        &Default::default(),
    )
    .unwrap();
    assert_eq!(
        chart.files["templates/NOTES.txt"],
        b"memcached-operator on {{ .Release.Namespace }}\n"
    );
    let extra = String::from_utf8(chart.files["templates/extra.yaml"].clone()).unwrap();
    assert!(
        extra.contains("csv: \"memcached-operator.v0.3.0\""),
        "{extra}"
    );
    // The embedded defaults and OLM v1's objects are still there.
    assert!(chart.files.contains_key("templates/_helpers.tpl"));
    assert!(
        chart
            .files
            .contains_key("templates/olm/deployment-memcached-operator-controller-manager.yaml")
    );
}

/// Every embedded default is shipped in chart-templates/ (what --templates starts from).
#[test]
fn embedded_templates_are_the_repository_files() {
    for name in opship_chart::render::default_template_names() {
        assert!(
            Path::new(&tracked("chart-templates").join(name)).is_file(),
            "{name}"
        );
    }
}
