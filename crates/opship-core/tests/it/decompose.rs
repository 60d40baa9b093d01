//! Taking a real bundle apart into what `kustomize build` of its project would give: shared by
//! the round-trip test and the generation benchmark.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use opship_core::bundle::{Inputs, Options};
use opship_core::manifest::{self, Object, Source};
use opship_core::yaml;
use serde_json::{Value, json};

/// A corpus bundle as read from disk.
pub struct Original {
    /// Field.
    pub csv: Object,
    /// Field.
    pub others: Vec<Object>,
    /// Field.
    pub package: String,
    /// Field.
    pub channels: Vec<String>,
    /// Field.
    pub default_channel: Option<String>,
}

/// Reads a bundle directory.
pub fn load_original(dir: &Path) -> Result<Original, String> {
    let objs = manifest::load(&Source::Path(dir.join("manifests"))).map_err(|e| e.to_string())?;
    let (csvs, others): (Vec<Object>, Vec<Object>) = objs
        .into_iter()
        .partition(|o| o.kind() == "ClusterServiceVersion");
    let csv = csvs.into_iter().next().ok_or("no CSV")?;
    let ann =
        yaml::read_stream(&dir.join("metadata/annotations.yaml")).map_err(|e| e.to_string())?;
    let a = &ann[0].value["annotations"];
    let s = |k: &str| a[k].as_str().map(str::to_owned);
    Ok(Original {
        csv,
        others,
        package: s("operators.operatorframework.io.bundle.package.v1").ok_or("no package")?,
        channels: s("operators.operatorframework.io.bundle.channels.v1")
            .unwrap_or_default()
            .split(',')
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect(),
        default_channel: s("operators.operatorframework.io.bundle.channel.default.v1")
            .filter(|d| !d.is_empty()),
    })
}

/// A generated object.
pub fn obj(v: Value) -> Object {
    Object::generated(v, Path::new("<decomposed>"))
}

/// What a kubebuilder project's `kustomize build` would give for this CSV.
pub fn decompose(o: &Original) -> (Vec<Object>, Object) {
    let spec = &o.csv.value()["spec"]["install"]["spec"];
    let mut objects = Vec::new();
    let mut sas = BTreeSet::new();
    for d in spec["deployments"].as_array().into_iter().flatten() {
        let mut meta = json!({"name": d["name"], "namespace": "system"});
        if let Some(l) = d.get("label").filter(|l| l.is_object()) {
            meta["labels"] = l.clone();
        }
        let pod = &d["spec"]["template"]["spec"];
        let sa = pod["serviceAccountName"]
            .as_str()
            .or(pod["serviceAccount"].as_str())
            .unwrap_or("default");
        sas.insert(sa.to_owned());
        objects.push(obj(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": d["spec"]})));
    }
    for (field, cluster) in [("permissions", false), ("clusterPermissions", true)] {
        for (i, p) in spec[field].as_array().into_iter().flatten().enumerate() {
            let sa = p["serviceAccountName"].as_str().unwrap_or_default();
            sas.insert(sa.to_owned());
            let (rk, bk) = if cluster {
                ("ClusterRole", "ClusterRoleBinding")
            } else {
                ("Role", "RoleBinding")
            };
            let name = format!("{sa}-{}-{i}", if cluster { "cluster" } else { "ns" });
            let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": rk,
                "metadata": {"name": name}, "rules": p["rules"]});
            let mut binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bk,
                "metadata": {"name": format!("{name}-binding")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": rk, "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "system"}]});
            if !cluster {
                role["metadata"]["namespace"] = json!("system");
                binding["metadata"]["namespace"] = json!("system");
            }
            objects.push(obj(role));
            objects.push(obj(binding));
        }
    }
    for sa in &sas {
        objects.push(obj(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": "system"}})));
    }
    objects.push(obj(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "system"}}),
    ));
    objects.extend(o.others.iter().cloned());

    // The CRs of alm-examples come back as sample objects when they are all instances of the
    // bundle's CRDs (otherwise the base keeps the annotation).
    let mut base = o.csv.value().clone();
    if let Some(examples) = alm_examples(o.csv.value()) {
        let served: BTreeSet<(String, String)> = o
            .others
            .iter()
            .filter(|x| x.kind() == "CustomResourceDefinition")
            .flat_map(|crd| {
                let g = crd.value()["spec"]["group"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let k = crd.value()["spec"]["names"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let mut out = Vec::new();
                for v in crd.value()["spec"]["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if v["served"].as_bool().unwrap_or(true) {
                        out.push((
                            format!("{g}/{}", v["name"].as_str().unwrap_or_default()),
                            k.clone(),
                        ));
                    }
                }
                if let Some(v) = crd.value()["spec"]["version"].as_str() {
                    out.push((format!("{g}/{v}"), k.clone()));
                }
                out
            })
            .collect();
        let all_owned = !examples.is_empty()
            && examples.iter().all(|e| {
                served.contains(&(
                    e["apiVersion"].as_str().unwrap_or_default().to_owned(),
                    e["kind"].as_str().unwrap_or_default().to_owned(),
                )) && e["metadata"]["name"].is_string()
            });
        let distinct: BTreeSet<String> = examples.iter().map(|e| e.to_string()).collect();
        if all_owned && distinct.len() == examples.len() {
            objects.extend(examples.into_iter().map(obj));
            base["metadata"]["annotations"]["alm-examples"] = json!("[]");
        }
    }
    if let Some(install) = base["spec"]["install"]["spec"].as_object_mut() {
        install.remove("deployments");
        install.remove("permissions");
        install.remove("clusterPermissions");
    }
    (objects, obj(base))
}

