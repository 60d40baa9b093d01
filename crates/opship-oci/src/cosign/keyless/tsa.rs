//! RFC 3161 timestamps of signatures (what sigstore-go and cosign 3 put in
//! `timestampVerificationData.rfc3161Timestamps`): a `TimeStampReq` over SHA-256 of the
//! signature bytes with a nonce and `certReq`, POSTed as `application/timestamp-query`; the
//! answer (`TimeStampResp`: status and CMS token) is kept as it came. Checked here: the
//! status is granted and the token carries our message imprint and nonce; its signature and
//! chain are the verification core's.

use sha2::{Digest as _, Sha256};

use super::http::{Body, Service, post_or_get};
use crate::cosign::sigstore::asn1;
use crate::error::{Error, Result};

/// The DER `TimeStampReq` for `imprint` (SHA-256) with `nonce` (8 bytes, positive).
pub fn request(imprint: &[u8; 32], nonce: &[u8; 8]) -> Vec<u8> {
    let mut body = vec![0x02, 0x01, 0x01]; // version 1
    body.extend_from_slice(&[0x30, 0x31, 0x30, 0x0d, 0x06, 0x09]);
    body.extend_from_slice(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]); // sha256
    body.extend_from_slice(&[0x05, 0x00, 0x04, 0x20]);
    body.extend_from_slice(imprint);
    body.extend_from_slice(&[0x02, 0x08]);
    body.extend_from_slice(nonce);
    body.extend_from_slice(&[0x01, 0x01, 0xff]); // certReq
    let mut out = vec![0x30, body.len() as u8];
    out.extend_from_slice(&body);
    out
}

fn nonce() -> [u8; 8] {
    let mut n = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut n));
    if read.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        n = (t as u64 ^ u64::from(std::process::id())).to_be_bytes();
    }
    // Positive and minimal as a DER INTEGER: top bit clear, first byte not zero.
    n[0] = (n[0] & 0x7f) | 0x01;
    n
}

/// The timestamp token out of a `TimeStampResp`, after checking its status and that it
/// stamps `imprint` with `nonce`.
pub fn token_of(
    answer: &[u8],
    imprint: &[u8],
    nonce: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let (resp, _) = asn1::read(answer).ok_or("the answer is not DER")?;
    if resp.tag != 0x30 {
        return Err("the answer is not a TimeStampResp".into());
    }
    let (status, rest) = asn1::read(resp.content).ok_or("the answer has no status")?;
    let (int, more) = asn1::read(status.content).ok_or("the status has no value")?;
    if int.tag != 0x02 || int.content.len() != 1 {
        return Err("the status is not a small INTEGER".into());
    }
    let value = int.content;
    if value[0] > 1 {
        let text = asn1::read(more)
            .and_then(|(texts, _)| asn1::read(texts.content))
            .map(|(t, _)| String::from_utf8_lossy(t.content).into_owned())
            .unwrap_or_default();
        return Err(format!(
            "the timestamp was refused (PKIStatus {}{})",
            value[0],
            if text.is_empty() {
                String::new()
            } else {
                format!(": {text}")
            }
        ));
    }
    if rest.is_empty() {
        return Err("the answer holds no timeStampToken".into());
    }
    let (token, _) = asn1::read(rest).ok_or("the timeStampToken is not DER")?;
    let token = token.raw;
    let contains = |needle: &[u8]| token.windows(needle.len()).any(|w| w == needle);
    if !contains(imprint) {
        return Err("the token does not stamp this signature (another message imprint)".into());
    }
    if !contains(nonce) {
        return Err("the token does not carry the request's nonce".into());
    }
    Ok(token.to_vec())
}

/// Timestamps `signature` at the TSA endpoint `url`; the DER `TimeStampResp`, checked.
pub async fn timestamp(service: &Service, url: &str, signature: &[u8]) -> Result<Vec<u8>> {
    let mut imprint = [0u8; 32];
    imprint.copy_from_slice(&Sha256::digest(signature));
    let nonce = nonce();
    let answer = post_or_get(
        service,
        url,
        Some(Body {
            content_type: "application/timestamp-query",
            bytes: request(&imprint, &nonce),
            accept: "application/timestamp-reply",
        }),
        None,
        1 << 20,
    )
    .await?;
    token_of(&answer, &imprint, &nonce)
        .map_err(|why| Error::Keyless(format!("timestamp authority at {url}: {why}")))?;
    // Bundles and cosign 2's annotation carry the whole TimeStampResp (status and token).
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_shape_and_answers() {
        let r = request(&[7; 32], &[1; 8]);
        assert_eq!(r.len(), 2 + 67);
        assert_eq!(asn1::read(&r).unwrap().0.content.len(), 67);
        // status granted + a token holding the imprint and nonce
        let mut token = vec![0x30, 40];
        token.extend_from_slice(&[7; 32]);
        token.extend_from_slice(&[1; 8]);
        let mut resp = vec![0x30, (5 + token.len()) as u8, 0x30, 0x03, 0x02, 0x01, 0x00];
        resp.extend_from_slice(&token);
        assert_eq!(token_of(&resp, &[7; 32], &[1; 8]).unwrap(), token);
        assert!(
            token_of(&resp, &[8; 32], &[1; 8])
                .unwrap_err()
                .contains("message imprint")
        );
        let refused = [
            0x30, 0x0b, 0x30, 0x09, 0x02, 0x01, 0x02, 0x30, 0x04, 0x0c, 0x02, b'n', b'o',
        ];
        assert!(
            token_of(&refused, &[7; 32], &[1; 8])
                .unwrap_err()
                .contains("PKIStatus 2: no")
        );
        assert!(token_of(b"x", &[7; 32], &[1; 8]).is_err());
    }
}
