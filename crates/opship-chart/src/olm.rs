//! The chart's objects as OLM v1 installs them: opship-install renders the bundle at
//! chart-generation time once per install mode (all namespaces, or one watch namespace) and
//! certificate provider, with stand-ins for the namespaces; objects equal across variants are
//! written once, the others behind Helm conditions on `watchNamespace` and `certProvider`.
//! The deployment config (`nodeSelector`, `env`, …) is applied by a Helm helper with OLM's
//! merge rules, since its values arrive only at install time. These are the objects of the
//! chart `chart render` writes (docs/chart.md, "How the chart is made").

use std::collections::BTreeMap;
use std::path::Path;

use opship_install::check::array;
use opship_install::{Bundle, CertProvider, Options};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::CrdPlacement;
use crate::render::{Files, helm_text};

/// Stand-in for the release namespace while rendering; replaced by Helm's.
const INSTALL_NS: &str = "opship-x-release-namespace-x";
/// Stand-in for the watch namespace in the one-namespace variant.
const WATCH_NS: &str = "opship-x-watch-namespace-x";

/// One rendering of the bundle: install mode (`all` or `ns`) and certificate provider (`""`,
/// `cert-manager`, `openshift-serviceca`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Variant {
    mode: &'static str,
    provider: &'static str,
}

