//! Transparency-log proofs: the Merkle audit path of an entry (RFC 6962 hashing, RFC 9162
//! §2.1.3.2 verification) and the checkpoint that signs the tree head, in the C2SP signed-note
//! format Rekor v1 and v2 (rekor-tiles) write: a body of origin, tree size, base64 root hash
//! (and optional extension lines), a blank line, then `— <name> <base64(key hint ‖ sig)>` lines.
//! The log's signature is the line whose name is the log's host and whose 4-byte key hint is
//! the start of its log ID; witness cosignatures beside it are ignored.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use super::trust::{TransparencyLog, TrustedRoot};

/// RFC 6962 leaf hash of an entry body.
pub fn leaf_hash(body: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(body);
    h.finalize().into()
}

fn node_hash(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// An inclusion proof as a bundle carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// Index of the entry in the tree.
    pub log_index: u64,
    /// Size of the tree the proof is for.
    pub tree_size: u64,
    /// The tree's root hash.
    pub root_hash: Vec<u8>,
    /// The audit path, leaf side first.
    pub hashes: Vec<Vec<u8>>,
}

impl InclusionProof {
    /// Checks that the entry with leaf hash `leaf` is at `log_index` in the tree of `tree_size`
    /// with `root_hash`; the reason when it is not.
    pub fn verify(&self, leaf: &[u8; 32]) -> Result<(), String> {
        if self.log_index >= self.tree_size {
            return Err(format!(
                "inclusion proof: log index {} is not inside the tree of size {}",
                self.log_index, self.tree_size
            ));
        }
        let (mut fn_, mut sn) = (self.log_index, self.tree_size - 1);
        let mut r = *leaf;
        for p in &self.hashes {
            if p.len() != 32 {
                return Err(format!(
                    "inclusion proof: a path hash has {} bytes, not 32",
                    p.len()
                ));
            }
            if sn == 0 {
                return Err("inclusion proof: the audit path is longer than the tree".into());
            }
            if fn_ & 1 == 1 || fn_ == sn {
                r = node_hash(p, &r);
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            } else {
                r = node_hash(&r, p);
            }
            fn_ >>= 1;
            sn >>= 1;
        }
        if sn != 0 {
            return Err("inclusion proof: the audit path is shorter than the tree".into());
        }
        if r[..] != self.root_hash[..] {
            return Err(format!(
                "inclusion proof: the audit path leads to root hash {}, not the proof's {}",
                STANDARD.encode(r),
                STANDARD.encode(&self.root_hash)
            ));
        }
        Ok(())
    }
}

/// A parsed signed note checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The note body the signatures cover (up to and including the newline before the blank
    /// line).
    pub body: String,
    /// First line: the log's origin.
    pub origin: String,
    /// Second line: the tree size.
    pub tree_size: u64,
    /// Third line: the root hash.
    pub root_hash: Vec<u8>,
    /// Signature lines: name and base64-decoded `hint ‖ signature`.
    pub signatures: Vec<(String, Vec<u8>)>,
}

