//! The checks every user file given on the command line goes through
//! (`--input` of the codec suite, `--words` of the text suite), and the
//! name it gets in ids: one copy, so both flags refuse the same mistakes
//! with the same words.

use std::path::Path;

/// Checks that `path` exists, is a regular file, can be read, is not empty
/// and holds at most `max` bytes; returns its size. The error names the
/// flag and the file, for an exit with status 2 before anything is measured.
pub fn check(flag: &str, path: &Path, max: u64, max_label: &str) -> Result<u64, String> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| format!("{flag} {shown}: cannot read it ({e})"))?;
    if !meta.is_file() {
        return Err(format!("{flag} {shown}: not a regular file"));
    }
    // Opening and reading a byte proves the permissions, not just the name.
    let mut f =
        std::fs::File::open(path).map_err(|e| format!("{flag} {shown}: cannot read it ({e})"))?;
    let mut byte = [0u8; 1];
    std::io::Read::read(&mut f, &mut byte)
        .map_err(|e| format!("{flag} {shown}: cannot read it ({e})"))?;
    if meta.len() == 0 {
        return Err(format!("{flag} {shown}: the file is empty"));
    }
    if meta.len() > max {
        return Err(format!(
            "{flag} {shown}: {} bytes is more than the {max_label} opcost holds in memory; pass a sample of it",
            meta.len(),
        ));
    }
    Ok(meta.len())
}

/// `file-` and the file name made safe for an id segment, with `-2`, `-3`
/// … added while `taken` says the name is in use.
pub fn label(path: &Path, taken: impl Fn(&str) -> bool) -> String {
    let base = format!("file-{}", sanitise(path));
    let mut label = base.clone();
    let mut n = 2;
    while taken(&label) {
        label = format!("{base}-{n}");
        n += 1;
    }
    label
}

/// The file name reduced to characters that are safe in an id segment.
fn sanitise(path: &Path) -> String {
    const MAX_LEN: usize = 40;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".to_string());
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LEN)
        .collect()
}
