//! Splitting a multi-document YAML stream into documents, as kubectl does.
//!
//! In: the text of a file or of a rendered template. Out: its non-blank [`Document`]s, each
//! with the line of the stream it starts on.

use super::Document;

/// Split a multi-document stream on `---` lines (as kubectl does), keeping line numbers.
///
/// Text after `--- ` on the separator line belongs to the next document (which then starts on
/// that line): a comment is ignored as usual, content is parsed (or refused with its line),
/// never dropped.
pub fn split_documents(text: &str) -> Vec<Document<'_>> {
    let mut docs = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut offset = 0usize;
    for (line_no, line) in (1usize..).zip(text.split_inclusive('\n')) {
        // Only a line led by `---` or `...` can be a marker.
        if !(line.starts_with("---") || line.starts_with("...")) {
            offset += line.len();
            continue;
        }
        let trimmed = line.trim_end();
        let is_separator =
            trimmed == "---" || trimmed.starts_with("--- ") || trimmed.starts_with("---\t");
        let is_end = trimmed == "...";
        if is_separator || is_end {
            docs.push(Document {
                text: &text[start..offset],
                first_line: start_line,
            });
            let rest = &trimmed[3..];
            if is_separator && !is_blank(rest) {
                start = offset + 3;
                start_line = line_no;
            } else {
                start = offset + line.len();
                start_line = line_no + 1;
            }
        }
        offset += line.len();
    }
    docs.push(Document {
        text: &text[start..],
        first_line: start_line,
    });
    docs.retain(|d| !is_blank(d.text));
    docs
}

/// Whether a document holds nothing but whitespace and comments.
pub fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}