impl Checkpoint {
    /// Parses a checkpoint note; the reason (which line) when it is malformed.
    pub fn parse(note: &str) -> Result<Self, String> {
        let (body, sigs) = note
            .split_once("\n\n")
            .ok_or("checkpoint: no blank line between the note body and its signatures")?;
        let body = format!("{body}\n");
        let mut lines = body.lines();
        let origin = lines.next().unwrap_or_default().to_owned();
        if origin.is_empty() {
            return Err("checkpoint: the first line (origin) is empty".into());
        }
        let size = lines.next().unwrap_or_default();
        let tree_size = size
            .parse::<u64>()
            .map_err(|_| format!("checkpoint: line 2 should be the tree size, found `{size}`"))?;
        let root = lines.next().unwrap_or_default();
        let root_hash = STANDARD
            .decode(root)
            .ok()
            .filter(|r| r.len() == 32)
            .ok_or_else(|| {
                format!("checkpoint: line 3 should be a base64 SHA-256 root hash, found `{root}`")
            })?;
        let mut signatures = Vec::new();
        for line in sigs.lines().filter(|l| !l.is_empty()) {
            let rest = line.strip_prefix("\u{2014} ").ok_or_else(|| {
                format!("checkpoint: `{line}` is not a signature line (`— name sig`)")
            })?;
            let (name, sig) = rest
                .rsplit_once(' ')
                .ok_or_else(|| format!("checkpoint: signature line `{line}` has no signature"))?;
            let sig = STANDARD
                .decode(sig)
                .ok()
                .filter(|s| s.len() > 4)
                .ok_or_else(|| format!("checkpoint: the signature of `{name}` is not base64"))?;
            signatures.push((name.to_owned(), sig));
        }
        if signatures.is_empty() {
            return Err("checkpoint: no signature lines".into());
        }
        Ok(Checkpoint {
            body,
            origin,
            tree_size,
            root_hash,
            signatures,
        })
    }

