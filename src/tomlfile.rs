//! Writing the TOML files facewire saves (profiles, look presets, API tokens, the camera in
//! `facewire.toml`) from serde values, keeping what a person wrote in them.
//!
//! A save reads the file as it is now, merges the new value into it and writes it atomically:
//! a key that still exists keeps its place, its comments and its spacing (only a changed value
//! is rewritten, and a value equal to the written one, `0.50` for `0.5`, stays as written), a key
//! the value no longer has is removed, a new key is added at the end of its table, and a table
//! written inline or with dotted keys stays so. Arrays of tables and arrays are merged element
//! by element, by position. A comment at the end of the file stays after the content it
//! followed: a table the save adds goes after it. A file whose lines all end in CRLF keeps CRLF.
//! A file that does not exist yet starts from a header of comment lines.
//!
//! ```no_run
//! # fn main() -> Result<(), facewire::tomlfile::TomlFileError> {
//! #[derive(serde::Serialize)]
//! struct Camera {
//!     zoom: facewire::tomlfile::F32,
//! }
//! let path = std::path::Path::new("config/facewire.toml");
//! let mut file = facewire::tomlfile::TomlFile::read(path)?;
//! file.set_table("camera", &Camera { zoom: facewire::tomlfile::F32(1.5) })?;
//! file.write()?;
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::diagnostic::Located;
use serde::ser::{Serialize, SerializeMap, Serializer};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// Errors reading, merging into or writing a TOML file.
#[derive(Debug, thiserror::Error)]
pub enum TomlFileError {
    /// The file could not be read.
    #[error("cannot read {}: {cause}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
    /// The file is not valid TOML, so the value cannot be merged into it (`path:line:column: not
    /// valid TOML: ...`).
    #[error("{0}")]
    Parse(Located),
    /// A key the value goes into holds something other than a table (`camera = 2.0`, or an
    /// array of tables `[[camera]]`); the file is left as it was.
    #[error("{}: `{key}` is not a table, so it was left as it was", path.display())]
    NotATable {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
    /// The value cannot be written as TOML (a bug: a `None` inside a list, a map whose keys are
    /// not strings, a value that is not a table).
    #[error("cannot write {} as TOML: {cause}", path.display())]
    Serialize {
        /// The file.
        path: PathBuf,
        /// The serializer's error; part of the message.
        cause: toml_edit::ser::Error,
    },
    /// The file could not be written (the previous file, if any, is unchanged).
    #[error("cannot write {}: {cause}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
}

/// An `f32` written with the fewest digits that read back as the same `f32`: `0.12`, where a
/// plain `f32` (widened to the `f64` of a TOML float) would be written `0.11999999731779099`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct F32(pub f32);

impl Serialize for F32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // `{:?}` is the shortest decimal that reads back as this `f32`; that decimal read as an
        // `f64` prints as the same digits.
        let shortest = format!("{:?}", self.0).parse().unwrap_or(f64::from(self.0));
        s.serialize_f64(shortest)
    }
}

/// Entries written as a table in the order given (a `BTreeMap` would sort them, a `HashMap`
/// shuffle them): calibrated channels in canonical order, a look's sliders in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<K, V>(pub Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Ordered<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<K, V> Ordered<K, V> {
    /// Whether there is no entry (for `skip_serializing_if`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A TOML file being saved: its document as read, the values merged into it, and where it goes.
#[derive(Debug, Clone)]
pub struct TomlFile {
    /// Where it is read from and written to.
    path: PathBuf,
    /// The document.
    doc: DocumentMut,
    /// Whether every line of the file as read ends in CRLF, so the written file does too.
    crlf: bool,
}

/// The position a table added by a merge carries until [`settle`] places it.
const ADDED: usize = usize::MAX;

