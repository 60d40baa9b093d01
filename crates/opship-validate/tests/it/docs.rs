//! docs/rules.md is generated from the rule registry; this keeps it current.
//! `OPSHIP_UPDATE_DOCS=1 cargo test -p opship-validate --test it docs` rewrites it.

#[test]
fn rules_md_is_current() {
    let path = crate::repo_dir().join("docs/rules.md");
    let want = opship_validate::rule::markdown();
    if std::env::var_os("OPSHIP_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/rules.md is stale: run `OPSHIP_UPDATE_DOCS=1 cargo test -p opship-validate --test it docs`"
    );
}