/// The template files of the OLM objects (`templates/olm/…`, `templates/_olm.tpl`) for chart
/// `name`.
pub fn templates(
    bundle: &Bundle,
    name: &str,
    manager: Option<&(String, String)>,
    crds: CrdPlacement,
) -> Result<Files> {
    let problems =
        opship_install::check_bundle(&bundle.csv, &bundle.objects, bundle.package.as_deref());
    if !problems.is_empty() {
        return Err(opship_install::Error::Refused {
            path: bundle.dir.clone(),
            problems,
        }
        .into());
    }
    let text: String = std::iter::once(&bundle.csv)
        .chain(&bundle.objects)
        .map(|o| o.value().to_string())
        .collect();
    if text.contains(INSTALL_NS) || text.contains(WATCH_NS) {
        return Err(Error::bundle(
            &bundle.dir,
            "the bundle contains opship's namespace stand-ins",
        ));
    }
    let modes = opship_install::check::supported_modes(bundle.csv.value());
    let mut variants = Vec::new();
    let has_webhooks = !array(&bundle.csv.value()["spec"]["webhookdefinitions"]).is_empty();
    let providers: &[&'static str] = if has_webhooks {
        &["", "cert-manager", "openshift-serviceca"]
    } else {
        &[""]
    };
    if modes.contains("AllNamespaces") {
        for p in providers {
            variants.push(Variant {
                mode: "all",
                provider: p,
            });
        }
    }
    if modes.contains("OwnNamespace") || modes.contains("SingleNamespace") {
        for p in providers {
            variants.push(Variant {
                mode: "ns",
                provider: p,
            });
        }
    }
    // object key -> variant -> object
    let mut objects: BTreeMap<(String, String), BTreeMap<Variant, Value>> = BTreeMap::new();
    for v in &variants {
        let opts = Options {
            install_namespace: INSTALL_NS.to_owned(),
            watch_namespace: None,
            deployment_config: None,
            cert_provider: CertProvider::parse(v.provider),
        };
        let watch = if v.mode == "all" { "" } else { WATCH_NS };
        let objs = opship_install::generate(bundle, &opts, watch)?;
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for o in objs {
            let kind = o["kind"].as_str().unwrap_or_default().to_owned();
            let oname = o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let n = seen.entry((kind.clone(), oname.clone())).or_default();
            *n += 1;
            let key_name = if *n > 1 {
                format!("{oname}-{n}")
            } else {
                oname
            };
            objects
                .entry((kind, key_name))
                .or_default()
                .insert(v.clone(), o);
        }
    }
    let owned_manager = manager_container(bundle);
    let manager = manager.or(owned_manager.as_ref());
    let mut files = Files::new();
    for ((kind, oname), by_variant) in &objects {
        if kind == "CustomResourceDefinition" {
            crd_file(&mut files, oname, by_variant, &variants, name, crds)?;
            continue;
        }
        let file = format!(
            "templates/olm/{}-{}.yaml",
            kind.to_ascii_lowercase(),
            file_safe(oname)
        );
        let texts = by_variant
            .iter()
            .map(|(v, o)| {
                Ok((
                    v.clone(),
                    helm_template(&opship_core::yaml::to_string(o)?, name),
                ))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        let body = conditional(&texts, &variants, name);
        let text = if kind == "Deployment" {
            let define = format!("{name}.olm.{}", file_safe(oname));
            let manager_args = match manager {
                Some((d, c)) if d == oname => format!(" \"container\" {}", go_quote(c)),
                _ => String::new(),
            };
            format!(
                "{{{{- define {def} }}}}\n{body}{{{{- end }}}}\n{{{{- include \"{name}.checkInstallMode\" . }}}}\n{{{{- $dep := include {def} . | fromYaml }}}}\n{{{{- if $dep }}}}\n{{{{- include \"{name}.applyDeploymentConfig\" (dict \"dep\" $dep \"v\" .Values{manager_args}) }}}}\n---\n{{{{ toYaml $dep }}}}\n{{{{- end }}}}\n",
                def = go_quote(&define)
            )
        } else {
            format!("{{{{- include \"{name}.checkInstallMode\" . }}}}\n{body}")
        };
        files.insert(unique_path(&files, &file), text.into_bytes());
    }
    files.insert(
        "templates/_olm.tpl".into(),
        helpers(name, &modes).into_bytes(),
    );
    Ok(files)
}

/// The container the `image` value applies to: the CSV's `containerImage`, else `manager`,
/// else the first container of the first deployment.
fn manager_container(bundle: &Bundle) -> Option<(String, String)> {
    let csv = bundle.csv.value();
    let deps = array(&csv["spec"]["install"]["spec"]["deployments"]);
    let image = csv["metadata"]["annotations"]["containerImage"].as_str();
    let find = |pred: &dyn Fn(&Value) -> bool| {
        deps.iter().find_map(|d| {
            array(&d["spec"]["template"]["spec"]["containers"])
                .iter()
                .find(|c| pred(c))
                .map(|c| {
                    (
                        d["name"].as_str().unwrap_or_default().to_owned(),
                        c["name"].as_str().unwrap_or_default().to_owned(),
                    )
                })
        })
    };
    image
        .and_then(|i| find(&|c| c["image"].as_str() == Some(i)))
        .or_else(|| find(&|c| c["name"] == "manager"))
        .or_else(|| find(&|_| true))
}

/// `path`, or with `-2`, `-3`, … before `.yaml` when taken: two names can become the same
/// file name once made safe (`a:b` and `a_b`), and neither may replace the other.
fn unique_path(files: &Files, path: &str) -> String {
    if !files.contains_key(path) {
        return path.to_owned();
    }
    let stem = path.strip_suffix(".yaml").unwrap_or(path);
    (2..)
        .map(|n| format!("{stem}-{n}.yaml"))
        .find(|p| !files.contains_key(p))
        .unwrap_or_default()
}

fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// YAML of one object as Helm template text: data escaped, stand-ins replaced.
fn helm_template(yaml: &str, name: &str) -> String {
    let escaped = helm_text(yaml);
    let mut out = String::with_capacity(escaped.len());
    for line in escaped.split_inclusive('\n') {
        let (content, nl) = match line.strip_suffix('\n') {
            Some(c) => (c, "\n"),
            None => (line, ""),
        };
        let watch = format!("(include \"{name}.watchNamespace\" .)");
        // A stand-in that is the whole scalar is quoted, since a namespace such as `123`
        // would otherwise be read as a number.
        let mut l = content.to_owned();
        for (stand_in, expr) in [
            (INSTALL_NS, ".Release.Namespace".to_owned()),
            (WATCH_NS, watch),
        ] {
            for prefix in [": ", "- "] {
                let whole = format!("{prefix}{stand_in}");
                if l.ends_with(&whole) {
                    let cut = l.len() - stand_in.len();
                    l = format!("{}{{{{ {expr} | quote }}}}", &l[..cut]);
                }
            }
            l = l.replace(stand_in, &format!("{{{{ {expr} }}}}"));
        }
        out.push_str(&l);
        out.push_str(nl);
    }
    out
}

/// The object's text per variant, behind conditions where variants differ; nothing for
/// variants that do not have it.
fn conditional(by_variant: &BTreeMap<Variant, String>, variants: &[Variant], name: &str) -> String {
    // An object that differs between the modes only by the watch namespace (a Deployment's
    // `olm.targetNamespaces`) is written once: the one-namespace text renders the
    // all-namespaces one when the watch namespace is "".
    let watch = format!("{{{{ (include \"{name}.watchNamespace\" .) | quote }}}}");
    let mut by_variant = by_variant.clone();
    let pairs: Vec<(Variant, Variant)> = by_variant
        .keys()
        .filter(|v| v.mode == "all")
        .filter_map(|v| {
            let ns = Variant {
                mode: "ns",
                provider: v.provider,
            };
            by_variant.contains_key(&ns).then(|| (v.clone(), ns))
        })
        .collect();
    for (all, ns) in pairs {
        let ns_text = by_variant[&ns].clone();
        if ns_text.contains(&watch) && ns_text.replace(&watch, "\"\"") == by_variant[&all] {
            by_variant.insert(all, ns_text);
        }
    }
    let mut groups: Vec<(String, Vec<&Variant>)> = Vec::new();
    for (v, text) in &by_variant {
        match groups.iter_mut().find(|(t, _)| t == text) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((text.clone(), vec![v])),
        }
    }
    if groups.len() == 1 && groups[0].1.len() == variants.len() {
        return format!("---\n{}", groups[0].0);
    }
    let mut out = String::new();
    for (text, vs) in groups {
        let cond: Vec<String> = vs
            .iter()
            .map(|v| {
                format!(
                    "(and (eq (include \"{name}.installMode\" $) \"{}\") (eq (include \"{name}.certProvider\" $) \"{}\"))",
                    v.mode, v.provider
                )
            })
            .collect();
        out.push_str(&format!(
            "{{{{- if or false {} }}}}\n---\n{text}{{{{- end }}}}\n",
            cond.join(" ")
        ));
    }
    out
}

/// The file of one CRD. In `templates/`, behind `crd.enabled`, with `helm.sh/resource-policy:
/// keep` while `crd.keep` is set (only `metadata` is written twice: a CRD can be megabytes).
/// In `crds/`, plain YAML, which Helm does not template: refused for a CRD that names the
/// release namespace (a conversion webhook's Service) or differs between variants.
fn crd_file(
    files: &mut Files,
    oname: &str,
    by_variant: &BTreeMap<Variant, Value>,
    variants: &[Variant],
    name: &str,
    placement: CrdPlacement,
) -> Result<()> {
    // `<group>_<plural>.yaml`, as operator-sdk names CRD files.
    let first = by_variant.values().next();
    let file = match first.map(|c| (&c["spec"]["group"], &c["spec"]["names"]["plural"])) {
        Some((Value::String(g), Value::String(p))) => file_safe(&format!("{g}_{p}.yaml")),
        _ => format!("{}.yaml", file_safe(oname)),
    };
    if placement == CrdPlacement::CrdsDir {
        let first = by_variant.values().next().cloned().unwrap_or(Value::Null);
        let text = opship_core::yaml::to_string(&first)?;
        if by_variant.values().any(|o| *o != first)
            || text.contains(INSTALL_NS)
            || text.contains(WATCH_NS)
        {
            return Err(Error::bundle(
                Path::new(oname),
                "this CRD has a conversion webhook, whose Service is in the release namespace; Helm does not template crds/, so put CRDs in templates (--crds templates)",
            ));
        }
        let path = unique_path(files, &format!("crds/{file}"));
        files.insert(path, text.into_bytes());
        return Ok(());
    }
    let texts = by_variant
        .iter()
        .map(|(v, o)| Ok((v.clone(), crd_text(o, name)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    let body = conditional(&texts, variants, name);
    let path = unique_path(files, &format!("templates/crds/{file}"));
    files.insert(
        path,
        format!(
            "{{{{- if .Values.crd.enabled }}}}\n{{{{- include \"{name}.checkInstallMode\" . }}}}\n{body}{{{{- end }}}}\n"
        )
        .into_bytes(),
    );
    Ok(())
}

/// A CRD as template text: `metadata` twice (with and without the keep annotation, chosen by
/// `crd.keep`), every other field once.
fn crd_text(crd: &Value, name: &str) -> Result<String> {
    let Some(map) = crd.as_object() else {
        return Ok(helm_template(&opship_core::yaml::to_string(crd)?, name));
    };
    let part = |keep: &dyn Fn(&str) -> bool| -> serde_json::Map<String, Value> {
        map.iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let head = part(&|k| k < "metadata");
    let tail = part(&|k| k > "metadata");
    let meta = map
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    let mut kept = meta.clone();
    if !kept["annotations"].is_object() {
        kept["annotations"] = serde_json::json!({});
    }
    kept["annotations"]["helm.sh/resource-policy"] = Value::String("keep".into());
    let yaml = |v: Value| -> Result<String> {
        Ok(helm_template(&opship_core::yaml::to_string(&v)?, name))
    };
    let mut out = String::new();
    if !head.is_empty() {
        out.push_str(&yaml(Value::Object(head))?);
    }
    out.push_str("{{- if .Values.crd.keep }}\n");
    out.push_str(&yaml(serde_json::json!({ "metadata": kept }))?);
    out.push_str("{{- else }}\n");
    out.push_str(&yaml(serde_json::json!({ "metadata": meta }))?);
    out.push_str("{{- end }}\n");
    if !tail.is_empty() {
        out.push_str(&yaml(Value::Object(tail))?);
    }
    Ok(out)
}

/// `_olm.tpl`: the watch namespace and install-mode check, the certificate provider, and the
/// deployment config applied with OLM v1's rules.
fn helpers(name: &str, modes: &std::collections::BTreeSet<String>) -> String {
    // The same list as `opship manifests` prints, so the two refusals read alike.
    let list = opship_install::check::mode_list(modes);
    let all = modes.contains("AllNamespaces");
    let own = modes.contains("OwnNamespace");
    let single = modes.contains("SingleNamespace");
    let default = if all {
        String::new()
    } else if own {
        "{{- if kindIs \"invalid\" $w }}{{- $w = $.Release.Namespace }}{{- end }}".to_owned()
    } else {
        format!(
            "{{{{- if kindIs \"invalid\" $w }}}}{{{{- fail \"watchNamespace is required: the operator supports only {list}\" }}}}{{{{- end }}}}"
        )
    };
    let check = |mode: &str, ok: bool, what: &str, args: &str| {
        if ok {
            String::new()
        } else {
            format!(
                "{{{{- if eq $mode \"{mode}\" }}}}{{{{- fail (printf \"invalid target namespaces [%s]: supported install modes {list} do not support {what}\" {args}) }}}}{{{{- end }}}}\n"
            )
        }
    };
    format!(
        r#"{{{{/* OLM v1's install rules for this chart (generated by opship from the bundle). */}}}}
{{{{- define "{name}.watchNamespace" -}}}}
{{{{- $w := .Values.watchNamespace }}}}
{default}
{{{{- if kindIs "invalid" $w }}}}{{{{- $w = "" }}}}{{{{- end }}}}
{{{{- $w }}}}
{{{{- end }}}}

{{{{- define "{name}.installMode" -}}}}
{{{{- if eq (include "{name}.watchNamespace" .) "" }}}}all{{{{- else }}}}ns{{{{- end }}}}
{{{{- end }}}}

{{{{- define "{name}.certProvider" -}}}}
{{{{- .Values.certProvider | default "" }}}}
{{{{- end }}}}

{{{{- define "{name}.checkInstallMode" -}}}}
{{{{- $w := include "{name}.watchNamespace" . }}}}
{{{{- if contains "," $w }}}}{{{{- fail (printf "watchNamespace %q names several namespaces (MultiNamespace); OLM v1 installs an operator for all namespaces or for one" $w) }}}}{{{{- end }}}}
{{{{- $mode := "SingleNamespace" }}}}
{{{{- if eq $w "" }}}}{{{{- $mode = "AllNamespaces" }}}}{{{{- else if eq $w .Release.Namespace }}}}{{{{- $mode = "OwnNamespace" }}}}{{{{- end }}}}
{check_all}{check_own}{check_single}{{{{- end }}}}

{{{{- define "{name}.mergeByName" -}}}}
{{{{- $cur := index . 0 | default list }}}}{{{{- $items := index . 1 }}}}
{{{{- $new := list }}}}
{{{{- range $e := $cur }}}}{{{{- $r := $e }}}}{{{{- range $i := $items }}}}{{{{- if eq $i.name $e.name }}}}{{{{- $r = $i }}}}{{{{- end }}}}{{{{- end }}}}{{{{- $new = append $new $r }}}}{{{{- end }}}}
{{{{- range $i := $items }}}}{{{{- $found := false }}}}{{{{- range $e := $cur }}}}{{{{- if eq $e.name $i.name }}}}{{{{- $found = true }}}}{{{{- end }}}}{{{{- end }}}}{{{{- if not $found }}}}{{{{- $new = append $new $i }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- toJson $new }}}}
{{{{- end }}}}

{{{{- define "{name}.appendUnique" -}}}}
{{{{- $cur := index . 0 | default list }}}}
{{{{- range $i := index . 1 }}}}{{{{- $dup := false }}}}{{{{- range $e := $cur }}}}{{{{- if eq (toJson $e) (toJson $i) }}}}{{{{- $dup = true }}}}{{{{- end }}}}{{{{- end }}}}{{{{- if not $dup }}}}{{{{- $cur = append $cur $i }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- toJson $cur }}}}
{{{{- end }}}}

{{{{- define "{name}.affinityPartEmpty" -}}}}
{{{{- $k := index . 0 }}}}{{{{- $p := index . 1 }}}}
{{{{- $pref := empty (get $p "preferredDuringSchedulingIgnoredDuringExecution") }}}}
{{{{- if eq $k "nodeAffinity" }}}}
{{{{- $req := get $p "requiredDuringSchedulingIgnoredDuringExecution" }}}}
{{{{- if and (or (kindIs "invalid" $req) (not (kindIs "map" $req)) (empty (get $req "nodeSelectorTerms"))) $pref }}}}true{{{{- end }}}}
{{{{- else }}}}
{{{{- if and (empty (get $p "requiredDuringSchedulingIgnoredDuringExecution")) $pref }}}}true{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}

{{{{- define "{name}.applyDeploymentConfig" -}}}}
{{{{- $dep := .dep }}}}{{{{- $v := .v }}}}
{{{{- $pod := $dep.spec.template.spec }}}}
{{{{- if and .container (not (kindIs "invalid" $v.replicas)) }}}}{{{{- $_ := set $dep.spec "replicas" $v.replicas }}}}{{{{- end }}}}
{{{{- range $c := $pod.containers }}}}
{{{{- if and $.container (eq $c.name $.container) $v.image }}}}
{{{{- $img := $v.image.repository }}}}{{{{- with $v.image.tag }}}}{{{{- $img = printf "%s:%s" $img . }}}}{{{{- end }}}}{{{{- with $v.image.digest }}}}{{{{- $img = printf "%s@%s" $img . }}}}{{{{- end }}}}
{{{{- $_ := set $c "image" $img }}}}
{{{{- end }}}}
{{{{- if $v.env }}}}{{{{- $_ := set $c "env" (include "{name}.mergeByName" (list $c.env $v.env) | fromJsonArray) }}}}{{{{- end }}}}
{{{{- if $v.envFrom }}}}{{{{- $_ := set $c "envFrom" (include "{name}.appendUnique" (list $c.envFrom $v.envFrom) | fromJsonArray) }}}}{{{{- end }}}}
{{{{- end }}}}
{{{{- if $v.volumes }}}}{{{{- $_ := set $pod "volumes" (include "{name}.mergeByName" (list $pod.volumes $v.volumes) | fromJsonArray) }}}}{{{{- end }}}}
{{{{- range $c := $pod.containers }}}}
{{{{- if $v.volumeMounts }}}}{{{{- $_ := set $c "volumeMounts" (include "{name}.mergeByName" (list $c.volumeMounts $v.volumeMounts) | fromJsonArray) }}}}{{{{- end }}}}
{{{{- end }}}}
{{{{- if $v.tolerations }}}}{{{{- $_ := set $pod "tolerations" (include "{name}.appendUnique" (list $pod.tolerations $v.tolerations) | fromJsonArray) }}}}{{{{- end }}}}
{{{{- if not (kindIs "invalid" $v.resources) }}}}{{{{- range $c := $pod.containers }}}}{{{{- $_ := set $c "resources" (deepCopy $v.resources) }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- if not (kindIs "invalid" $v.nodeSelector) }}}}{{{{- if empty $v.nodeSelector }}}}{{{{- $_ := unset $pod "nodeSelector" }}}}{{{{- else }}}}{{{{- $_ := set $pod "nodeSelector" (deepCopy $v.nodeSelector) }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- if not (kindIs "invalid" $v.affinity) }}}}
{{{{- $a := $v.affinity }}}}
{{{{- $given := list }}}}{{{{- range $k := list "nodeAffinity" "podAffinity" "podAntiAffinity" }}}}{{{{- if hasKey $a $k }}}}{{{{- if not (kindIs "invalid" (get $a $k)) }}}}{{{{- $given = append $given $k }}}}{{{{- end }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- if empty $given }}}}{{{{- $_ := unset $pod "affinity" }}}}
{{{{- else }}}}
{{{{- if not (kindIs "map" $pod.affinity) }}}}{{{{- $_ := set $pod "affinity" dict }}}}{{{{- end }}}}
{{{{- $cur := $pod.affinity }}}}
{{{{- range $k := $given }}}}{{{{- $part := get $a $k }}}}{{{{- if include "{name}.affinityPartEmpty" (list $k $part) }}}}{{{{- $_ := unset $cur $k }}}}{{{{- else }}}}{{{{- $_ := set $cur $k (deepCopy $part) }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- $empty := true }}}}{{{{- range $k := list "nodeAffinity" "podAffinity" "podAntiAffinity" }}}}{{{{- if hasKey $cur $k }}}}{{{{- if not (include "{name}.affinityPartEmpty" (list $k (get $cur $k))) }}}}{{{{- $empty = false }}}}{{{{- end }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- if $empty }}}}{{{{- $_ := unset $pod "affinity" }}}}{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}
{{{{- with $v.annotations }}}}
{{{{- range $t := list $dep.metadata $dep.spec.template.metadata }}}}
{{{{- if not (kindIs "map" $t.annotations) }}}}{{{{- $_ := set $t "annotations" dict }}}}{{{{- end }}}}
{{{{- range $k, $val := $v.annotations }}}}{{{{- if not (hasKey $t.annotations $k) }}}}{{{{- $_ := set $t.annotations $k $val }}}}{{{{- end }}}}{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}
{{{{- end }}}}
"#,
        check_all = check("AllNamespaces", all, "targeting all namespaces", "$w"),
        check_own = check("OwnNamespace", own, "targeting own namespace", "$w"),
        check_single = check("SingleNamespace", single, "target namespaces [%s]", "$w $w"),
    )
}