impl TomlFile {
    /// The file at `path`; when it does not exist, a new file that starts with `header`
    /// (comment lines, each starting with `#`, or blank lines).
    pub fn open(path: &Path, header: &str) -> Result<TomlFile, TomlFileError> {
        match crate::fsutil::read_text(path) {
            Ok(text) => TomlFile::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TomlFile::fresh(path, header)),
            Err(cause) => Err(TomlFileError::Read {
                path: path.to_path_buf(),
                cause,
            }),
        }
    }

    /// Like [`TomlFile::open`], but a file that is not TOML is started afresh, with a warning
    /// in the log: for files whose new contents matter more than a broken old one (a
    /// calibration just made, a look just composed).
    pub fn open_or_replace(path: &Path, header: &str) -> Result<TomlFile, TomlFileError> {
        match TomlFile::open(path, header) {
            Err(error @ TomlFileError::Parse(_)) => {
                tracing::warn!(%error, "the file is not TOML; replacing it");
                Ok(TomlFile::fresh(path, header))
            }
            other => other,
        }
    }

    /// The file at `path`, which must exist.
    pub fn read(path: &Path) -> Result<TomlFile, TomlFileError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| TomlFileError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        TomlFile::parse(path, &text)
    }

    /// A new file for `path` that starts with `header` (comment or blank lines), whatever is
    /// there now.
    pub fn fresh(path: &Path, header: &str) -> TomlFile {
        debug_assert!(
            header
                .lines()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')),
            "a header is comment lines: {header:?}"
        );
        let mut doc = DocumentMut::new();
        doc.set_trailing(header);
        TomlFile {
            path: path.to_path_buf(),
            doc,
            crlf: false,
        }
    }

    /// `text`, the contents of the file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<TomlFile, TomlFileError> {
        let doc = text.parse::<DocumentMut>().map_err(|e| {
            let message = e.message().trim().replace('\n', "; ");
            TomlFileError::Parse(Located::at(
                &path.display().to_string(),
                text,
                e.span().map_or(0, |s| s.start),
                format!("not valid TOML: {message}"),
                None,
            ))
        })?;
        let crlf =
            text.contains("\r\n") && text.matches('\n').count() == text.matches("\r\n").count();
        Ok(TomlFile {
            path: path.to_path_buf(),
            doc,
            crlf,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the whole file hold `value`, a struct or map: see the module documentation for
    /// what is kept.
    pub fn set<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), TomlFileError> {
        let new = self.to_table(value)?;
        let root = self.doc.as_table_mut();
        let before: HashSet<String> = root.iter().map(|(k, _)| k.to_string()).collect();
        merge_tables(root, new);
        let added: Vec<String> = root
            .iter()
            .filter(|(k, item)| item.is_value() && !before.contains(*k))
            .map(|(k, _)| k.to_string())
            .collect();
        settle(&mut self.doc, &added);
        Ok(())
    }

    /// Makes the top-level table `key` hold `value`, a struct or map, leaving the rest of the
    /// file alone; the table is added at the end when the file has none. Fails when `key`
    /// holds something other than a table.
    pub fn set_table<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), TomlFileError> {
        let new = self.to_table(value)?;
        let explicit = !new.is_implicit();
        let root = self.doc.as_table_mut();
        match root.get_mut(key) {
            None => {
                let mut item = Item::Table(new);
                mark_added(&mut item);
                root.insert(key, item);
            }
            Some(Item::Table(old)) => {
                merge_tables(old, new);
                if explicit {
                    old.set_implicit(false);
                }
            }
            Some(Item::Value(Value::InlineTable(old))) => merge_tables(old, new),
            Some(_) => {
                return Err(TomlFileError::NotATable {
                    path: self.path.clone(),
                    key: key.to_string(),
                })
            }
        }
        settle(&mut self.doc, &[]);
        Ok(())
    }

    /// Sets the key `key` of the top-level table `table` to `value` (`None` removes it), leaving
    /// every other key, comment and table as written; the table is added at the end when the
    /// file has none. Fails when `table` holds something other than a table.
    pub fn set_key<T: Serialize + ?Sized>(
        &mut self,
        table: &str,
        key: &str,
        value: Option<&T>,
    ) -> Result<(), TomlFileError> {
        let value = match value {
            Some(v) => Some(
                toml_edit::ser::to_document(&std::collections::BTreeMap::from([(key, v)]))
                    .map_err(|cause| TomlFileError::Serialize {
                        path: self.path.clone(),
                        cause,
                    })?
                    .as_table()
                    .get(key)
                    .cloned()
                    .unwrap_or_default(),
            ),
            None => None,
        };
        let root = self.doc.as_table_mut();
        if root.get(table).is_none() {
            if value.is_none() {
                return Ok(());
            }
            let mut item = Item::Table(Table::new());
            mark_added(&mut item);
            root.insert(table, item);
        }
        let Some(t) = root.get_mut(table).and_then(Item::as_table_like_mut) else {
            return Err(TomlFileError::NotATable {
                path: self.path.clone(),
                key: table.to_string(),
            });
        };
        match value {
            Some(v) => match t.get_mut(key) {
                // The value changes where it stands: its comments and spacing stay.
                Some(Item::Value(old)) => {
                    if let Item::Value(mut new) = v {
                        *new.decor_mut() = old.decor().clone();
                        *old = new;
                    }
                }
                _ => {
                    t.insert(key, v);
                }
            },
            None => {
                t.remove(key);
            }
        }
        settle(&mut self.doc, &[]);
        Ok(())
    }

    /// The file's text as [`TomlFile::write`] writes it.
    pub fn text(&self) -> String {
        let text = self.doc.to_string();
        if self.crlf {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text
        }
    }

    /// Writes the file atomically (creating its folder): a reader sees the old file or the new
    /// one, never a mix.
    pub fn write(&self) -> Result<(), TomlFileError> {
        crate::fsutil::write_atomic(&self.path, self.text().as_bytes()).map_err(|cause| {
            TomlFileError::Write {
                path: self.path.clone(),
                cause,
            }
        })
    }

    /// `value` as a table laid out for a file.
    fn to_table<T: Serialize + ?Sized>(&self, value: &T) -> Result<Table, TomlFileError> {
        let fail = |cause| TomlFileError::Serialize {
            path: self.path.clone(),
            cause,
        };
        match value.serialize(toml_edit::ser::ValueSerializer::new()) {
            Ok(Value::InlineTable(t)) => Ok(table_of(t)),
            Ok(other) => Err(fail(toml_edit::ser::Error::Custom(format!(
                "{} is not a table",
                other.type_name()
            )))),
            Err(cause) => Err(fail(cause)),
        }
    }
}

