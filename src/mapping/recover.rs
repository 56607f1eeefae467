//! Reading a mapping file past its errors, so that `facewire check` lists them all at once.
//!
//! TOML deserialisation stops at the first bad value. When it does, the entry that holds the
//! value is left out (its bytes become spaces, so every other position in the file stays where
//! it was) and the text is read again, until it reads or nothing more can be left out. What is
//! left out is an entry of a top-level table (a target of `[map]`, a group of `[groups]`, a key
//! of `[head]` or `[eyes]`) or a top-level key; a bad `version` reads as the current version.
//! A file that is not TOML at all is one error: the parser has no position to go on from.

use std::ops::Range;

use toml_edit::{ImDocument, Item, Key, Table};

use super::file::{MappingFile, VERSION};
use crate::diagnostic::Located;

/// Deserialises `text` (labelled `path`), leaving out every entry with an error: the file
/// without them, when the rest reads, and the errors in the order they were found.
pub(super) fn deserialize(text: &str, path: &str) -> (Option<MappingFile>, Vec<Located>) {
    let mut error = match toml::from_str::<MappingFile>(text) {
        Ok(file) => return (Some(file), Vec::new()),
        Err(e) => e,
    };
    let mut errors = vec![Located::from_toml(path, text, &error)];
    let Ok(doc) = ImDocument::parse(text) else {
        return (None, errors);
    };
    let mut masked = text.to_string();
    loop {
        let Some(at) = error.span().map(|s| s.start) else {
            return (None, errors);
        };
        if !leave_out(doc.as_table(), at, &mut masked) {
            return (None, errors);
        }
        error = match toml::from_str::<MappingFile>(&masked) {
            Ok(file) => return (Some(file), errors),
            Err(e) => e,
        };
        let located = Located::from_toml(path, text, &error);
        if errors.last() == Some(&located) {
            return (None, errors);
        }
        errors.push(located);
    }
}

/// Blanks out of `masked` the entry of `root` (the original document) at byte `at`; false when
/// there is none or it is already blank.
fn leave_out(root: &Table, at: usize, masked: &mut String) -> bool {
    let Some((key, item)) = child_at(root, at) else {
        return false;
    };
    if key.get() == "version" {
        let Some(span) = item.span() else {
            return false;
        };
        let current = format!("{VERSION:<width$}", width = span.len());
        if current.len() != span.len() || masked[span.clone()] == current {
            return false;
        }
        masked.replace_range(span, &current);
        return true;
    }
    let (key, item) = match item {
        Item::Table(table) => child_at(table, at).unwrap_or((key, item)),
        _ => (key, item),
    };
    let mut ranges = Vec::new();
    entry_ranges(masked, key, item, &mut ranges);
    let mut changed = false;
    for range in ranges {
        let blank: String = masked[range.clone()]
            .chars()
            .flat_map(|c| {
                let fill = if c == '\n' { '\n' } else { ' ' };
                std::iter::repeat_n(fill, c.len_utf8())
            })
            .collect();
        if masked[range.clone()] != blank {
            masked.replace_range(range, &blank);
            changed = true;
        }
    }
    changed
}

/// The entry of `table` whose key, value, header or contents hold byte `at`.
fn child_at(table: &Table, at: usize) -> Option<(&Key, &Item)> {
    table
        .iter()
        .filter_map(|(name, _)| table.get_key_value(name))
        .find(|(key, item)| covers(key, item, at))
}

fn covers(key: &Key, item: &Item, at: usize) -> bool {
    let within = |span: Option<Range<usize>>| {
        span.is_some_and(|s| s.start == at || (s.start..s.end).contains(&at))
    };
    within(key.span())
        || within(item.span())
        || match item {
            Item::Table(table) => child_at(table, at).is_some(),
            Item::ArrayOfTables(tables) => tables
                .iter()
                .any(|t| within(t.span()) || child_at(t, at).is_some()),
            Item::None | Item::Value(_) => false,
        }
}

/// The byte ranges of the lines that write `key = item`: from the start of the key's line to
/// the end of the value, and for a table its header and every entry under it.
fn entry_ranges(text: &str, key: &Key, item: &Item, out: &mut Vec<Range<usize>>) {
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |nl| nl + 1);
    match item {
        Item::None => {}
        Item::Value(value) => {
            if let (Some(k), Some(v)) = (key.span(), value.span()) {
                out.push(line_start(k.start)..v.end);
            }
        }
        Item::Table(table) => table_ranges(text, table, &line_start, out),
        Item::ArrayOfTables(tables) => {
            for table in tables.iter() {
                table_ranges(text, table, &line_start, out);
            }
        }
    }
}

fn table_ranges(
    text: &str,
    table: &Table,
    line_start: &dyn Fn(usize) -> usize,
    out: &mut Vec<Range<usize>>,
) {
    if let Some(header) = table
        .span()
        .filter(|_| !table.is_implicit() && !table.is_dotted())
    {
        out.push(line_start(header.start)..header.end);
    }
    for (name, _) in table.iter() {
        if let Some((key, item)) = table.get_key_value(name) {
            entry_ranges(text, key, item, out);
        }
    }
}
