//! The platforms hetsim ships (`scenarios/platforms/*.ron`), built into the binary so that a
//! scenario anywhere can name one: `platform: Named("lassen")`.

macro_rules! platforms {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../scenarios/platforms/", $name, ".ron")))),*]
    };
}

/// (name, RON text), by name.
pub const PLATFORMS: &[(&str, &str)] = platforms!(
    "demo-2node",
    "dgx-a100",
    "dgx-a100-cluster",
    "dgx-b200",
    "dgx-h100",
    "dgx-h100-cluster",
    "dgx-h100-superpod",
    "dgx-h200",
    "gb200-nvl72",
    "lassen",
    "lassen-72-tapered",
    "pcie-2gpu",
);

/// The text of the shipped platform `name`.
pub fn platform(name: &str) -> Option<&'static str> {
    PLATFORMS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The shipped platforms' names, comma-separated.
pub fn names() -> String {
    PLATFORMS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The shipped platform a path names by its file name (`platforms/lassen.ron` -> `lassen`).
pub fn by_file_name(path: &str) -> Option<&'static str> {
    let stem = path.rsplit(['/', '\\']).next()?.strip_suffix(".ron")?;
    PLATFORMS.iter().find(|(n, _)| *n == stem).map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_platform_file_is_built_in() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/platforms");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".ron").map(str::to_string))
            .collect();
        files.sort();
        let built: Vec<&str> = PLATFORMS.iter().map(|(n, _)| *n).collect();
        assert_eq!(files, built, "add new platform files to PLATFORMS");
        assert_eq!(by_file_name("../platforms/lassen.ron"), Some("lassen"));
        assert_eq!(by_file_name("mine.ron"), None);
    }
}
