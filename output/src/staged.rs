//! All-or-nothing output. A run's files are written into a staging folder of its own inside
//! the output folder (`.hetsim-staging-<pid>-<random>`, so two runs into one folder never
//! share a temporary name) and moved to their final names only once every one is complete.
//! A manifest (`.hetsim-outputs`) lists what the last run published: the next run into the
//! folder removes the files of that list it does not write again, so a rerun with fewer
//! outputs leaves no stale picture beside the new summary, and files hetsim did not write are
//! never touched. A staging folder left by a process that no longer runs (killed mid-write)
//! is removed by the next run into the folder.
//!
//! Publishing holds an exclusive lock on `.hetsim-lock` in the folder, so two runs into one
//! folder publish one after the other: the folder ends with one run's files, never a mix. An
//! interrupt (SIGINT, SIGTERM: [`interrupt`]) waits for a publication under way to finish,
//! then removes every staging folder of this process before it exits: the folder holds either
//! the previous run's files or the new run's, and no litter.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::plot::{self, Figure};

/// The list of files the last run published in a folder.
pub const MANIFEST: &str = ".hetsim-outputs";
const STAGING_PREFIX: &str = ".hetsim-staging-";
const LOCK: &str = ".hetsim-lock";

/// This process's staging folders. Creating a staging folder, writing a file into it,
/// publishing and removing it each hold the guard, and so does [`interrupt`] from the moment
/// it starts: an interrupt never cuts one of them in two, and nothing writes into a staging
/// folder while the interrupt removes it (a file created mid-removal would leave it behind).
static STAGING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What the process does on SIGINT or SIGTERM: waits for a publication under way, removes
/// this process's staging folders and exits with 130 (the shell's code for an interrupt).
pub fn interrupt() -> ! {
    let staging = registry();
    for dir in staging.iter() {
        let _ = std::fs::remove_dir_all(dir);
    }
    eprintln!("interrupted: no output written");
    std::process::exit(130)
}

/// Files written into a private staging folder, published together.
pub struct Staged {
    staging: tempfile::TempDir,
    names: Vec<String>,
}

impl Staged {
    /// A file of `bytes` called `name`.
    pub fn bytes(&mut self, name: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        self.file(name, |p| std::fs::write(p, &bytes))
    }

    /// A JSON document, pretty-printed with a final newline.
    pub fn json(&mut self, name: &str, value: &serde_json::Value) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        self.bytes(name, bytes)
    }

    /// A figure as `stem.svg` and `stem.png`.
    pub fn figure<F: Figure>(&mut self, stem: &str, fig: &F) -> std::io::Result<()> {
        self.bytes(&format!("{stem}.svg"), plot::svg(fig)?)?;
        self.file(&format!("{stem}.png"), |p| plot::png(fig, p))
    }

    /// Writes through `write` into the staging path of `name` (a plain file name; it keeps
    /// its extension, which the PNG encoder reads).
    pub fn file(
        &mut self,
        name: &str,
        write: impl FnOnce(&Path) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if !plain(name) {
            return Err(std::io::Error::other(format!(
                "`{name}` is not a plain output file name"
            )));
        }
        self.names.push(name.to_string());
        let _writing = registry();
        write(&self.staging.path().join(name))
    }

    /// Moves every staged file to its final name, removes what the previous run published
    /// and this one did not, and records the new list.
    fn publish(self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let lock = open_lock(&dir.join(LOCK))?;
        lock.lock()?;
        // Nothing moves unless everything can: a name taken by a folder (or anything but a
        // file or a link) would stop the publication half-way.
        for name in self.names.iter().map(String::as_str).chain([MANIFEST]) {
            let dest = dir.join(name);
            if let Ok(meta) = std::fs::symlink_metadata(&dest)
                && !meta.is_file()
                && !meta.is_symlink()
            {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} exists and is not a file; nothing was written",
                        dest.display()
                    ),
                ));
            }
        }
        let previous = read_manifest(dir);
        let mut manifest = String::new();
        for name in &self.names {
            std::fs::rename(self.staging.path().join(name), dir.join(name))?;
            manifest.push_str(name);
            manifest.push('\n');
        }
        for old in previous.iter().filter(|o| !self.names.contains(o)) {
            let _ = std::fs::remove_file(dir.join(old));
        }
        let tmp = self.staging.path().join(MANIFEST);
        std::fs::write(&tmp, manifest)?;
        std::fs::rename(&tmp, dir.join(MANIFEST))?;
        Ok(self.names.iter().map(|n| dir.join(n)).collect())
    }
}