/// Merges `value` into the file at `path` (or a new file starting with `header`) and writes it
/// atomically: [`TomlFile::open`], [`TomlFile::set`], [`TomlFile::write`].
pub fn save<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
    header: &str,
) -> Result<(), TomlFileError> {
    let mut file = TomlFile::open(path, header)?;
    file.set(value)?;
    file.write()
}

/// The text of a new file holding `value`, starting with `header`: what [`save`] writes when
/// the file does not exist.
pub fn to_string<T: Serialize + ?Sized>(value: &T, header: &str) -> Result<String, TomlFileError> {
    let mut file = TomlFile::fresh(Path::new("(new file)"), header);
    file.set(value)?;
    Ok(file.text())
}

/// An inline table from the serializer laid out as a file's table: tables as `[name]`
/// sections, lists of tables as `[[name]]`. A table that holds only tables gets no header of
/// its own; an empty one keeps it (an empty `[smoothing.groups]` means no groups).
fn table_of(inline: InlineTable) -> Table {
    let mut table = Table::new();
    for (key, value) in inline {
        table.insert(&key, item_of(value));
    }
    let only_tables = table
        .iter()
        .all(|(_, item)| item.is_table() || item.is_array_of_tables());
    table.set_implicit(!table.is_empty() && only_tables);
    table
}

/// A value from the serializer as an item of a file's table.
fn item_of(value: Value) -> Item {
    match value {
        Value::InlineTable(t) => Item::Table(table_of(t)),
        Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_inline_table) => {
            let mut tables = ArrayOfTables::new();
            for v in a {
                if let Value::InlineTable(t) = v {
                    tables.push(table_of(t));
                }
            }
            Item::ArrayOfTables(tables)
        }
        v => Item::Value(v),
    }
}