    /// Checks that `log` signed this checkpoint: a signature line named after the log's host
    /// with the log ID's key hint verifies over the body with the log's key.
    pub fn verify(&self, log: &TransparencyLog) -> Result<(), String> {
        let host = log.host();
        // rekor-tiles names its key after the host without the port (`127.0.0.1` for a log
        // at `http://127.0.0.1:3003`).
        let bare = host
            .rsplit_once(':')
            .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
            .map_or(host, |(h, _)| h);
        let hint = log.log_id.get(..4).unwrap_or_default();
        let mut seen = false;
        for (name, sig) in &self.signatures {
            if (name != host && name != bare) || &sig[..4] != hint {
                continue;
            }
            seen = true;
            if log.key.verifies(self.body.as_bytes(), &sig[4..]) {
                return Ok(());
            }
        }
        Err(if seen {
            format!("checkpoint: the signature of `{host}` does not verify with the log's key")
        } else {
            format!(
                "checkpoint: no signature by the log (name `{host}`, key hint {}); found {}",
                STANDARD.encode(hint),
                self.signatures
                    .iter()
                    .map(|(n, s)| format!("`{n}` hint {}", STANDARD.encode(&s[..4])))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// Checks that the checkpoint is signed by `log` and names the proof's tree.
    pub fn verify_for(&self, log: &TransparencyLog, proof: &InclusionProof) -> Result<(), String> {
        self.verify(log)?;
        if self.tree_size != proof.tree_size {
            return Err(format!(
                "checkpoint: tree size {} differs from the inclusion proof's {}",
                self.tree_size, proof.tree_size
            ));
        }
        if self.root_hash != proof.root_hash {
            return Err(format!(
                "checkpoint: root hash {} differs from the inclusion proof's {}",
                STANDARD.encode(&self.root_hash),
                STANDARD.encode(&proof.root_hash)
            ));
        }
        Ok(())
    }
}

fn u64_field(v: &serde_json::Value, field: &str) -> Result<u64, String> {
    let x = v
        .get(field)
        .ok_or_else(|| format!("tlog entry: `{field}` is missing"))?;
    // The protobuf JSON mapping writes int64 as strings; accept numbers too.
    let parsed = match x {
        serde_json::Value::String(s) => s.parse::<u64>().ok(),
        serde_json::Value::Number(n) => n.as_u64(),
        _ => None,
    };
    parsed.ok_or_else(|| format!("tlog entry: `{field}` is {x}, not a non-negative integer"))
}

fn b64_field(v: &serde_json::Value, pointer: &str) -> Result<Vec<u8>, String> {
    let s = v
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("tlog entry: `{}` is missing", &pointer[1..]))?;
    STANDARD
        .decode(s)
        .map_err(|e| format!("tlog entry: `{}` is not base64 ({e})", &pointer[1..]))
}

/// What [`verify_entry`] established about a log entry.
#[derive(Debug, Clone)]
pub struct VerifiedEntry<'r> {
    /// The log that holds it.
    pub log: &'r TransparencyLog,
    /// The entry body (`canonicalizedBody`, decoded): for the caller to match with the
    /// signature, certificate and artifact.
    pub body: Vec<u8>,
    /// Rekor v1's integrated time (Unix seconds), when a verified inclusion promise signs it.
    pub integrated_time: Option<i64>,
}

/// Checks Rekor v1's inclusion promise (signed entry timestamp): the log's signature over the
/// canonical JSON of body, integrated time, log ID (hex) and log index.
pub fn verify_promise(
    log: &TransparencyLog,
    body_b64: &str,
    integrated_time: i64,
    log_index: u64,
    set: &[u8],
) -> Result<(), String> {
    let log_id: String = log.log_id.iter().map(|b| format!("{b:02x}")).collect();
    let canonical = format!(
        r#"{{"body":"{body_b64}","integratedTime":{integrated_time},"logID":"{log_id}","logIndex":{log_index}}}"#
    );
    if log.key.verifies(canonical.as_bytes(), set) {
        Ok(())
    } else {
        Err(format!(
            "tlog entry: the inclusion promise (signed entry timestamp) does not verify with the \
             key of {}",
            log.base_url
        ))
    }
}

fn known_log<'r>(
    entry: &serde_json::Value,
    root: &'r TrustedRoot,
) -> Result<&'r TransparencyLog, String> {
    let log_id = b64_field(entry, "/logId/keyId")?;
    root.tlog(&log_id).ok_or_else(|| {
        format!(
            "tlog entry: log ID {} is not a transparency log of the trusted root (known: {})",
            STANDARD.encode(&log_id),
            root.tlogs
                .iter()
                .map(|l| format!("{} {}", l.base_url, STANDARD.encode(&l.log_id)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// Checks an entry that carries only Rekor v1's inclusion promise (cosign 2's
/// `dev.sigstore.cosign/bundle` annotation): a known log signed body, time and index.
pub fn verify_promised<'r>(
    entry: &serde_json::Value,
    root: &'r TrustedRoot,
) -> Result<VerifiedEntry<'r>, String> {
    let log_index = u64_field(entry, "logIndex")?;
    let log = known_log(entry, root)?;
    let body = b64_field(entry, "/canonicalizedBody")?;
    let set = b64_field(entry, "/inclusionPromise/signedEntryTimestamp")?;
    let time = i64::try_from(u64_field(entry, "integratedTime")?)
        .map_err(|_| "tlog entry: `integratedTime` is out of range".to_owned())?;
    let body_b64 = entry
        .get("canonicalizedBody")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    verify_promise(log, body_b64, time, log_index, &set)?;
    Ok(VerifiedEntry {
        log,
        body,
        integrated_time: Some(time),
    })
}

/// Checks a Sigstore bundle's `tlogEntries[]` item against the logs of `root`: the log is
/// known by its log ID, the inclusion proof leads from the entry's canonicalized body to the
/// proof's root, the checkpoint is signed by that log and names the same tree, and an
/// inclusion promise, when there is one, is the log's signature. (The body's match with the
/// artifact, and the time checks, are the caller's.)
pub fn verify_entry<'r>(
    entry: &serde_json::Value,
    root: &'r TrustedRoot,
) -> Result<VerifiedEntry<'r>, String> {
    let log_index = u64_field(entry, "logIndex")?;
    let log = known_log(entry, root)?;
    let body = b64_field(entry, "/canonicalizedBody")?;
    let p = entry
        .get("inclusionProof")
        .ok_or("tlog entry: no inclusion proof (`inclusionProof` is missing)")?;
    let hashes = p
        .get("hashes")
        .and_then(serde_json::Value::as_array)
        .ok_or("tlog entry: `inclusionProof.hashes` is missing")?
        .iter()
        .map(|h| {
            h.as_str()
                .and_then(|h| STANDARD.decode(h).ok())
                .ok_or_else(|| "tlog entry: an inclusion proof hash is not base64".to_owned())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let proof = InclusionProof {
        log_index: u64_field(p, "logIndex")?,
        tree_size: u64_field(p, "treeSize")?,
        root_hash: b64_field(p, "/rootHash")?,
        hashes,
    };
    // Rekor v1 numbers entries across shards (logIndex, which the promise signs) but proves
    // them within the shard (inclusionProof.logIndex); Rekor v2 uses one number.
    proof.verify(&leaf_hash(&body))?;
    let note = p
        .pointer("/checkpoint/envelope")
        .and_then(serde_json::Value::as_str)
        .ok_or("tlog entry: the inclusion proof has no checkpoint")?;
    Checkpoint::parse(note)?.verify_for(log, &proof)?;
    let integrated_time = match entry.pointer("/inclusionPromise/signedEntryTimestamp") {
        Some(_) => {
            let set = b64_field(entry, "/inclusionPromise/signedEntryTimestamp")?;
            let time = u64_field(entry, "integratedTime")?;
            let time = i64::try_from(time)
                .map_err(|_| "tlog entry: `integratedTime` is out of range".to_owned())?;
            let body_b64 = entry
                .get("canonicalizedBody")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            verify_promise(log, body_b64, time, log_index, &set)?;
            Some(time)
        }
        None => None,
    };
    Ok(VerifiedEntry {
        log,
        body,
        integrated_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 6962 test vectors (certificate-transparency-go's merkle tests): leaves 0..7 and the
    // root of the 7-leaf tree are rebuilt here to check index/size corner cases.
    fn tree_root(leaves: &[[u8; 32]]) -> [u8; 32] {
        if leaves.len() == 1 {
            return leaves[0];
        }
        let k = leaves.len().next_power_of_two() / 2;
        node_hash(&tree_root(&leaves[..k]), &tree_root(&leaves[k..]))
    }

    fn path(leaves: &[[u8; 32]], m: usize) -> Vec<Vec<u8>> {
        if leaves.len() == 1 {
            return Vec::new();
        }
        let k = leaves.len().next_power_of_two() / 2;
        if m < k {
            let mut p = path(&leaves[..k], m);
            p.push(tree_root(&leaves[k..]).to_vec());
            p
        } else {
            let mut p = path(&leaves[k..], m - k);
            p.push(tree_root(&leaves[..k]).to_vec());
            p
        }
    }

    #[test]
    fn every_leaf_of_every_small_tree() {
        for n in 1..=17usize {
            let leaves: Vec<[u8; 32]> = (0..n).map(|i| leaf_hash(&[i as u8])).collect();
            let root = tree_root(&leaves).to_vec();
            for m in 0..n {
                let proof = InclusionProof {
                    log_index: m as u64,
                    tree_size: n as u64,
                    root_hash: root.clone(),
                    hashes: path(&leaves, m),
                };
                proof.verify(&leaves[m]).unwrap();
                assert!(proof.verify(&leaf_hash(b"other")).is_err());
                if let Some(first) = proof.hashes.first() {
                    let mut bad = proof.clone();
                    bad.hashes[0] = leaf_hash(first).to_vec();
                    assert!(bad.verify(&leaves[m]).is_err());
                }
            }
        }
    }

    #[test]
    fn malformed_checkpoints() {
        assert!(
            Checkpoint::parse("o\n1\n")
                .unwrap_err()
                .contains("blank line")
        );
        assert!(
            Checkpoint::parse("o\nx\nAAAA\n\n— o AAAAAAAA\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(
            Checkpoint::parse("o\n1\n\n— o AAAAAAAA\n")
                .unwrap_err()
                .contains("line 3")
        );
    }
}