/// The lock file, opened without truncating it and without following a link (`O_NOFOLLOW`
/// also catches a link made after the check): a lock that is a link to another file is
/// refused rather than written through.
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a plain file (a link or a folder); remove it",
                path.display()
            ),
        ));
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NOFOLLOW);
    }
    open.open(path)
}

/// A file name in the output folder itself, not hidden (the staging folder and the manifest
/// are): what a run may write and what a manifest may name for removal.
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.')
}

/// The plain file names a folder's manifest lists (none when it has no manifest).
fn read_manifest(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join(MANIFEST))
        .map(|text| {
            text.lines()
                .filter(|l| plain(l))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes staging folders in `dir` whose process is gone (Linux: no `/proc/<pid>`).
fn remove_orphans(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(STAGING_PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or_default();
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Writes into `dir` whatever `stage` stages, all or nothing; returns the files written.
pub fn write_all(
    dir: &Path,
    stage: impl FnOnce(&mut Staged) -> std::io::Result<()>,
) -> std::io::Result<Vec<PathBuf>> {
    let created = !dir.exists();
    std::fs::create_dir_all(dir)?;
    remove_orphans(dir);
    let (staging, path) = {
        let mut registry = registry();
        let staging = tempfile::Builder::new()
            .prefix(&format!("{STAGING_PREFIX}{}-", std::process::id()))
            .tempdir_in(dir)?;
        let path = staging.path().to_path_buf();
        registry.push(path.clone());
        (staging, path)
    };
    let mut staged = Staged {
        staging,
        names: Vec::new(),
    };
    // On an error the staging folder goes with `staged` (TempDir removes itself), and a
    // folder this call created goes too (it is empty but for the lock).
    let result = match stage(&mut staged) {
        Ok(()) => {
            let mut registry = registry();
            let published = staged.publish(dir);
            registry.retain(|p| *p != path);
            published
        }
        Err(e) => {
            let mut registry = registry();
            drop(staged);
            registry.retain(|p| *p != path);
            Err(e)
        }
    };
    if result.is_err() && created {
        let _ = std::fs::remove_file(dir.join(LOCK));
        let _ = std::fs::remove_dir(dir);
    }
    result
}

fn registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    STAGING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_write_publishes_nothing_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let r = write_all(tmp.path(), |st| {
            st.bytes("a.csv", b"1".to_vec())?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(r.is_err());
        assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
    }

    #[test]
    fn publication_waits_for_the_folder_lock_another_process_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let held = std::fs::File::create(tmp.path().join(LOCK)).unwrap();
        held.lock().unwrap();
        let dir = tmp.path().to_path_buf();
        let writer = std::thread::spawn(move || {
            write_all(&dir, |st| st.bytes("summary.json", b"{}".to_vec())).unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            !tmp.path().join("summary.json").exists(),
            "nothing is published while another run publishes"
        );
        held.unlock().unwrap();
        writer.join().unwrap();
        assert!(tmp.path().join("summary.json").is_file());
    }

    #[test]
    fn a_rerun_with_fewer_outputs_removes_only_the_previous_runs_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
        write_all(tmp.path(), |st| {
            st.bytes("summary.json", b"{}".to_vec())?;
            st.bytes("timeline.svg", b"<svg/>".to_vec())
        })
        .unwrap();
        let written = write_all(tmp.path(), |st| st.bytes("summary.json", b"{}".to_vec())).unwrap();
        assert_eq!(written, vec![tmp.path().join("summary.json")]);
        assert_eq!(
            names(tmp.path()),
            [LOCK, MANIFEST, "notes.txt", "summary.json"],
            "the old timeline goes, the user's file stays"
        );
    }

    #[test]
    fn staging_folders_of_dead_processes_are_removed_and_names_are_checked() {
        let tmp = tempfile::tempdir().unwrap();
        // No process has pid 4,000,000,000 (above Linux's maximum).
        let orphan = tmp.path().join(format!("{STAGING_PREFIX}4000000000-x"));
        std::fs::create_dir(&orphan).unwrap();
        std::fs::write(orphan.join("summary.json"), "{}").unwrap();
        write_all(tmp.path(), |st| st.bytes("a.csv", b"1".to_vec())).unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!orphan.exists());
        }
        for bad in ["../x.csv", "/etc/x", ".hidden", ""] {
            let r = write_all(tmp.path(), |st| st.bytes(bad, b"1".to_vec()));
            assert!(r.is_err(), "{bad}");
        }
    }
}
