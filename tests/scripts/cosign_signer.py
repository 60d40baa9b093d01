#!/usr/bin/env python3
"""Independent cosign signer for the tests: shares no code with opship.

Uses PyPI `cryptography` (ECDSA P-256, PKCS#8, PKIX), `PyNaCl` (secretbox) and the standard
library (hashlib.scrypt, urllib) to write cosign key files and to push cosign signatures to a
registry over the distribution API, following cosign's formats:

  genkey PREFIX --label sigstore|cosign --n N --password PW
      PREFIX.key (encrypted private key) and PREFIX.pub
  pubkey KEY --password PW
      decrypts KEY and prints its public key PEM
  sign REGISTRY REPO DIGEST KEY --password PW [--claim-digest D] [--identity ID]
      pushes a one-layer `sha256-<hex>.sig` manifest signing DIGEST (or claiming D)
  push-sig REGISTRY REPO DIGEST --payload FILE --signature B64
      pushes a `.sig` manifest with that payload and signature as they are
  fetch-sig REGISTRY REPO DIGEST OUTDIR
      writes OUTDIR/payload and OUTDIR/signature.b64 of the first signature layer
  copy-tag REGISTRY REPO FROM TO
      PUTs the manifest tagged FROM under the tag TO
  verify-bundle REGISTRY REPO DIGEST PUB
      checks the Sigstore bundle referrers listed in the `sha256-<hex>` fallback index
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import urllib.parse
import urllib.request

import nacl.secret
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

LABELS = {
    "sigstore": "ENCRYPTED SIGSTORE PRIVATE KEY",
    "cosign": "ENCRYPTED COSIGN PRIVATE KEY",
}
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIG_ANNOTATION = "dev.cosignproject.cosign/signature"


def b64(b):
    return base64.b64encode(b).decode()


def pem(label, der):
    body = b64(der)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN %s-----\n%s\n-----END %s-----\n" % (label, "\n".join(lines), label)


def unpem(text):
    lines = text.strip().splitlines()
    label = lines[0][len("-----BEGIN ") : -len("-----")]
    return label, base64.b64decode("".join(lines[1:-1]))


def scrypt_key(password, salt, n):
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=8, p=1, dklen=32, maxmem=512 * 1024 * 1024)


def genkey(args):
    priv = ec.generate_private_key(ec.SECP256R1())
    pkcs8 = priv.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    salt, nonce = os.urandom(32), os.urandom(24)
    ct = nacl.secret.SecretBox(scrypt_key(args.password, salt, args.n)).encrypt(pkcs8, nonce).ciphertext
    envelope = json.dumps(
        {
            "kdf": {"name": "scrypt", "params": {"N": args.n, "r": 8, "p": 1}, "salt": b64(salt)},
            "cipher": {"name": "nacl/secretbox", "nonce": b64(nonce)},
            "ciphertext": b64(ct),
        },
        separators=(",", ":"),
    ).encode()
    with open(args.prefix + ".key", "w") as f:
        f.write(pem(LABELS[args.label], envelope))
    pub = priv.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with open(args.prefix + ".pub", "wb") as f:
        f.write(pub)


def load_key(path, password):
    label, body = unpem(open(path).read())
    if label not in LABELS.values():
        sys.exit("%s: unexpected PEM label %s" % (path, label))
    env = json.loads(body)
    assert env["kdf"]["name"] == "scrypt" and env["cipher"]["name"] == "nacl/secretbox"
    p = env["kdf"]["params"]
    assert p["r"] == 8 and p["p"] == 1
    key = scrypt_key(password, base64.b64decode(env["kdf"]["salt"]), p["N"])
    plain = nacl.secret.SecretBox(key).decrypt(
        base64.b64decode(env["ciphertext"]), base64.b64decode(env["cipher"]["nonce"])
    )
    return serialization.load_der_private_key(plain, password=None)


def pubkey(args):
    priv = load_key(args.key, args.password)
    sys.stdout.write(
        priv.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


class Registry:
    def __init__(self, host, repo):
        self.base = "http://%s/v2/%s" % (host, repo)

    def request(self, method, url, data=None, headers=None):
        req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        with urllib.request.urlopen(req) as res:
            return res.status, dict(res.headers), res.read()

    def put_blob(self, data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        _, headers, _ = self.request("POST", self.base + "/blobs/uploads/", b"")
        loc = urllib.parse.urljoin(self.base, headers["Location"])
        sep = "&" if "?" in loc else "?"
        self.request(
            "PUT",
            loc + sep + "digest=" + urllib.parse.quote(digest),
            data,
            {"Content-Type": "application/octet-stream"},
        )
        return digest

    def get_manifest(self, ref, accept=OCI_MANIFEST):
        _, headers, body = self.request("GET", self.base + "/manifests/" + ref, None, {"Accept": accept})
        return headers.get("Content-Type", accept), body

    def put_manifest(self, ref, body, media_type=OCI_MANIFEST):
        self.request("PUT", self.base + "/manifests/" + ref, body, {"Content-Type": media_type})

    def get_blob(self, digest):
        return self.request("GET", self.base + "/blobs/" + digest)[2]


def push_signature(reg, digest, payload, signature_b64):
    payload_digest = reg.put_blob(payload)
    config = json.dumps(
        {
            "architecture": "",
            "os": "",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": [payload_digest]},
        },
        separators=(",", ":"),
    ).encode()
    config_digest = reg.put_blob(config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": SIMPLESIGNING,
                    "digest": payload_digest,
                    "size": len(payload),
                    "annotations": {SIG_ANNOTATION: signature_b64},
                }
            ],
        },
        separators=(",", ":"),
    ).encode()
    reg.put_manifest(digest.replace(":", "-") + ".sig", manifest)


def sign(args):
    priv = load_key(args.key, args.password)
    identity = args.identity or "%s/%s" % (args.registry, args.repo)
    payload = json.dumps(
        {
            "critical": {
                "identity": {"docker-reference": identity},
                "image": {"docker-manifest-digest": args.claim_digest or args.digest},
                "type": "cosign container image signature",
            },
            "optional": None,
        },
        separators=(",", ":"),
    ).encode()
    sig = priv.sign(payload, ec.ECDSA(hashes.SHA256()))
    push_signature(Registry(args.registry, args.repo), args.digest, payload, b64(sig))
    print(b64(sig))


def push_sig(args):
    payload = open(args.payload, "rb").read()
    push_signature(Registry(args.registry, args.repo), args.digest, payload, args.signature)


def fetch_sig(args):
    reg = Registry(args.registry, args.repo)
    _, body = reg.get_manifest(args.digest.replace(":", "-") + ".sig")
    layer = json.loads(body)["layers"][0]
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "payload"), "wb") as f:
        f.write(reg.get_blob(layer["digest"]))
    with open(os.path.join(args.outdir, "signature.b64"), "w") as f:
        f.write(layer["annotations"][SIG_ANNOTATION])


def copy_tag(args):
    reg = Registry(args.registry, args.repo)
    media_type, body = reg.get_manifest(args.source)
    reg.put_manifest(args.dest, body, media_type)


def verify_bundle(args):
    reg = Registry(args.registry, args.repo)
    pub = serialization.load_pem_public_key(open(args.pub, "rb").read())
    _, body = reg.get_manifest(args.digest.replace(":", "-"), OCI_INDEX)
    index = json.loads(body)
    ok = 0
    for entry in index["manifests"]:
        if entry.get("artifactType") != "application/vnd.dev.sigstore.bundle.v0.3+json":
            continue
        _, man = reg.get_manifest(entry["digest"])
        man = json.loads(man)
        assert man["subject"]["digest"] == args.digest, "referrer subject is not the image"
        bundle = json.loads(reg.get_blob(man["layers"][0]["digest"]))
        env = bundle["dsseEnvelope"]
        body = base64.b64decode(env["payload"])
        ptype = env["payloadType"].encode()
        pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(body), body)
        try:
            pub.verify(base64.b64decode(env["signatures"][0]["sig"]), pae, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            print("bundle %s: signature does not verify" % entry["digest"])
            continue
        statement = json.loads(body)
        subjects = [s["digest"]["sha256"] for s in statement["subject"]]
        if statement["predicateType"] != "https://sigstore.dev/cosign/sign/v1" or args.digest[7:] not in subjects:
            print("bundle %s: statement does not name the image" % entry["digest"])
            continue
        hint = base64.b64encode(
            hashlib.sha256(
                pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            ).digest()
        ).decode()
        assert bundle["verificationMaterial"]["publicKey"]["hint"] == hint, "key hint mismatch"
        print("bundle %s: verified" % entry["digest"])
        ok += 1
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("genkey")
    p.add_argument("prefix")
    p.add_argument("--label", choices=sorted(LABELS), default="sigstore")
    p.add_argument("--n", type=int, default=32768)
    p.add_argument("--password", default="")
    p.set_defaults(func=genkey)
    p = sub.add_parser("pubkey")
    p.add_argument("key")
    p.add_argument("--password", default="")
    p.set_defaults(func=pubkey)
    p = sub.add_parser("sign")
    for a in ("registry", "repo", "digest", "key"):
        p.add_argument(a)
    p.add_argument("--password", default="")
    p.add_argument("--claim-digest")
    p.add_argument("--identity")
    p.set_defaults(func=sign)
    p = sub.add_parser("push-sig")
    for a in ("registry", "repo", "digest"):
        p.add_argument(a)
    p.add_argument("--payload", required=True)
    p.add_argument("--signature", required=True)
    p.set_defaults(func=push_sig)
    p = sub.add_parser("fetch-sig")
    for a in ("registry", "repo", "digest", "outdir"):
        p.add_argument(a)
    p.set_defaults(func=fetch_sig)
    p = sub.add_parser("copy-tag")
    for a in ("registry", "repo", "source", "dest"):
        p.add_argument(a)
    p.set_defaults(func=copy_tag)
    p = sub.add_parser("verify-bundle")
    for a in ("registry", "repo", "digest", "pub"):
        p.add_argument(a)
    p.set_defaults(func=verify_bundle)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
