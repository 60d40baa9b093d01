//! A minimal DER walker for the parts of X.509 and CMS that must be read byte-exact: the
//! signed bytes of a certificate's TBS, a CMS signer's signed attributes (re-tagged as a SET)
//! and the precertificate TBS an SCT signs (the TBS without its SCT extension). Typed
//! parsing goes through `x509-cert`; re-encoding a typed value would not reproduce what was
//! signed.

/// One DER element.
#[derive(Debug, Clone, Copy)]
pub struct Tlv<'a> {
    /// The (single-byte) tag.
    pub tag: u8,
    /// The content octets.
    pub content: &'a [u8],
    /// The whole element, header included.
    pub raw: &'a [u8],
}

/// Reads one element from the start of `b`; the element and what follows.
pub fn read(b: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let (&tag, rest) = b.split_first()?;
    // Multi-byte tags do not occur in the structures read here.
    if tag & 0x1f == 0x1f {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &x in &rest[..n] {
            len = (len << 8) | usize::from(x);
        }
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    let header = b.len() - rest.len();
    Some((
        Tlv {
            tag,
            content: &rest[..len],
            raw: &b[..header + len],
        },
        &rest[len..],
    ))
}

/// The elements inside a constructed element's content.
pub fn children(mut content: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (t, rest) = read(content)?;
        out.push(t);
        content = rest;
    }
    Some(out)
}

/// The DER encoding of an element with `tag` and `content`.
pub fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// The DER content of an OBJECT IDENTIFIER given in dotted form (for matching).
pub fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted.split('.').filter_map(|a| a.parse().ok()).collect();
    let mut out = Vec::new();
    if arcs.len() < 2 {
        return out;
    }
    let mut push = |mut v: u64| {
        let mut tmp = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            tmp.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        tmp.reverse();
        out.extend_from_slice(&tmp);
    };
    push(arcs[0] * 40 + arcs[1]);
    for &a in &arcs[2..] {
        push(a);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_oids() {
        let long = vec![7u8; 300];
        let e = encode(0x04, &long);
        let (t, rest) = read(&e).unwrap();
        assert_eq!((t.tag, t.content.len(), t.raw.len()), (4, 300, e.len()));
        assert!(rest.is_empty());
        assert_eq!(
            oid("1.2.840.113549.1.9.4"),
            [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04]
        );
        assert!(read(&[0x30, 0x05, 0x01]).is_none());
    }
}
