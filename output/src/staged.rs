//! All-or-nothing output: files are written under temporary names beside their final ones and
//! renamed only once every one of them is complete, so a failed write leaves no partial set.

use std::path::{Path, PathBuf};

use crate::plot::{self, Figure};

/// Files written under temporary names, renamed together.
pub struct Staged {
    dir: PathBuf,
    files: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    /// A file of `bytes` called `name`.
    pub fn bytes(&mut self, name: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        self.file(name, |p| std::fs::write(p, &bytes))
    }

    /// A figure as `stem.svg` and `stem.png`.
    pub fn figure<F: Figure>(&mut self, stem: &str, fig: &F) -> std::io::Result<()> {
        self.bytes(&format!("{stem}.svg"), plot::svg(fig)?)?;
        self.file(&format!("{stem}.png"), |p| plot::png(fig, p))
    }

    /// Writes through `write` into a temporary path that keeps the final extension (the PNG
    /// encoder picks its format from it).
    pub fn file(
        &mut self,
        name: &str,
        write: impl FnOnce(&Path) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let tmp = self.dir.join(format!(".partial.{name}"));
        self.files.push((tmp.clone(), self.dir.join(name)));
        write(&tmp)
    }

    fn commit(self) -> std::io::Result<Vec<PathBuf>> {
        for (tmp, fin) in &self.files {
            std::fs::rename(tmp, fin)?;
        }
        Ok(self.files.into_iter().map(|(_, f)| f).collect())
    }

    fn abandon(self) {
        for (tmp, _) in &self.files {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Writes into `dir` whatever `stage` stages, all or nothing; returns the files written.
pub fn write_all(
    dir: &Path,
    stage: impl FnOnce(&mut Staged) -> std::io::Result<()>,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut staged = Staged {
        dir: dir.to_path_buf(),
        files: Vec::new(),
    };
    match stage(&mut staged) {
        Ok(()) => staged.commit(),
        Err(e) => {
            staged.abandon();
            Err(e)
        }
    }
}
