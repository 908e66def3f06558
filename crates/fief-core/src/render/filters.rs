//! Template filters users expect beyond minijinja's own: `to_yaml`, `to_json`, `b64encode`,
//! `b64decode`, `sha256`, `required`, `quote`.
//!
//! In: minijinja values. Out: strings (or the value itself, for `required`). An undefined
//! value (a typo such as `values.replicsa`) is an error in every filter but `required`, as
//! it is everywhere else in a template (strict undefined). Pure.

use base64::Engine;
use minijinja::value::ValueKind;
use minijinja::{Environment, Error, ErrorKind, Value};

/// Add fief's filters to an environment.
pub fn register(env: &mut Environment<'_>) {
    env.add_filter("to_yaml", to_yaml);
    env.add_filter("to_json", to_json);
    env.add_filter("b64encode", b64encode);
    env.add_filter("b64decode", b64decode);
    env.add_filter("sha256", sha256);
    env.add_filter("required", required);
    env.add_filter("quote", quote);
}

fn bad(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, detail.into())
}

/// An undefined value piped into `filter` is the same error as printing it.
fn defined(value: &Value, filter: &str) -> Result<(), Error> {
    if value.is_undefined() {
        Err(Error::new(
            ErrorKind::UndefinedError,
            format!("the `{filter}` filter got an undefined value"),
        ))
    } else {
        Ok(())
    }
}

/// Text of a value: strings as they are, anything else as minijinja prints it.
fn text(value: &Value) -> String {
    match value.as_str() {
        Some(s) => s.to_string(),
        None => value.to_string(),
    }
}

/// YAML of a value, without the trailing newline (combine with `indent`).
fn to_yaml(value: Value) -> Result<String, Error> {
    defined(&value, "to_yaml")?;
    let json = serde_json::to_value(&value).map_err(|e| bad(format!("to_yaml: {e}")))?;
    let out = crate::yaml::to_string(&json).map_err(|e| bad(format!("to_yaml: {e}")))?;
    Ok(out.trim_end_matches('\n').to_string())
}

/// Compact JSON of a value (valid YAML flow style, strings quoted).
fn to_json(value: Value) -> Result<String, Error> {
    defined(&value, "to_json")?;
    if let Some(json) = strings_json(&value) {
        return Ok(json);
    }
    serde_json::to_string(&value).map_err(|e| bad(format!("to_json: {e}")))
}

/// A string or a list of strings (what templates pass to `to_json` most) as the same compact
/// JSON serde writes, without serializing each template value through serde; `None` for
/// anything else.
fn strings_json(value: &Value) -> Option<String> {
    if let Some(s) = value.as_str() {
        return serde_json::to_string(s).ok();
    }
    if value.kind() != ValueKind::Seq {
        return None;
    }
    let mut out = Vec::with_capacity(256);
    out.push(b'[');
    for (i, item) in value.try_iter().ok()?.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, item.as_str()?).ok()?;
    }
    out.push(b']');
    String::from_utf8(out).ok()
}

fn b64encode(value: Value) -> Result<String, Error> {
    defined(&value, "b64encode")?;
    Ok(base64::engine::general_purpose::STANDARD.encode(text(&value)))
}

fn b64decode(value: Value) -> Result<String, Error> {
    defined(&value, "b64decode")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text(&value))
        .map_err(|e| bad(format!("b64decode: {e}")))?;
    String::from_utf8(bytes).map_err(|_| bad("b64decode: the decoded bytes are not UTF-8"))
}

fn sha256(value: Value) -> Result<String, Error> {
    defined(&value, "sha256")?;
    Ok(crate::objects::sha256_hex(text(&value).as_bytes()))
}

/// Fail the render with `message` when the value is undefined, none or an empty string.
fn required(value: Value, message: Option<String>) -> Result<Value, Error> {
    let missing =
        value.is_undefined() || value.is_none() || value.as_str().is_some_and(str::is_empty);
    if missing {
        Err(bad(message.unwrap_or_else(|| {
            "a required value is missing".to_string()
        })))
    } else {
        Ok(value)
    }
}

/// A double-quoted YAML/JSON string of the value's text.
fn quote(value: Value) -> Result<String, Error> {
    defined(&value, "quote")?;
    Ok(serde_json::Value::String(text(&value)).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    fn render(src: &str, ctx: Value) -> Result<String, Error> {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        register(&mut env);
        env.render_str(src, ctx)
    }

    #[test]
    fn b64encode_and_sha256_encode_text() {
        let out = render(
            "{{ 'hello' | b64encode }} {{ 'abc' | sha256 }}",
            context! {},
        )
        .unwrap();
        assert_eq!(
            out,
            "aGVsbG8= ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn to_yaml_and_to_json_serialize_maps() {
        let ctx = context! { v => context! { a => 1, b => vec!["x"] } };
        assert_eq!(
            render("{{ v | to_json }}", ctx.clone()).unwrap(),
            r#"{"a":1,"b":["x"]}"#
        );
        assert_eq!(render("{{ v | to_yaml }}", ctx).unwrap(), "a: 1\nb:\n- x");
    }

    #[test]
    fn to_json_of_strings_is_what_serde_writes() {
        let tricky = vec![
            "a",
            "",
            "q\"uote",
            "back\\slash",
            "new\nline",
            "tab\t",
            "\u{1}",
            "é ☃",
            "</script>",
        ];
        let ctx = context! { list => tricky.clone(), empty => Vec::<String>::new(), s => "x\"y" };
        assert_eq!(
            render("{{ list | to_json }}", ctx.clone()).unwrap(),
            serde_json::to_string(&tricky).unwrap()
        );
        assert_eq!(render("{{ empty | to_json }}", ctx.clone()).unwrap(), "[]");
        assert_eq!(
            render("{{ s | to_json }}", ctx.clone()).unwrap(),
            r#""x\"y""#
        );
        // Lists of other values take the general path.
        assert_eq!(
            render("{{ [1, 'a', none, true] | to_json }}", ctx).unwrap(),
            r#"[1,"a",null,true]"#
        );
    }

    #[test]
    fn required_fails_on_missing_values_with_the_message() {
        let err = render(
            "{{ v.host | required('set values.host') }}",
            context! { v => context! {} },
        )
        .unwrap_err();
        assert!(err.to_string().contains("set values.host"), "{err}");
        assert_eq!(
            render(
                "{{ v.host | required }}",
                context! { v => context! { host => "h" } }
            )
            .unwrap(),
            "h"
        );
    }
}
