#!/usr/bin/env python3
"""Drives the real Helm engine (PyPI helm-python-sdk, Helm SDK v4) for opship's chart tests.

Every command prints one JSON document on stdout; a Helm error is printed as
{"error": {"type": ..., "message": ...}} with exit code 0, so the test decides what it means.
Commands:
  check CHART [--env FILE]... [--bad-json JSON]...
        everything one chart needs in one process: lint, render with the defaults, render
        with each values file, and validate_schema with each bad values document
  lint CHART [--values-json JSON] [--strict]
  lint-many CHART...    (lint of each chart, in one process: {chart: result})
  render CHART [--values FILE]... [--values-json JSON] [--namespace NS] [--name NAME]
  render-many JOBS      (JOBS: a JSON file [{chart, values, namespace}]; one result per job,
                         {"manifests": {...}} or {"error": {...}}, charts loaded once each)
  validate CHART --values-json JSON
  package CHART DEST
  index DIR [--url URL]
  show OCI_REF          (chart metadata pulled from a registry, plain HTTP)
  tags REPO             (tags of REGISTRY/REPO/NAME, plain HTTP)
  pull OCI_REF VERSION DEST
  tgz FILE              (entries of a chart archive read with Python's tarfile: name, mode,
                         uid, gid, mtime, type, sha256; and the gzip header bytes)
"""
import argparse
import hashlib
import json
import sys
import tarfile

import helm_python as helm


def merge(base, over):
    """Deep merge of values, the way Helm coalesces -f files: maps merge, others replace."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def values_of(args):
    values = {}
    for f in getattr(args, "values", None) or []:
        with open(f, encoding="utf-8") as fh:
            values = merge(values, helm.values_from_yaml(fh.read()) or {})
    if getattr(args, "values_json", None):
        values = merge(values, json.loads(args.values_json))
    return values


def attempt(f):
    try:
        return f()
    except helm.HelmError as e:
        return {"error": {"type": type(e).__name__, "message": str(e)}}


def check(args):
    c = helm.Chart.load(args.chart)
    out = {
        "sdk": helm.helm_sdk_version(),
        "lint": attempt(lambda: helm.lint(args.chart)),
        "default": attempt(lambda: c.render({}, name="rel", namespace="ops", is_install=True)),
        "crds": list(c.crds),
        "envs": {},
        "bad": [],
    }
    for f in args.env:
        with open(f, encoding="utf-8") as fh:
            values = helm.values_from_yaml(fh.read()) or {}
        out["envs"][f] = attempt(
            lambda: c.render(values, name="rel", namespace="ops", is_install=True))
    for b in args.bad_json:
        def validate():
            c.validate_schema(json.loads(b))
            return {"valid": True}
        out["bad"].append(attempt(validate))
    return out


def tgz(path):
    entries = []
    with tarfile.open(path, "r:gz") as t:
        for m in t.getmembers():
            data = t.extractfile(m).read() if m.isfile() else b""
            entries.append({
                "name": m.name, "mode": m.mode, "uid": m.uid, "gid": m.gid,
                "uname": m.uname, "gname": m.gname, "mtime": m.mtime,
                "type": m.type.decode(), "size": m.size,
                "sha256": hashlib.sha256(data).hexdigest(),
                "text": data.decode("utf-8", "replace") if m.name.endswith("Chart.yaml") else None,
            })
    with open(path, "rb") as f:
        header = f.read(10).hex()
    return {"entries": entries, "gzip_header": header}


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("check")
    a.add_argument("chart")
    a.add_argument("--env", action="append", default=[])
    a.add_argument("--bad-json", action="append", default=[])
    a = sub.add_parser("lint-many")
    a.add_argument("charts", nargs="+")
    a = sub.add_parser("lint")
    a.add_argument("chart")
    a.add_argument("--values-json")
    a.add_argument("--strict", action="store_true")
    a = sub.add_parser("render")
    a.add_argument("chart")
    a.add_argument("--values", action="append")
    a.add_argument("--values-json")
    a.add_argument("--namespace", default="ops")
    a.add_argument("--name", default="rel")
    a = sub.add_parser("render-many")
    a.add_argument("jobs")
    a = sub.add_parser("validate")
    a.add_argument("chart")
    a.add_argument("--values-json", required=True)
    a = sub.add_parser("package")
    a.add_argument("chart")
    a.add_argument("dest")
    a = sub.add_parser("index")
    a.add_argument("dir")
    a.add_argument("--url")
    a = sub.add_parser("show")
    a.add_argument("ref")
    a = sub.add_parser("tags")
    a.add_argument("repo")
    a = sub.add_parser("pull")
    a.add_argument("ref")
    a.add_argument("version")
    a.add_argument("dest")
    a = sub.add_parser("tgz")
    a.add_argument("file")
    args = p.parse_args()

    try:
        if args.cmd == "check":
            out = check(args)
        elif args.cmd == "lint-many":
            out = {c: attempt(lambda c=c: helm.lint(c)) for c in args.charts}
        elif args.cmd == "lint":
            values = values_of(args) or None
            out = helm.lint(args.chart, values, strict=args.strict or None)
        elif args.cmd == "render":
            c = helm.Chart.load(args.chart)
            manifests = c.render(values_of(args), name=args.name, namespace=args.namespace, is_install=True)
            out = {"manifests": manifests, "crds": list(c.crds), "sdk": helm.helm_sdk_version()}
        elif args.cmd == "render-many":
            with open(args.jobs, encoding="utf-8") as fh:
                jobs = json.load(fh)
            charts = {}
            out = []
            for j in jobs:
                def one(j=j):
                    c = charts.get(j["chart"])
                    if c is None:
                        c = charts[j["chart"]] = helm.Chart.load(j["chart"])
                    return {"manifests": c.render(j["values"], name="rel", namespace=j["namespace"], is_install=True)}
                out.append(attempt(one))
        elif args.cmd == "validate":
            c = helm.Chart.load(args.chart)
            c.validate_schema(json.loads(args.values_json))
            out = {"valid": True}
        elif args.cmd == "package":
            path = helm.package(args.chart, destination=args.dest)
            out = {"path": path, "digest": helm.digest(path)}
        elif args.cmd == "index":
            out = helm.repo_index_generate(args.dir, base_url=args.url)
        elif args.cmd == "show":
            out = {"chart": helm.show(args.ref, output_format="chart", plain_http=True)}
        elif args.cmd == "tags":
            out = {"tags": helm.RegistryClient(plain_http=True).tags(args.repo)}
        elif args.cmd == "pull":
            out = helm.pull(args.ref, version=args.version, destination=args.dest, plain_http=True)
        elif args.cmd == "tgz":
            out = tgz(args.file)
        else:
            raise SystemExit(f"unknown command {args.cmd}")
    except helm.HelmError as e:
        out = {"error": {"type": type(e).__name__, "message": str(e)}}
    json.dump(out, sys.stdout, sort_keys=True, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
