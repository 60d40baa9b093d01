//! Paths given by the user, kept byte for byte: shown in messages losslessly (a name that is
//! not UTF-8 quoted with Rust's escapes, `"bundle/\xFF"`, each invalid byte as `\xNN`, never
//! with `U+FFFD` replacement characters that could stand for any byte and make two files look
//! alike; every other path as it is), and split (`oci:`, `LAYOUT:TAG`) without turning the
//! path into a lossy string that then names another, missing file.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;

/// `path` for a message; [`Shown`] displays it.
pub fn show(path: &Path) -> Shown<'_> {
    Shown(path)
}

/// A path that displays losslessly (see the module).
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(&'a Path);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.to_str() {
            Some(text) => f.write_str(text),
            // The quotes tell the escaped spelling from a name typed with a backslash.
            None => write!(f, "{:?}", self.0),
        }
    }
}

/// `arg` without the ASCII `prefix` (`oci:`), when it starts with it; the rest keeps every byte.
pub fn strip_prefix<'a>(arg: &'a OsStr, prefix: &str) -> Option<&'a OsStr> {
    let bytes = arg.as_encoded_bytes();
    let rest = bytes.strip_prefix(prefix.as_bytes())?;
    from_bytes(rest, arg, bytes.len() - rest.len(), bytes.len())
}

/// `arg` split at its last `:` into what precedes it (every byte kept) and what follows it,
/// when what follows is UTF-8 (a tag always is): `LAYOUT:TAG`.
pub fn rsplit_colon(arg: &OsStr) -> Option<(OsString, String)> {
    let bytes = arg.as_encoded_bytes();
    let at = bytes.iter().rposition(|b| *b == b':')?;
    let tag = std::str::from_utf8(&bytes[at + 1..]).ok()?;
    let head = from_bytes(&bytes[..at], arg, 0, at)?;
    Some((head.to_os_string(), tag.to_owned()))
}

/// The part `start..end` of `arg` (whose encoded bytes `part` are), cut at ASCII boundaries.
#[cfg(unix)]
fn from_bytes<'a>(
    part: &'a [u8],
    _arg: &'a OsStr,
    _start: usize,
    _end: usize,
) -> Option<&'a OsStr> {
    Some(std::os::unix::ffi::OsStrExt::from_bytes(part))
}

/// Elsewhere only UTF-8 arguments are cut (no safe constructor from encoded bytes).
#[cfg(not(unix))]
fn from_bytes<'a>(_part: &'a [u8], arg: &'a OsStr, start: usize, end: usize) -> Option<&'a OsStr> {
    arg.to_str().and_then(|s| s.get(start..end)).map(OsStr::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_as_is_other_bytes_escaped() {
        assert_eq!(
            show(Path::new("bundle/caf\u{e9}")).to_string(),
            "bundle/caf\u{e9}"
        );
        assert_eq!(show(Path::new("a\\xff")).to_string(), "a\\xff");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = |b: &[u8]| Path::new(std::ffi::OsStr::from_bytes(b)).to_path_buf();
            assert_eq!(show(&p(b"b/\xff")).to_string(), "\"b/\\xFF\"");
            assert_eq!(show(&p(b"caf\xe9-1")).to_string(), "\"caf\\xE9-1\"");
            assert_eq!(show(&p(b"\\xff\xff")).to_string(), "\"\\\\xff\\xFF\"");
            assert_ne!(show(&p(b"\xfe")).to_string(), show(&p(b"\xff")).to_string());
            let o = |b: &[u8]| std::ffi::OsStr::from_bytes(b).to_os_string();
            assert_eq!(
                rsplit_colon(&o(b"oci\xe9:x:0.1.0")),
                Some((o(b"oci\xe9:x"), "0.1.0".into()))
            );
            assert_eq!(rsplit_colon(&o(b"a:\xff")), None);
            assert_eq!(rsplit_colon(&o(b"\xff")), None);
            assert_eq!(
                strip_prefix(&o(b"oci:\xffL:t"), "oci:").map(OsStr::to_os_string),
                Some(o(b"\xffL:t"))
            );
            assert_eq!(strip_prefix(&o(b"\xffoci:"), "oci:"), None);
        }
    }
}
