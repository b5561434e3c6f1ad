//! Where Claude Code keeps its files, and what it calls them.

use std::path::{Path, PathBuf};

use crate::agents::Homes;

/// Its name on the wire, and its transcript format's.
pub const NAME: &str = "claude-code";

pub(super) const CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";

pub(super) fn config_dir(homes: &Homes) -> PathBuf {
    homes
        .var(CONFIG_DIR)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| homes.home().join(".claude"))
}

/// Its global state file (`autoCompactEnabled` lives there).
pub(super) fn state_file(homes: &Homes) -> PathBuf {
    match homes.var(CONFIG_DIR) {
        Some(dir) => dir.join(".claude.json"),
        None => homes.home().join(".claude.json"),
    }
}

pub(super) fn projects(homes: &Homes) -> PathBuf {
    config_dir(homes).join("projects")
}

/// Its directory name for a cwd.
pub fn dir_name(cwd: &str) -> String {
    let name: String = cwd
        .encode_utf16()
        .map(|unit| match char::from_u32(unit as u32) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect();
    if name.len() <= 200 {
        return name;
    }
    let hash = cwd
        .encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32));
    format!("{}-{}", &name[..200], base36((hash as i64).unsigned_abs()))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases measured against Claude Code 2.1.330.
    #[test]
    fn directory_names_match_the_agent() {
        let cases = [
            ("/tmp/cc1/ws", "-tmp-cc1-ws"),
            ("/tmp/cc2/my.proj_v1 x/ünï-ç", "-tmp-cc2-my-proj-v1-x--n---"),
            ("/tmp/cc2/emoji😀d", "-tmp-cc2-emoji--d"),
            ("/tmp/cc2/e\u{301}", "-tmp-cc2-e-"),
            ("/tmp/cc2/Caps-Dir~1", "-tmp-cc2-Caps-Dir-1"),
        ];
        for (cwd, name) in cases {
            assert_eq!(dir_name(cwd), name, "{cwd}");
        }
        let long = format!("/tmp/cc2/{}/{}", "a".repeat(120), "b.c".repeat(40));
        let name = dir_name(&long);
        assert_eq!(&name[200..], "-370vl7", "{name}");
    }
}