/// Merges table `new` into `old` (a `[table]`, a dotted or an inline table, which stays so):
/// keys `new` lacks are removed, the others merged in place, new keys added at the end.
fn merge_tables(old: &mut dyn TableLike, new: Table) {
    let gone: Vec<String> = old
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !new.contains_key(k))
        .collect();
    for key in gone {
        old.remove(&key);
    }
    for (key, mut item) in new {
        match old.get_mut(&key) {
            Some(slot) => merge_item(slot, item),
            None => {
                // An inline table turns the item into a value itself.
                mark_added(&mut item);
                old.insert(&key, item);
            }
        }
    }
}

/// Merges `new` into `old`, keeping `old`'s form and decoration where the kinds agree, else
/// replacing it.
fn merge_item(old: &mut Item, new: Item) {
    match (old, new) {
        (Item::Table(o), Item::Table(n)) => {
            let explicit = !n.is_implicit();
            merge_tables(o, n);
            if explicit {
                o.set_implicit(false);
            }
        }
        (Item::Value(Value::InlineTable(o)), Item::Table(n)) => merge_tables(o, n),
        (Item::ArrayOfTables(o), Item::ArrayOfTables(n)) => merge_arrays_of_tables(o, n),
        (Item::Value(Value::Array(o)), Item::ArrayOfTables(n)) => merge_arrays(o, n.into_array()),
        (Item::Value(o), Item::Value(n)) => merge_values(o, n),
        (old, mut new) => {
            mark_added(&mut new);
            *old = new;
        }
    }
}

/// Merges `[[name]]` tables by position: the first with the first, and so on; extra old ones
/// are removed, extra new ones added after the last.
fn merge_arrays_of_tables(old: &mut ArrayOfTables, new: ArrayOfTables) {
    let new: Vec<Table> = new.into_iter().collect();
    while old.len() > new.len() {
        old.remove(old.len() - 1);
    }
    for (i, n) in new.into_iter().enumerate() {
        match old.get_mut(i) {
            Some(o) => {
                let explicit = !n.is_implicit();
                merge_tables(o, n);
                if explicit {
                    o.set_implicit(false);
                }
            }
            None => {
                let mut item = Item::Table(n);
                mark_added(&mut item);
                if let Item::Table(t) = item {
                    old.push(t);
                }
            }
        }
    }
}

/// Merges arrays element by element, so each element keeps its place on its line.
fn merge_arrays(old: &mut Array, new: Array) {
    let new: Vec<Value> = new.into_iter().collect();
    while old.len() > new.len() {
        old.remove(old.len() - 1);
    }
    for (i, n) in new.into_iter().enumerate() {
        match old.get_mut(i) {
            Some(o) => merge_values(o, n),
            None => old.push(n),
        }
    }
}

/// Merges value `new` into `old`: tables and arrays inside, a scalar only when it differs,
/// keeping the comment and spacing around it.
fn merge_values(old: &mut Value, new: Value) {
    match (old, new) {
        (Value::InlineTable(o), Value::InlineTable(n)) => merge_tables(o, n.into_table()),
        (Value::Array(o), Value::Array(n)) => merge_arrays(o, n),
        (o, n) if same(o, &n) => {}
        (o, n) => {
            let decor = o.decor().clone();
            *o = n;
            *o.decor_mut() = decor;
        }
    }
}

/// Whether scalar `old` as written already holds `new`'s value (`0.50` for `0.5`, `2` for
/// `2.0`: a float setting reads an integer).
fn same(old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::String(a), Value::String(b)) => a.value() == b.value(),
        (Value::Integer(a), Value::Integer(b)) => a.value() == b.value(),
        (Value::Float(a), Value::Float(b)) => {
            let (a, b) = (*a.value(), *b.value());
            (a == b && a.is_sign_negative() == b.is_sign_negative()) || (a.is_nan() && b.is_nan())
        }
        (Value::Integer(a), Value::Float(b)) => *a.value() as f64 == *b.value(),
        (Value::Boolean(a), Value::Boolean(b)) => a.value() == b.value(),
        (Value::Datetime(a), Value::Datetime(b)) => a.value() == b.value(),
        _ => false,
    }
}

/// Marks the tables in `item` as added by the merge, for [`settle`].
fn mark_added(item: &mut Item) {
    match item {
        Item::Table(t) => mark_table(t),
        Item::ArrayOfTables(a) => a.iter_mut().for_each(mark_table),
        _ => {}
    }
}

