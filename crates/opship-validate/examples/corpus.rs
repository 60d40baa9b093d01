//! Scratch: validate the corpus and print findings counts.
fn main() {
    let root = std::path::Path::new("/work/shared/corpus/bundles");
    let mut dirs = vec![];
    for op in std::fs::read_dir(root).unwrap() {
        for v in std::fs::read_dir(op.unwrap().path()).unwrap() {
            dirs.push(v.unwrap().path());
        }
    }
    dirs.sort();
    let opts = if std::env::args().any(|a| a == "all") {
        opship_validate::Options::all()
    } else {
        Default::default()
    };
    let t = std::time::Instant::now();
    let r = opship_validate::validate_dirs(&dirs, &opts);
    let el = t.elapsed();
    let mut n = 0;
    for x in &r {
        let x = x.as_ref().unwrap();
        for f in &x.findings {
            n += 1;
            if std::env::args().any(|a| a == "-v") {
                println!(
                    "{} {} {} {} {:?}",
                    x.path.display(),
                    f.rule.id,
                    f.level,
                    f.message,
                    f.location.as_ref().map(|l| l.to_string())
                );
            }
        }
    }
    println!("{} bundles, {} findings, {:?}", r.len(), n, el);
}
