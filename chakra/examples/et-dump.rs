//! Prints every node of a Chakra ET file, one per line: id, type, name, duration, data and
//! control dependencies, attributes. `cargo run -p chakra --example et-dump FILE.et[.gz]`.

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: et-dump FILE.et[.gz]");
        std::process::exit(2);
    };
    let et = match chakra::EtFile::read(&path) {
        Ok(et) => et,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!("version {:?} metadata {:?}", et.version, et.metadata);
    for n in &et.nodes {
        let kind = match n.kind {
            Ok(k) => k.name().to_string(),
            Err(k) => format!("type {k}"),
        };
        println!(
            "{} {kind} {:?} dur={}us data={:?} ctrl={:?} {:?}",
            n.id, n.name, n.duration_micros, n.data_deps, n.ctrl_deps, n.attrs
        );
    }
}
