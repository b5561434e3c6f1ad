//! The `<read-files>`/`<modified-files>` sections appended to a summary.
//! The file ledger (`crate::files`) decides what they list; this renders
//! them, deterministically.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Files read and modified, ordered by last touch, newest first. A
/// modified file is never also listed as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSections {
    pub read: Vec<String>,
    pub modified: Vec<String>,
    pub marks: FileMarks,
}

/// What the section lists alone do not say: which modified files were
/// created or deleted, and how many files did not fit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct FileMarks {
    /// Entries of the modified list that the session created.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<String>,
    /// Entries of the modified list that are deleted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// Read-only files beyond `maxListedFiles`.
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted_read: usize,
    /// Modified files beyond `maxListedFiles`.
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted_modified: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl FileMarks {
    pub fn is_empty(&self) -> bool {
        *self == FileMarks::default()
    }
}

impl FileSections {
    /// The `<read-files>`/`<modified-files>` blocks appended to a summary.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (tag, paths, omitted) in [
            ("read-files", &self.read, self.marks.omitted_read),
            (
                "modified-files",
                &self.modified,
                self.marks.omitted_modified,
            ),
        ] {
            if paths.is_empty() && omitted == 0 {
                continue;
            }
            out.push_str(&format!("\n<{tag}>\n"));
            for path in paths {
                out.push_str(path);
                if self.marks.created.contains(path) {
                    out.push_str(" (created)");
                } else if self.marks.deleted.contains(path) {
                    out.push_str(" (deleted)");
                }
                out.push('\n');
            }
            if omitted > 0 {
                out.push_str(&format!("… and {omitted} more\n"));
            }
            out.push_str(&format!("</{tag}>\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_render_marks_and_the_rest() {
        let sections = FileSections {
            read: vec!["a.rs".into()],
            modified: vec!["new.rs".into(), "gone.rs".into(), "b.rs".into()],
            marks: FileMarks {
                created: vec!["new.rs".into()],
                deleted: vec!["gone.rs".into()],
                omitted_read: 0,
                omitted_modified: 4,
            },
        };
        assert_eq!(
            sections.render(),
            "\n<read-files>\na.rs\n</read-files>\n\n<modified-files>\nnew.rs (created)\ngone.rs (deleted)\nb.rs\n… and 4 more\n</modified-files>\n"
        );
        assert_eq!(FileSections::default().render(), "");
    }
}