fn mark_table(table: &mut Table) {
    table.set_position(ADDED);
    for (_, item) in table.iter_mut() {
        mark_added(item);
    }
}

/// Every table of `table` that gets a `[header]` or holds values, in the order toml_edit visits
/// them when it writes a document (itself first, then each child table depth first); the flag
/// says whether it is an element of an array of tables.
fn walk(table: &mut Table, in_array: bool, f: &mut dyn FnMut(&mut Table, bool)) {
    if !table.is_dotted() {
        f(table, in_array);
    }
    for (_, item) in table.iter_mut() {
        match item {
            Item::Table(t) => walk(t, false, f),
            Item::ArrayOfTables(a) => a.iter_mut().for_each(|t| walk(t, true, f)),
            _ => {}
        }
    }
}

/// One table as [`settle`] sees it.
struct Seen {
    /// The position it is written at (toml_edit writes tables sorted by it, a table without one
    /// right after the one visited before).
    at: usize,
    /// Whether the merge added it.
    added: bool,
    /// Whether anything of it is written: a header, or (the root) old values.
    drawn: bool,
}

/// Places the tables the merge added (each right after the table visited before it, as
/// toml_edit places a table without a position) and moves the text after the last key of the
/// file (closing comments, or the header of a new file) in front of the first thing added
/// after all that was there: a new table, or, in a file with no keys yet, the first new key.
/// `added_root_values` are the top-level keys with plain values the merge added.
fn settle(doc: &mut DocumentMut, added_root_values: &[String]) {
    let mut seen = Vec::new();
    let mut last = 0;
    walk(doc.as_table_mut(), false, &mut |t, in_array| {
        let root = seen.is_empty();
        let added = t.position() == Some(ADDED);
        match t.position() {
            Some(ADDED) => t.set_position(last),
            Some(p) => last = p,
            None => {}
        }
        let drawn = if root {
            t.get_values()
                .iter()
                .any(|(path, _)| !added_root_values.iter().any(|k| k == path[0].get()))
        } else {
            in_array || !(t.is_implicit() && t.get_values().is_empty())
        };
        seen.push(Seen {
            at: last,
            added,
            drawn,
        });
    });

    let trailing = doc.trailing().as_str().unwrap_or("").to_string();
    if trailing.is_empty() {
        return;
    }
    let mut order: Vec<usize> = (0..seen.len()).collect();
    order.sort_by_key(|&i| seen[i].at);
    let old_end = order.iter().rposition(|&i| seen[i].drawn && !seen[i].added);
    let first_added_table = |from: usize| {
        order[from..]
            .iter()
            .copied()
            .find(|&i| seen[i].added && seen[i].drawn)
    };
    let mut lead = if trailing.trim().is_empty() {
        String::new()
    } else {
        trailing
    };
    if !lead.is_empty() && !lead.ends_with('\n') {
        lead.push('\n');
    }
    match old_end {
        Some(end) => {
            let Some(target) = first_added_table(end + 1) else {
                return;
            };
            if !lead.ends_with("\n\n") {
                lead.push('\n');
            }
            set_table_prefix(doc, target, lead);
        }
        None => {
            if let Some(key) = added_root_values.first() {
                if let Some(mut key) = doc.as_table_mut().key_mut(key) {
                    key.leaf_decor_mut().set_prefix(lead);
                }
            } else if let Some(target) = first_added_table(0) {
                if !lead.is_empty() && !lead.ends_with("\n\n") {
                    lead.push('\n');
                }
                set_table_prefix(doc, target, lead);
            } else {
                return;
            }
        }
    }
    doc.set_trailing("");
}

