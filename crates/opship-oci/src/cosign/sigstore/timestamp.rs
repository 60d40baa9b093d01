//! RFC 3161 signed timestamps as a Sigstore bundle carries them (a whole `TimeStampResp`, or
//! its bare CMS token): the token's TSTInfo imprints the signature, the signer's signed
//! attributes digest the TSTInfo, and a timestamp authority of the trusted root signed those
//! attributes at a time inside both its trusted window and its certificate's validity.

use chrono::{DateTime, NaiveDateTime, Utc};
use sha2::Digest as _;
use x509_cert::Certificate;
use x509_cert::der::{Decode as _, Encode as _};

use super::asn1::{self, Tlv};
use super::cert::{cert_time, validity};
use super::crypto::{Hash, VerifyKey};
use super::trust::{CertificateAuthority, TrustedRoot};

/// A verified timestamp: when, and which authority said so.
#[derive(Debug, Clone)]
pub struct VerifiedTimestamp<'r> {
    /// The TSTInfo's `genTime`.
    pub time: DateTime<Utc>,
    /// The authority whose certificate verified the token.
    pub authority: &'r CertificateAuthority,
}

/// The digest an AlgorithmIdentifier names, by OID content.
pub fn hash_of(oid: &[u8]) -> Option<Hash> {
    [
        ("2.16.840.1.101.3.4.2.1", Hash::Sha256),
        ("2.16.840.1.101.3.4.2.2", Hash::Sha384),
        ("2.16.840.1.101.3.4.2.3", Hash::Sha512),
    ]
    .into_iter()
    .find(|(o, _)| asn1::oid(o) == oid)
    .map(|(_, h)| h)
}

/// `message` hashed with `hash`.
pub fn digest(hash: Hash, message: &[u8]) -> Vec<u8> {
    match hash {
        Hash::Sha256 => sha2::Sha256::digest(message).to_vec(),
        Hash::Sha384 => sha2::Sha384::digest(message).to_vec(),
        Hash::Sha512 => sha2::Sha512::digest(message).to_vec(),
    }
}

fn bad(why: &str) -> String {
    format!("signed timestamp: {why}")
}

fn kids<'a>(t: &Tlv<'a>, what: &str) -> Result<Vec<Tlv<'a>>, String> {
    asn1::children(t.content).ok_or_else(|| bad(&format!("{what} is not DER")))
}

fn alg_hash(alg: &Tlv<'_>, what: &str) -> Result<Hash, String> {
    let oid = asn1::children(alg.content)
        .and_then(|k| k.first().copied())
        .filter(|o| o.tag == 0x06)
        .ok_or_else(|| bad(&format!("{what}: no algorithm OID")))?;
    hash_of(oid.content).ok_or_else(|| bad(&format!("{what}: unsupported digest algorithm")))
}

/// Parses an ASN.1 GeneralizedTime (`YYYYMMDDHHMMSS[.f]Z`).
fn generalized_time(content: &[u8]) -> Option<DateTime<Utc>> {
    let s = std::str::from_utf8(content).ok()?.strip_suffix('Z')?;
    let whole = s.split_once('.').map_or(s, |(w, _)| w);
    NaiveDateTime::parse_from_str(whole, "%Y%m%d%H%M%S")
        .ok()
        .map(|t| t.and_utc())
}

/// The parts of a token that are checked.
struct Token<'a> {
    tst_info: &'a [u8],
    imprint_hash: Hash,
    imprint: &'a [u8],
    time: DateTime<Utc>,
    signer_hash: Hash,
    message_digest: &'a [u8],
    signed_attrs: Vec<u8>,
    signature: &'a [u8],
}