/// Loads a bundle for [`templates`].
pub fn load(dir: &Path) -> Result<Bundle> {
    Ok(opship_install::load(dir)?)
}

/// The chart values of the OLM objects, defaults equal to what OLM installs: `watchNamespace`
/// (`""` when AllNamespaces is supported, else unset: the release namespace with OwnNamespace,
/// else required), `certProvider`, one key per deployment-config option (unset), and the
/// operator's `image` and `replicas` (the bundle's).
pub fn values(bundle: &Bundle, manager: Option<&(String, String)>) -> Value {
    let csv = bundle.csv.value();
    let modes = opship_install::check::supported_modes(csv);
    let has_webhooks = !array(&csv["spec"]["webhookdefinitions"]).is_empty();
    let mut m = serde_json::Map::new();
    m.insert(
        "watchNamespace".into(),
        if modes.contains("AllNamespaces") {
            Value::String(String::new())
        } else {
            Value::Null
        },
    );
    if has_webhooks {
        m.insert(
            "certProvider".into(),
            // OLM v1's default: no provider (as `opship manifests` without --cert-provider).
            Value::String(String::new()),
        );
    }
    for k in opship_install::config::DEPLOYMENT_CONFIG_KEYS {
        m.insert((*k).into(), Value::Null);
    }
    let owned = manager_container(bundle);
    if let Some((dep, container)) = manager.or(owned.as_ref()) {
        let deps = array(&csv["spec"]["install"]["spec"]["deployments"]);
        if let Some(d) = deps.iter().find(|d| d["name"] == dep.as_str()) {
            m.insert("replicas".into(), d["spec"]["replicas"].clone());
            let image = array(&d["spec"]["template"]["spec"]["containers"])
                .iter()
                .find(|c| c["name"] == container.as_str())
                .and_then(|c| c["image"].as_str())
                .unwrap_or_default();
            let (repository, tag, digest) = crate::model::split_image(image);
            m.insert(
                "image".into(),
                serde_json::json!({"repository": repository, "tag": tag, "digest": digest}),
            );
        }
    }
    if bundle
        .objects
        .iter()
        .any(|o| o.kind() == "CustomResourceDefinition")
    {
        m.insert(
            "crd".into(),
            serde_json::json!({"enabled": true, "keep": false}),
        );
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_never_collide() {
        let mut files = Files::new();
        files.insert("templates/olm/configmap-a_b.yaml".into(), Vec::new());
        assert_eq!(
            unique_path(&files, "templates/olm/configmap-a_b.yaml"),
            "templates/olm/configmap-a_b-2.yaml"
        );
        files.insert("templates/olm/configmap-a_b-2.yaml".into(), Vec::new());
        assert_eq!(
            unique_path(&files, "templates/olm/configmap-a_b.yaml"),
            "templates/olm/configmap-a_b-3.yaml"
        );
        assert_eq!(
            unique_path(&files, "templates/olm/x.yaml"),
            "templates/olm/x.yaml"
        );
    }
}