/// The CSV's alm-examples, parsed.
pub fn alm_examples(csv: &Value) -> Option<Vec<Value>> {
    let s = csv["metadata"]["annotations"]["alm-examples"].as_str()?;
    serde_json::from_str::<Vec<Value>>(s).ok()
}

/// Rules per service account of a permissions list.
pub fn rules_by_sa(list: &Value) -> BTreeMap<String, Vec<Value>> {
    let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for p in list.as_array().into_iter().flatten() {
        let rules = p["rules"].as_array().cloned().unwrap_or_default();
        if rules.is_empty() {
            continue;
        }
        m.entry(
            p["serviceAccountName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
        .or_default()
        .extend(rules);
    }
    m
}

/// Service accounts of the CSV's deployments.
pub fn deployment_sas(csv: &Value) -> BTreeSet<String> {
    csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let pod = &d["spec"]["template"]["spec"];
            pod["serviceAccountName"]
                .as_str()
                .or(pod["serviceAccount"].as_str())
                .unwrap_or("default")
                .to_owned()
        })
        .collect()
}

/// Service accounts that have permissions but run no deployment: a user passes them with
/// `--extra-service-accounts`, so the round trip does too.
pub fn extra_sas(csv: &Value) -> Vec<String> {
    let deps = deployment_sas(csv);
    let mut out = BTreeSet::new();
    for field in ["permissions", "clusterPermissions"] {
        for sa in rules_by_sa(&csv["spec"]["install"]["spec"][field]).into_keys() {
            if !deps.contains(&sa) {
                out.insert(sa);
            }
        }
    }
    out.into_iter().collect()
}

/// The decomposed inputs and the options a user would pass for them, or why there are none.
pub fn inputs_for(dir: &Path) -> Result<(Original, Inputs, Options), String> {
    let o = load_original(dir)?;
    if o.csv.value()["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return Err("CSV without install strategy deployments".into());
    }
    let version = o.csv.value()["spec"]["version"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let version = semver::Version::parse(&version)
        .map_err(|_| "CSV spec.version is not semver".to_owned())?;
    let (objects, base) = decompose(&o);
    let opts = Options {
        package: o.package.clone(),
        version,
        channels: o.channels.clone(),
        default_channel: o.default_channel.clone(),
        replaces: None,
        skips: vec![],
        skip_range: None,
        created_at: None,
        extra_service_accounts: extra_sas(o.csv.value()),
        exclude_kinds: vec!["Namespace".into()],
        labels: BTreeMap::new(),
        operator_image: None,
        display_name: None,
        csv_annotations: Default::default(),
        extra_manifests: Vec::new(),
        csv_substitutions: Vec::new(),
    };
    Ok((
        o,
        Inputs {
            objects,
            base_csv: Some(base),
        },
        opts,
    ))
}
