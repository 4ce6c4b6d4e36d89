//! The reference of every setting, `docs/configuration.md`, rendered from the settings
//! themselves: the keys and their defaults from the default settings serialized to a tree,
//! what each key does from the [`Section`] table kept beside each section's struct. A test
//! checks that the tree and the tables name the same keys, and that the file is the
//! rendering.

use serde_json::Value;

/// One `[section]` of the settings, as the reference describes it.
pub(super) struct Section {
    /// The section's name, its key in the settings.
    pub(super) name: &'static str,
    /// What the section is for.
    pub(super) about: &'static str,
    /// Each key, dotted below the section for a subsection (`display.coalesce_ms`), and what
    /// it does, in the order the reference lists them.
    pub(super) keys: &'static [(&'static str, &'static str)],
}

/// Why the tables and the serialized defaults disagree, one line per key; empty when they
/// name the same sections and keys.
#[cfg(test)]
pub(super) fn problems(defaults: &Value, sections: &[&Section]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(tree) = defaults.as_object() else {
        return vec!["the settings do not serialize to a table".to_owned()];
    };
    for name in tree.keys() {
        if !sections.iter().any(|section| section.name == name) {
            problems.push(format!("[{name}] has no section in the reference"));
        }
    }
    for section in sections {
        let Some(value) = tree.get(section.name) else {
            problems.push(format!("[{}] is described but is no section", section.name));
            continue;
        };
        let mut keys = Vec::new();
        leaves(value, "", &mut keys);
        for key in &keys {
            if !section.keys.iter().any(|(described, _)| described == key) {
                problems.push(format!("{}.{key} has no description", section.name));
            }
        }
        for (index, (described, about)) in section.keys.iter().enumerate() {
            if !keys.contains(&(*described).to_owned()) {
                problems.push(format!(
                    "{}.{described} is described but is no key",
                    section.name
                ));
            }
            if section.keys[..index]
                .iter()
                .any(|(seen, _)| seen == described)
            {
                problems.push(format!("{}.{described} is described twice", section.name));
            }
            if about.trim().is_empty() || about.contains('|') || about.contains('\n') {
                problems.push(format!(
                    "{}.{described}: a description is one line of text without `|`",
                    section.name
                ));
            }
        }
    }
    problems
}

/// The keys of a section's serialized tree, dotted below it. A table with entries is a
/// subsection; an empty one is a key of its own (a map, such as librdkafka's properties).
#[cfg(test)]
fn leaves(value: &Value, prefix: &str, keys: &mut Vec<String>) {
    let Some(table) = value.as_object() else {
        return;
    };
    for (key, value) in table {
        let dotted = format!("{prefix}{key}");
        match value.as_object() {
            Some(sub) if !sub.is_empty() => leaves(value, &format!("{dotted}."), keys),
            _ => keys.push(dotted),
        }
    }
}

/// The environment variable of `key` in `section`: `ROOM__IM__DISPLAY__COALESCE_MS`.
fn variable(section: &str, key: &str) -> String {
    let path = key.replace('.', "__");
    format!("ROOM__{section}__{path}").to_uppercase()
}

/// A default as the reference shows it.
fn shown(value: &Value) -> String {
    match value {
        Value::Null => "unset".to_owned(),
        Value::String(text) if text.is_empty() => "empty".to_owned(),
        Value::String(text) => format!("`{text}`"),
        Value::Object(_) => "none".to_owned(),
        other => format!("`{other}`"),
    }
}

/// The Markdown of `docs/configuration.md`.
pub(super) fn render(defaults: &Value, sections: &[&Section]) -> String {
    let mut out = String::from(
        "# Configuration\n\
         \n\
         <!-- Generated from the settings in crates/room-node/src/config: do not edit. Run\n\
         \x20    `ROOM_WRITE_DOCS=1 cargo test -p room-node config_doc` to write it again. -->\n\
         \n\
         Settings come in layers: the built-in defaults below, then `configs/room.toml` if it\n\
         exists (relative to the working directory; it ships with the keys documented at their\n\
         defaults), then environment variables, which win. The key `key` of the section\n\
         `[section]` is the variable `ROOM__SECTION__KEY` (`ROOM__HTTP__ADDR=0.0.0.0:8080` sets\n\
         `addr` of `[http]`); a key of a subsection such as `[im.display]` is\n\
         `ROOM__IM__DISPLAY__KEY`. Unknown keys stop the start, and so do values the service\n\
         must not run with, naming the key.\n\
         \n\
         Secrets (`ROOM__AUTH__JWT_SECRET`, `ROOM__RTC__CALLBACK_KEY`, `ROOM__LEASE__REDIS_URL`,\n\
         `ROOM__CLUSTER__INTERNAL_TOKEN`, `ROOM__IM__SECRET_KEY`) are never logged; keep them\n\
         out of the file in production. The log filter is `RUST_LOG` (default\n\
         `info,tower_http=warn`).\n",
    );
    for section in sections {
        out.push_str(&format!(
            "\n## `[{}]`\n\n{}\n\n| variable | default | what |\n|---|---|---|\n",
            section.name, section.about
        ));
        for (key, about) in section.keys {
            let pointer = format!("/{}/{}", section.name, key.replace('.', "/"));
            let value = defaults.pointer(&pointer).unwrap_or(&Value::Null);
            let mut name = variable(section.name, key);
            if value.as_object().is_some_and(|map| map.is_empty()) {
                name.push_str("__<NAME>");
            }
            out.push_str(&format!("| `{name}` | {} | {about} |\n", shown(value)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const HTTP: Section = Section {
        name: "http",
        about: "The listener.",
        keys: &[("addr", "Where it listens.")],
    };
    const IM: Section = Section {
        name: "im",
        about: "IM.",
        keys: &[
            ("secret_key", "The key."),
            ("display.coalesce_ms", "A wait."),
            ("properties", "Any property."),
        ],
    };

    #[test]
    fn keys_and_descriptions_must_match() {
        let defaults = json!({
            "http": {"addr": "127.0.0.1:8080"},
            "im": {"secret_key": null, "display": {"coalesce_ms": 200}, "properties": {}},
        });
        assert!(problems(&defaults, &[&HTTP, &IM]).is_empty());
        let more = json!({
            "http": {"addr": "127.0.0.1:8080", "port": 1},
            "im": {"secret_key": null, "display": {}, "properties": {}},
            "sse": {},
        });
        let found = problems(&more, &[&HTTP, &IM]);
        for expected in [
            "[sse] has no section in the reference",
            "http.port has no description",
            "im.display.coalesce_ms is described but is no key",
        ] {
            assert!(found.iter().any(|p| p == expected), "{expected}: {found:?}");
        }
    }

    #[test]
    fn variables_defaults_and_maps_are_rendered() {
        let defaults = json!({
            "http": {"addr": "127.0.0.1:8080"},
            "im": {"secret_key": null, "display": {"coalesce_ms": 200}, "properties": {}},
        });
        let text = render(&defaults, &[&HTTP, &IM]);
        assert!(text.contains("| `ROOM__HTTP__ADDR` | `127.0.0.1:8080` | Where it listens. |"));
        assert!(text.contains("| `ROOM__IM__SECRET_KEY` | unset | The key. |"));
        assert!(text.contains("| `ROOM__IM__DISPLAY__COALESCE_MS` | `200` | A wait. |"));
        assert!(text.contains("| `ROOM__IM__PROPERTIES__<NAME>` | none | Any property. |"));
    }
}
