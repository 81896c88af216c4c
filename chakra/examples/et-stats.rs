//! `et-stats FILE.et[.gz]`: a trace's statistics (see `chakra::stats`).
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: et-stats FILE.et[.gz]");
        std::process::exit(2);
    };
    match chakra::EtFile::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|et| chakra::stats::stats(&et))
    {
        Ok(s) => println!("{s:#?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
