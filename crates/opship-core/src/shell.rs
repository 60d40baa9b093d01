//! Command lines split as a POSIX shell splits them before running anything: words with their
//! quotes and escapes removed, and the simple commands between `|`, `&&`, `||`, `;`, `&` and
//! subshell parentheses. Expansions (`$VAR`, `$(...)`) are not performed: they stay in the word
//! as written, so a caller can tell a value the shell would still change.

/// How a simple command is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joint {
    /// The first command, or after `;`, `&`, a newline or a parenthesis.
    Start,
    /// After `|`: reads the previous command's output.
    Pipe,
    /// After `&&`.
    And,
    /// After `||`.
    Or,
}

/// One simple command: its words, the assignments before them, and how it is joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// How it follows the previous command.
    pub joint: Joint,
    /// `NAME=value` words before the program.
    pub assignments: Vec<(String, String)>,
    /// The program and its arguments, unquoted.
    pub words: Vec<String>,
}

/// Splits `line` into simple commands. An unterminated quote is an error with the quote's
/// position.
pub fn split(line: &str) -> Result<Vec<Simple>, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut joint = Joint::Start;
    let mut i = 0;
    let finish = |words: &mut Vec<String>, out: &mut Vec<Simple>, joint: Joint| {
        if words.is_empty() {
            return;
        }
        let mut assignments = Vec::new();
        let mut rest = std::mem::take(words).into_iter().peekable();
        while let Some(w) = rest.peek() {
            match assignment(w) {
                Some(a) => {
                    assignments.push(a);
                    rest.next();
                }
                None => break,
            }
        }
        out.push(Simple {
            joint,
            assignments,
            words: rest.collect(),
        });
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&n) => {
                        word.push(n);
                        in_word = true;
                    }
                    None => {}
                }
                i += 2;
                continue;
            }
            '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .ok_or_else(|| format!("unterminated ' at character {}", i + 1))?;
                word.extend(&chars[i + 1..i + 1 + end]);
                in_word = true;
                i += end + 2;
                continue;
            }
            '"' => {
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err(format!("unterminated \" at character {}", i + 1)),
                        Some('"') => break,
                        Some('\\') => {
                            match chars.get(j + 1) {
                                Some('\n') => {}
                                Some(&n) if "$`\"\\".contains(n) => word.push(n),
                                Some(&n) => {
                                    word.push('\\');
                                    word.push(n);
                                }
                                None => {
                                    return Err(format!("unterminated \" at character {}", i + 1));
                                }
                            }
                            j += 2;
                        }
                        Some(&n) => {
                            word.push(n);
                            j += 1;
                        }
                    }
                }
                in_word = true;
                i = j + 1;
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                // A command substitution is one word part, parentheses and all.
                let mut depth = 0;
                let mut j = i + 1;
                while j < chars.len() {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                word.extend(&chars[i..(j + 1).min(chars.len())]);
                in_word = true;
                i = j + 1;
                continue;
            }
            ' ' | '\t' => {}
            '#' if !in_word => {
                // A comment runs to the end of the line.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '|' | '&' | ';' | '\n' | '(' | ')' => {}
            _ => {
                word.push(c);
                in_word = true;
                i += 1;
                continue;
            }
        }
        // A word ends here.
        if in_word {
            words.push(std::mem::take(&mut word));
            in_word = false;
        }
        let next = chars.get(i + 1).copied();
        let (new_joint, width) = match (c, next) {
            ('|', Some('|')) => (Some(Joint::Or), 2),
            ('&', Some('&')) => (Some(Joint::And), 2),
            ('|', _) => (Some(Joint::Pipe), 1),
            (';' | '&' | '\n' | '(' | ')', _) => (Some(Joint::Start), 1),
            _ => (None, 1),
        };
        if let Some(j) = new_joint {
            finish(&mut words, &mut out, joint);
            // `( a ) && b`: the joint after a closing parenthesis is the operator that follows.
            if c != ')' {
                joint = j;
            }
        }
        i += width;
    }
    if in_word {
        words.push(word);
    }
    finish(&mut words, &mut out, joint);
    Ok(out)
}

fn assignment(w: &str) -> Option<(String, String)> {
    let (name, value) = w.split_once('=')?;
    let mut cs = name.chars();
    let first = cs.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| (name.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        split(line).unwrap().into_iter().map(|s| s.words).collect()
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(
            words(
                r#"op --channels "latest,gitops-1.8" --default-channel 'latest' a\ b "x\"y" 'q\n'"#
            ),
            vec![vec![
                "op",
                "--channels",
                "latest,gitops-1.8",
                "--default-channel",
                "latest",
                "a b",
                "x\"y",
                "q\\n"
            ]]
        );
        assert_eq!(words("a\\\n  b"), vec![vec!["a", "b"]]);
        assert!(split("echo 'open").unwrap_err().contains("unterminated '"));
    }

    #[test]
    fn operators_and_assignments() {
        let s = split(
            "cd config/manager && k edit set image c=i:1 ; (x | y) || z & A=1 B='2 3' ./gen --f",
        )
        .unwrap();
        let got: Vec<(Joint, Vec<String>)> = s.iter().map(|c| (c.joint, c.words.clone())).collect();
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (Joint::Start, w(&["cd", "config/manager"])),
                (Joint::And, w(&["k", "edit", "set", "image", "c=i:1"])),
                (Joint::Start, w(&["x"])),
                (Joint::Pipe, w(&["y"])),
                (Joint::Or, w(&["z"])),
                (Joint::Start, w(&["./gen", "--f"])),
            ]
        );
        assert_eq!(
            s[5].assignments,
            vec![("A".into(), "1".into()), ("B".into(), "2 3".into())]
        );
        assert_eq!(
            words("echo $(a | b) c # d"),
            vec![vec!["echo", "$(a | b)", "c"]]
        );
    }
}
