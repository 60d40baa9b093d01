//! Version ranges in the syntax OLM reads with blang/semver's `ParseRange` (`olm.skipRange`,
//! `olm.package` dependencies): `>=1.0.0 <2.0.0`, `1.2.x`, `<1.0.0 || >=2.0.0`.

use semver::Version;

/// One comparison of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparator {
    /// `>=`, `>`, `<=`, `<`, `=` or `!=`.
    pub op: &'static str,
    /// The version compared with.
    pub version: Version,
}

/// A parsed range: any of the alternatives (`||`), each a conjunction of comparators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The `||` alternatives.
    pub any: Vec<Vec<Comparator>>,
}

impl Range {
    /// Whether `v` is in the range (blang semantics: pre-releases compare normally).
    pub fn matches(&self, v: &Version) -> bool {
        self.any.iter().any(|all| {
            all.iter().all(|c| match c.op {
                ">=" => v >= &c.version,
                ">" => v > &c.version,
                "<=" => v <= &c.version,
                "<" => v < &c.version,
                "!=" => v != &c.version,
                _ => v == &c.version,
            })
        })
    }

    /// The highest version the range admits when every alternative has an upper bound
    /// (`<X` or `<=X`); `None` when unbounded.
    pub fn upper_bound(&self) -> Option<(&Version, bool)> {
        let mut best: Option<(&Version, bool)> = None;
        for all in &self.any {
            let ub = all
                .iter()
                .filter(|c| matches!(c.op, "<" | "<=" | "="))
                .map(|c| (&c.version, c.op != "<"))
                .min_by(|a, b| a.0.cmp(b.0))?;
            if best.is_none_or(|b| ub.0 > b.0) {
                best = Some(ub);
            }
        }
        best
    }
}

/// Parses a range; the error says what is wrong.
pub fn parse(text: &str) -> Result<Range, String> {
    let mut any = Vec::new();
    for alt in text.split("||") {
        // blang allows a space between operator and version (`>= 1.0.0`).
        let mut tokens: Vec<String> = Vec::new();
        let mut pending_op: Option<String> = None;
        for t in alt.split_whitespace() {
            if let Some(op) = pending_op.take() {
                tokens.push(format!("{op}{t}"));
            } else if matches!(t, ">=" | "<=" | ">" | "<" | "=" | "==" | "!=" | "!") {
                pending_op = Some(t.to_owned());
            } else {
                tokens.push(t.to_owned());
            }
        }
        if let Some(op) = pending_op {
            return Err(format!("operator `{op}` without a version"));
        }
        if tokens.is_empty() {
            return Err("empty range".into());
        }
        let mut all = Vec::new();
        for t in tokens {
            all.extend(comparator(&t)?);
        }
        any.push(all);
    }
    Ok(Range { any })
}

fn comparator(token: &str) -> Result<Vec<Comparator>, String> {
    let (op, rest) = [
        (">=", ">="),
        ("<=", "<="),
        ("!=", "!="),
        ("==", "="),
        (">", ">"),
        ("<", "<"),
        ("=", "="),
        ("!", "!="),
    ]
    .into_iter()
    .find_map(|(p, op)| token.strip_prefix(p).map(|r| (op, r)))
    .unwrap_or(("=", token));
    let parts: Vec<&str> = rest.split('.').collect();
    let is_wild = |s: &str| matches!(s, "x" | "X" | "*");
    if parts.iter().any(|p| is_wild(p)) {
        // 1.x -> >=1.0.0 <2.0.0 ; 1.2.x -> >=1.2.0 <1.3.0 (only with `=` or no operator, and the
        // ordering operators blang supports on wildcards).
        let nums: Vec<u64> = parts
            .iter()
            .take_while(|p| !is_wild(p))
            .map(|p| {
                p.parse::<u64>()
                    .map_err(|_| format!("invalid version `{rest}`"))
            })
            .collect::<Result<_, _>>()?;
        if parts.len() > 3 || parts.iter().skip(nums.len()).any(|p| !is_wild(p)) {
            return Err(format!("invalid wildcard version `{rest}`"));
        }
        let lo = Version::new(
            nums.first().copied().unwrap_or(0),
            nums.get(1).copied().unwrap_or(0),
            0,
        );
        let hi = match nums.len() {
            0 => None,
            1 => Some(Version::new(nums[0] + 1, 0, 0)),
            _ => Some(Version::new(nums[0], nums[1] + 1, 0)),
        };
        return Ok(match (op, hi) {
            ("=", Some(hi)) => vec![
                Comparator {
                    op: ">=",
                    version: lo,
                },
                Comparator {
                    op: "<",
                    version: hi,
                },
            ],
            ("=", None) => vec![Comparator {
                op: ">=",
                version: lo,
            }],
            ("!=", _) => return Err(format!("`!=` cannot take a wildcard (`{token}`)")),
            (">" | "<=", Some(hi)) => vec![Comparator {
                op: if op == ">" { ">=" } else { "<" },
                version: hi,
            }],
            (op, _) => vec![Comparator { op, version: lo }],
        });
    }
    let version = Version::parse(rest).map_err(|e| format!("invalid version `{rest}`: {e}"))?;
    Ok(vec![Comparator { op, version }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn ranges() {
        let r = parse(">=1.0.0 <2.0.0").unwrap();
        assert!(r.matches(&v("1.5.0")) && !r.matches(&v("2.0.0")));
        let r = parse(">= 0.1.0 < 0.3.0").unwrap();
        assert!(r.matches(&v("0.2.9")));
        let r = parse("<1.0.0 || >=2.0.0").unwrap();
        assert!(r.matches(&v("0.1.0")) && r.matches(&v("2.1.0")) && !r.matches(&v("1.1.0")));
        let r = parse("1.2.x").unwrap();
        assert!(r.matches(&v("1.2.7")) && !r.matches(&v("1.3.0")));
        assert_eq!(
            parse("<1.4.0").unwrap().upper_bound(),
            Some((&v("1.4.0"), false))
        );
        assert_eq!(parse(">=1.4.0").unwrap().upper_bound(), None);
    }

    #[test]
    fn bad_ranges() {
        for bad in ["", ">=", ">=1.0", "foo", ">=1.0.0 <", "1.x.2", "||"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
