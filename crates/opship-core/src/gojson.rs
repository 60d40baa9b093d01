//! JSON text exactly as Go's `encoding/json` writes it: what opm's output is made of, what
//! cosign signs, what OLM v1 hashes into generated names. Object
//! keys keep the order of the map they come from (opm's struct field order or a raw message's
//! order), strings are escaped as Go escapes them, numbers are printed as Go prints float64 and
//! int64, and indentation follows `json.Encoder.SetIndent("", "    ")`.

use serde_json::Value;

/// How to write.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Escape `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026` (Go's default; opm turns it off
    /// for its output but `json.Marshal` of bundle objects keeps it on).
    pub escape_html: bool,
    /// Indentation per level; `None` writes compact JSON.
    pub indent: Option<&'static str>,
}

/// `json.Marshal`: compact, HTML escaped.
pub const MARSHAL: Style = Style {
    escape_html: true,
    indent: None,
};

/// opm's writer: four spaces, no HTML escaping.
pub const OPM: Style = Style {
    escape_html: false,
    indent: Some("    "),
};

/// Compact without HTML escaping (raw property values as opm compares them).
pub const COMPACT: Style = Style {
    escape_html: false,
    indent: None,
};

/// Writes `value` in `style`.
pub fn to_string(value: &Value, style: Style) -> String {
    let mut out = String::new();
    write(&mut out, value, style, 0);
    out
}

/// Appends `value` in `style` to `out`, as if it were nested `depth` levels deep.
pub fn write(out: &mut String, value: &Value, style: Style, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s, style.escape_html),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write(out, item, style, depth + 1);
            }
            newline(out, style, depth);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write_str(out, k, style.escape_html);
                out.push(':');
                if style.indent.is_some() {
                    out.push(' ');
                }
                write(out, v, style, depth + 1);
            }
            newline(out, style, depth);
            out.push('}');
        }
    }
}

/// A line break and the indentation of `depth` (nothing in compact style).
pub fn newline(out: &mut String, style: Style, depth: usize) {
    if let Some(indent) = style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

/// A number as Go prints it: integers as they are, floats with the shortest representation
/// that round-trips, in exponent form below 1e-6 and from 1e21 on.
pub fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(f) = n.as_f64() {
        write_float(out, f);
    }
}

fn write_float(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1.5e-7` / `1e21`; Go writes `1.5e-07` / `1e+21` and then trims the
        // zero of a one-digit negative exponent, giving `1.5e-7`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mant, exp)) if exp.starts_with('-') => {
                out.push_str(mant);
                out.push_str("e-");
                out.push_str(&exp[1..]);
            }
            Some((mant, exp)) => {
                out.push_str(mant);
                out.push_str("e+");
                if exp.len() < 2 {
                    out.push('0');
                }
                out.push_str(exp);
            }
            None => out.push_str(&s),
        }
    } else {
        // Rust's Display is the shortest round-trip form without exponent, like Go's 'f', -1.
        out.push_str(&format!("{f}"));
    }
}

/// A string literal as Go escapes it.
pub fn write_str(out: &mut String, s: &str, escape_html: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '<' | '>' | '&' if escape_html => None,
            c if (c as u32) < 0x20 => None,
            '\u{2028}' => Some("\\u2028"),
            '\u{2029}' => Some("\\u2029"),
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let b = c as u32 as u8;
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The value with every object's keys sorted, as Go's `json.Marshal` of a map writes them.
pub fn sorted(value: &Value) -> Value {
    crate::yaml::sorted(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_escaping_and_numbers() {
        let v = json!({"b": "<a&b>\u{1}\u{2028}\"\\\n", "a": [1.0, 0.5, 1e21, 1.5e-7, -3, 12345678.0], "e": {}, "f": []});
        assert_eq!(
            to_string(&v, MARSHAL),
            r#"{"b":"\u003ca\u0026b\u003e\u0001\u2028\"\\\n","a":[1,0.5,1e+21,1.5e-7,-3,12345678],"e":{},"f":[]}"#
        );
        assert_eq!(
            to_string(&json!({"a": [1, {"b": "<"}], "c": {}}), OPM),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": \"<\"\n        }\n    ],\n    \"c\": {}\n}"
        );
    }
}