fn parse(resp: &[u8]) -> Result<Token<'_>, String> {
    let (top, _) = asn1::read(resp).ok_or_else(|| bad("not DER"))?;
    let top_kids = kids(&top, "the response")?;
    // A TimeStampResp starts with PKIStatusInfo (a SEQUENCE); a ContentInfo with its OID.
    let token = match top_kids.as_slice() {
        [first, ..] if first.tag == 0x06 => top,
        [status, token, ..] if status.tag == 0x30 => {
            let code = asn1::children(status.content)
                .and_then(|k| k.first().copied())
                .filter(|c| c.tag == 0x02)
                .map(|c| c.content.to_vec());
            if !matches!(code.as_deref(), Some([0]) | Some([1])) {
                return Err(bad("the response's status is not `granted`"));
            }
            *token
        }
        _ => return Err(bad("neither a TimeStampResp nor a CMS ContentInfo")),
    };
    let ci = kids(&token, "the token")?;
    let signed_data_oid = asn1::oid("1.2.840.113549.1.7.2");
    let sd = match ci.as_slice() {
        [oid, wrapped] if oid.content == signed_data_oid && wrapped.tag == 0xa0 => {
            asn1::read(wrapped.content)
                .ok_or_else(|| bad("SignedData is not DER"))?
                .0
        }
        _ => return Err(bad("the token is not CMS SignedData")),
    };
    let sd = kids(&sd, "SignedData")?;
    let encap = sd
        .get(2)
        .filter(|e| e.tag == 0x30)
        .ok_or_else(|| bad("SignedData has no encapsulated content"))?;
    let encap = kids(encap, "the encapsulated content")?;
    let tst_info = encap
        .get(1)
        .filter(|e| e.tag == 0xa0)
        .and_then(|e| asn1::read(e.content))
        .map(|(o, _)| o)
        .filter(|o| o.tag == 0x04)
        .ok_or_else(|| bad("no TSTInfo inside the token"))?
        .content;
    let (tst, _) = asn1::read(tst_info).ok_or_else(|| bad("TSTInfo is not DER"))?;
    let tst = kids(&tst, "TSTInfo")?;
    let (imprint, time) = match tst.as_slice() {
        [_version, _policy, imprint, _serial, time, ..] if time.tag == 0x18 => (imprint, time),
        _ => return Err(bad("TSTInfo lacks messageImprint or genTime")),
    };
    let imprint = kids(imprint, "messageImprint")?;
    let [imprint_alg, imprint_value] = imprint.as_slice() else {
        return Err(bad("messageImprint is not (algorithm, digest)"));
    };
    let time = generalized_time(time.content).ok_or_else(|| bad("genTime is not a time"))?;
    let signer_infos = sd
        .last()
        .filter(|s| s.tag == 0x31)
        .ok_or_else(|| bad("SignedData has no signerInfos"))?;
    let signer = asn1::children(signer_infos.content)
        .and_then(|s| s.first().copied())
        .ok_or_else(|| bad("SignedData has no signer"))?;
    let signer = kids(&signer, "SignerInfo")?;
    let (digest_alg, attrs, signature) = match signer.as_slice() {
        [_v, _sid, alg, attrs, _sig_alg, sig, ..] if attrs.tag == 0xa0 && sig.tag == 0x04 => {
            (alg, attrs, sig)
        }
        _ => return Err(bad("the signer has no signed attributes")),
    };
    let md_oid = asn1::oid("1.2.840.113549.1.9.4");
    let message_digest = kids(attrs, "the signed attributes")?
        .into_iter()
        .filter_map(|a| asn1::children(a.content))
        .find(|a| a.first().is_some_and(|o| o.content == md_oid))
        .and_then(|a| a.get(1).and_then(|set| asn1::read(set.content)))
        .map(|(v, _)| v.content)
        .ok_or_else(|| bad("the signed attributes have no messageDigest"))?;
    Ok(Token {
        tst_info,
        imprint_hash: alg_hash(imprint_alg, "messageImprint")?,
        imprint: imprint_value.content,
        time,
        signer_hash: alg_hash(digest_alg, "the signer's digest algorithm")?,
        message_digest,
        signed_attrs: asn1::encode(0x31, attrs.content),
        signature: signature.content,
    })
}

/// Verifies `resp` as a timestamp over `signature` (the bundle's signature bytes) by one of
/// `root`'s timestamp authorities; the reason when it is not.
pub fn verify<'r>(
    resp: &[u8],
    signature: &[u8],
    root: &'r TrustedRoot,
) -> Result<VerifiedTimestamp<'r>, String> {
    let t = parse(resp)?;
    if digest(t.imprint_hash, signature) != t.imprint {
        return Err(bad(
            "its message imprint is not the digest of the signature",
        ));
    }
    if digest(t.signer_hash, t.tst_info) != t.message_digest {
        return Err(bad(
            "the signed messageDigest is not the digest of the TSTInfo",
        ));
    }
    let mut signed_by = Vec::new();
    for tsa in &root.timestamp_authorities {
        let Some(leaf) = tsa.chain.first() else {
            continue;
        };
        let Ok(cert) = Certificate::from_der(leaf) else {
            continue;
        };
        let Some(key) = cert
            .tbs_certificate()
            .subject_public_key_info()
            .to_der()
            .ok()
            .and_then(|d| VerifyKey::from_spki_der(&d).ok())
        else {
            continue;
        };
        if key.verifies_with(t.signer_hash, &t.signed_attrs, t.signature) {
            signed_by.push((tsa, cert));
        }
    }
    let Some((tsa, cert)) = signed_by.into_iter().next() else {
        return Err(bad(
            "not signed by any timestamp authority of the trusted root",
        ));
    };
    if !tsa
        .chain
        .windows(2)
        .all(|w| super::cert::signed_by(&w[0], &w[1]))
    {
        return Err(bad(&format!(
            "the chain of {} in the trusted root does not link up",
            tsa.uri
        )));
    }
    if !tsa.valid_for.contains(t.time) {
        return Err(bad(&format!(
            "its time {} is outside the window the trusted root gives {} ({})",
            t.time.to_rfc3339(),
            tsa.uri,
            tsa.valid_for
        )));
    }
    let (nb, na) = validity(&cert);
    if t.time < nb || t.time > na {
        return Err(bad(&format!(
            "its time {} is outside the validity of the authority's certificate ({} to {})",
            t.time.to_rfc3339(),
            cert_time(nb),
            cert_time(na)
        )));
    }
    Ok(VerifiedTimestamp {
        time: t.time,
        authority: tsa,
    })
}