/// Sets the decoration before the header of the `index`th table [`walk`] visits.
fn set_table_prefix(doc: &mut DocumentMut, index: usize, prefix: String) {
    let mut i = 0;
    let mut prefix = Some(prefix);
    walk(doc.as_table_mut(), false, &mut |t, _| {
        if i == index {
            if let Some(p) = prefix.take() {
                t.decor_mut().set_prefix(p);
            }
        }
        i += 1;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Plugin {
        name: String,
        token: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Channel {
        min: f32,
        max: f32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Sample {
        version: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        weights: Vec<f32>,
        #[serde(default)]
        channels: std::collections::BTreeMap<String, Channel>,
        #[serde(default)]
        plugin: Vec<Plugin>,
    }

    fn sample() -> Sample {
        Sample {
            version: 1,
            name: Some("alice".into()),
            weights: vec![0.5, 0.25],
            channels: [
                (
                    "jawOpen".to_string(),
                    Channel {
                        min: 0.125,
                        max: 0.75,
                    },
                ),
                ("mouthClose".to_string(), Channel { min: 0.0, max: 0.5 }),
            ]
            .into(),
            plugin: vec![
                Plugin {
                    name: "a".into(),
                    token: "1".into(),
                },
                Plugin {
                    name: "b".into(),
                    token: "2".into(),
                },
            ],
        }
    }

    const WRITTEN: &str = "\
# My own notes.
version = 1 # do not touch
name   =   \"alice\"
weights = [
    # left
    0.50,
    # right
    0.25,
]

# The jaw, by hand.
[channels.jawOpen]
min = 0.125
max = 0.75 # wide

[channels.mouthClose]
min = 0.0
max = 0.5

# The first plugin.
[[plugin]]
name = \"a\"
token = \"1\"

[[plugin]]
name = \"b\" # the second
token = \"2\"
# The end.
";

    fn merged(text: &str, value: &Sample) -> String {
        let mut file = TomlFile::parse(Path::new("t.toml"), text).unwrap();
        file.set(value).unwrap();
        let out = file.text();
        assert_eq!(
            &toml::from_str::<Sample>(&out).unwrap(),
            value,
            "read back:\n{out}"
        );
        out
    }

    #[test]
    fn an_unchanged_value_leaves_the_file_as_written() {
        assert_eq!(merged(WRITTEN, &sample()), WRITTEN);
    }

    #[test]
    fn a_changed_value_keeps_the_comments_around_it() {
        let mut value = sample();
        value.version = 2;
        value.weights[1] = 0.5;
        value.channels.get_mut("jawOpen").unwrap().max = 0.875;
        value.plugin[1].token = "3".into();
        let out = merged(WRITTEN, &value);
        let expected = WRITTEN
            .replace("version = 1 #", "version = 2 #")
            .replace("    0.25,", "    0.5,")
            .replace("max = 0.75 # wide", "max = 0.875 # wide")
            .replace("token = \"2\"", "token = \"3\"");
        assert_eq!(out, expected);
    }

    #[test]
    fn removed_keys_go_and_new_keys_come_at_the_end_of_their_table() {
        let mut value = sample();
        value.name = None;
        value.weights.pop();
        value.channels.remove("mouthClose");
        value.channels.insert(
            "browInnerUp".into(),
            Channel {
                min: 0.25,
                max: 1.0,
            },
        );
        value.plugin.remove(0);
        let out = merged(WRITTEN, &value);
        assert!(!out.contains("name   ="), "{out}");
        assert!(!out.contains("mouthClose"), "{out}");
        // A comment on the line before an element goes with it.
        assert!(
            out.contains("weights = [\n    # left\n    0.50,\n]\n"),
            "{out}"
        );
        // The jaw keeps its comment; the new channel follows the last channel.
        assert!(
            out.contains("# The jaw, by hand.\n[channels.jawOpen]\nmin = 0.125\nmax = 0.75 # wide\n\n[channels.browInnerUp]\nmin = 0.25\nmax = 1.0\n"),
            "{out}"
        );
        // Arrays of tables pair by position: the first keeps its comment, with b's values.
        assert!(
            out.contains(
                "# The first plugin.\n[[plugin]]\nname = \"b\"\ntoken = \"2\"\n# The end.\n"
            ),
            "{out}"
        );
        assert_eq!(out.matches("[[plugin]]").count(), 1, "{out}");

        // A new entry goes after the last one, before the closing comment... of that entry.
        let mut more = sample();
        more.plugin.push(Plugin {
            name: "c".into(),
            token: "4".into(),
        });
        let out = merged(WRITTEN, &more);
        assert!(
            out.ends_with("name = \"b\" # the second\ntoken = \"2\"\n# The end.\n\n[[plugin]]\nname = \"c\"\ntoken = \"4\"\n"),
            "{out}"
        );
    }

    #[test]
    fn a_new_file_starts_with_its_header_and_reads_back() {
        let header = "# A header.\n# Two lines.\n";
        let text = to_string(&sample(), header).unwrap();
        assert_eq!(
            text,
            "# A header.\n# Two lines.\nversion = 1\nname = \"alice\"\nweights = [0.5, 0.25]\n\n\
             [channels.jawOpen]\nmin = 0.125\nmax = 0.75\n\n[channels.mouthClose]\nmin = 0.0\nmax = 0.5\n\n\
             [[plugin]]\nname = \"a\"\ntoken = \"1\"\n\n[[plugin]]\nname = \"b\"\ntoken = \"2\"\n"
        );
        assert_eq!(toml::from_str::<Sample>(&text).unwrap(), sample());
        // Merging into that text changes nothing; a header alone takes the first table after it.
        assert_eq!(merged(&text, &sample()), text);
        let mut tables_only = BTreeTables::default();
        tables_only.a.insert("x".into(), 1);
        let text = to_string(&tables_only, header).unwrap();
        assert_eq!(text, "# A header.\n# Two lines.\n\n[a]\nx = 1\n");
    }

    #[derive(Default, Serialize)]
    struct BTreeTables {
        a: std::collections::BTreeMap<String, i64>,
    }

    #[test]
    fn a_table_is_merged_alone_in_the_form_it_is_written() {
        #[derive(Serialize)]
        struct Camera {
            zoom: F32,
            fov: F32,
        }
        let camera = Camera {
            zoom: F32(1.1),
            fov: F32(30.0),
        };
        let set = |text: &str| {
            let mut file = TomlFile::parse(Path::new("c.toml"), text)?;
            file.set_table("camera", &camera)?;
            Ok::<_, TomlFileError>(file.text())
        };
        assert_eq!(
            set("camera = { zoom = 2, other = 1 } # inline\n[window]\ntitle = \"x\"\n").unwrap(),
            "camera = { zoom = 1.1, fov = 30.0 } # inline\n[window]\ntitle = \"x\"\n"
        );
        assert_eq!(
            set("camera.zoom = 1.1 # dotted\nvsync = true\n").unwrap(),
            "camera.zoom = 1.1 # dotted\ncamera.fov = 30.0\nvsync = true\n"
        );
        // Integers read as floats are kept as written.
        assert_eq!(
            set("[camera]\nzoom = 1.1\nfov = 30\n").unwrap(),
            "[camera]\nzoom = 1.1\nfov = 30\n"
        );
        // A missing table is added after everything, closing comments included.
        assert_eq!(
            set("[window]\ntitle = \"x\"\n# last words").unwrap(),
            "[window]\ntitle = \"x\"\n# last words\n\n[camera]\nzoom = 1.1\nfov = 30.0\n"
        );
        assert_eq!(
            set("a = 1\r\n\r\n[b]\r\nc = 2\r\n").unwrap(),
            "a = 1\r\n\r\n[b]\r\nc = 2\r\n\r\n[camera]\r\nzoom = 1.1\r\nfov = 30.0\r\n"
        );
        for broken in ["camera = 2.0\n", "[[camera]]\nzoom = 1.0\n"] {
            let err = set(broken).unwrap_err();
            assert!(matches!(err, TomlFileError::NotATable { .. }), "{err}");
            assert_eq!(
                err.to_string(),
                "c.toml: `camera` is not a table, so it was left as it was"
            );
        }
        let err = set("a = 1\n[camera\n").unwrap_err().to_string();
        assert!(err.starts_with("c.toml:2:8: not valid TOML: "), "{err}");
    }

    #[test]
    fn f32_values_are_written_short_and_read_back_exactly() {
        #[derive(Serialize)]
        struct V {
            a: F32,
            b: Vec<F32>,
            c: f32,
        }
        let text = to_string(
            &V {
                a: F32(0.12),
                b: vec![F32(-1.234_567_9), F32(3.0), F32(1e-7)],
                c: 0.12,
            },
            "",
        )
        .unwrap();
        assert!(
            text.starts_with("a = 0.12\nb = [-1.2345679, 3.0, 0.0000001]\n"),
            "{text}"
        );
        assert!(
            !text.starts_with("c = 0.12\n"),
            "a plain f32 is long: {text}"
        );
        let read: toml::Value = toml::from_str(&text).unwrap();
        let b = read["b"].as_array().unwrap();
        assert_eq!(b[0].as_float().unwrap() as f32, -1.234_567_9);
        assert_eq!(b[2].as_float().unwrap() as f32, 1e-7);
        let mut ordered = Ordered(vec![("z", 1), ("a", 2)]);
        assert_eq!(to_string(&ordered, "").unwrap(), "z = 1\na = 2\n");
        ordered.0.clear();
        assert!(ordered.is_empty());
    }

    #[test]
    fn saving_writes_atomically_and_refuses_what_is_not_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("s.toml");
        save(&path, &sample(), "# Made by a test.\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# Made by a test.\nversion = 1\n"),
            "{text}"
        );
        // A comment added by hand survives the next save.
        std::fs::write(&path, text.replace("version = 1\n", "version = 1 # mine\n")).unwrap();
        let mut value = sample();
        value.version = 3;
        save(&path, &value, "# Made by a test.\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("version = 3 # mine\n"), "{text}");
        assert_eq!(toml::from_str::<Sample>(&text).unwrap(), value);

        std::fs::write(&path, "version = [1\n").unwrap();
        let err = save(&path, &value, "").unwrap_err();
        assert!(matches!(err, TomlFileError::Parse(_)), "{err}");
        assert!(
            err.to_string()
                .ends_with("s.toml:2:1: not valid TOML: invalid array; expected `]`"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "version = [1\n");
        let err = TomlFile::read(&dir.path().join("missing.toml")).unwrap_err();
        assert!(matches!(err, TomlFileError::Read { .. }), "{err}");
        assert!(err.to_string().contains("missing.toml"), "{err}");
        let err = save(&dir.path().join("n.toml"), &1, "").unwrap_err();
        assert!(matches!(err, TomlFileError::Serialize { .. }), "{err}");
    }

    #[test]
    fn one_key_is_set_or_removed_and_the_rest_stays_as_written() {
        let text = "# my setup\n[window]\ntitle = \"x\" # keep me\n\n[ingest]\n# the phone\nphone = \"10.0.0.2\"   # my iPhone\nlisten = [\"0.0.0.0:39539\"]\n";
        let mut file = TomlFile::parse(Path::new("f.toml"), text).unwrap();
        file.set_key("ingest", "phone", Some("192.168.1.23"))
            .unwrap();
        let out = file.text();
        assert!(
            out.contains("# the phone\nphone = \"192.168.1.23\"   # my iPhone\n"),
            "{out}"
        );
        assert!(out.contains("title = \"x\" # keep me") && out.starts_with("# my setup"));
        assert!(out.contains("listen = [\"0.0.0.0:39539\"]"), "{out}");
        file.set_key::<str>("ingest", "phone", None).unwrap();
        let out = file.text();
        assert!(!out.contains("phone ="), "{out}");
        assert!(out.contains("listen ="), "{out}");
        // A missing table is added; removing from a missing table changes nothing.
        let mut file = TomlFile::parse(Path::new("f.toml"), "[window]\n").unwrap();
        file.set_key::<str>("ingest", "phone", None).unwrap();
        assert_eq!(file.text(), "[window]\n");
        file.set_key("ingest", "phone", Some("::1")).unwrap();
        let parsed: toml::Table = toml::from_str(&file.text()).unwrap();
        assert_eq!(parsed["ingest"]["phone"].as_str(), Some("::1"));
        // A key that is not a table is refused.
        let mut file = TomlFile::parse(Path::new("f.toml"), "ingest = 3\n").unwrap();
        assert!(matches!(
            file.set_key("ingest", "phone", Some("::1")),
            Err(TomlFileError::NotATable { .. })
        ));
    }
}
