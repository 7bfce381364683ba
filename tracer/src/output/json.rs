//! What every JSON line of every command shares (docs/json.md, the schema in
//! docs/schema/tracer.schema.json): the `type`, the two clocks, one frame shape, typed keys.

use serde::Serialize;

/// The schema's version: 2 since every line has a `type` and a `time_unix_ns`, `args` are
/// typed objects everywhere, and stacks share one frame shape (docs/json.md says what changed).
pub const SCHEMA_VERSION: u32 = 2;

/// A kernel time stamp (CLOCK_MONOTONIC, ns) as wall-clock ns since the epoch, given
/// CLOCK_REALTIME minus CLOCK_MONOTONIC (`session::wall_offset_ns`); `None` when the offset
/// is unknown (a recording made before it was kept).
pub fn unix_ns(time_ns: u64, wall_offset_ns: Option<i64>) -> Option<u64> {
    let wall = i128::from(time_ns) + i128::from(wall_offset_ns?);
    u64::try_from(wall).ok()
}

/// One stack frame, as every command writes it: `tracer probe -s`, `latency -s`, `watch`,
/// `profile -f json`, `report`. `name` is always there (the symbol, `file+0xOFFSET`, or
/// `[unknown]`); the rest is `null` where it is not known (a profile's frame merges the
/// addresses of its function: `addr` is one of them, `offset` is `null`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Frame<'a> {
    /// `"kernel"` or `"user"`.
    pub space: &'static str,
    pub name: String,
    /// The function's symbol (kernel modules as `name [module]`), when one holds the address.
    pub symbol: Option<&'a str>,
    /// The address's offset in `symbol`.
    pub offset: Option<u64>,
    /// In hex (`address`).
    pub addr: Option<String>,
    /// User frames: the path of the mapped file that holds the address.
    pub module: Option<&'a str>,
    /// User frames: the GNU build-id of `module` (hex), to fetch its debug info.
    pub build_id: Option<&'a str>,
    /// Source file and line, when the binary has DWARF.
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

/// An address as JSON writes it: a hex string (`"0xffffffff81a2c3d4"`), as perf and gdb
/// print one. Exact in every reader: a JSON number above 2^53 (every kernel address) is
/// rounded by JavaScript and by jq before 1.7.
pub fn address(addr: u64) -> String {
    format!("{addr:#x}")
}

/// A value rendered as text (a `--count-by` column of a number or an argument) as a typed
/// JSON value: an integer (decimal, or hex as `0x10`) as a number, `true`/`false` as a
/// boolean, anything else (an enum constant) as the string.
pub fn typed_text(text: &str) -> serde_json::Value {
    if let Ok(n) = text.parse::<i64>() {
        return n.into();
    }
    if let Ok(n) = text.parse::<u64>() {
        return n.into();
    }
    if let Some(n) = (text.strip_prefix("0x")).and_then(|h| u64::from_str_radix(h, 16).ok()) {
        return n.into();
    }
    match text {
        "true" => true.into(),
        "false" => false.into(),
        _ => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_is_the_stamp_plus_the_offset() {
        assert_eq!(
            unix_ns(5, Some(1_700_000_000_000_000_000)),
            Some(1_700_000_000_000_000_005)
        );
        assert_eq!(unix_ns(5, None), None);
        assert_eq!(unix_ns(5, Some(-6)), None);
    }

    #[test]
    fn text_keys_become_numbers_where_they_are_numbers() {
        assert_eq!(typed_text("4242"), serde_json::json!(4242));
        assert_eq!(typed_text("-2"), serde_json::json!(-2));
        assert_eq!(
            typed_text("18446744073709551615"),
            serde_json::json!(u64::MAX)
        );
        assert_eq!(typed_text("cat"), serde_json::json!("cat"));
        assert_eq!(typed_text("0x10"), serde_json::json!(16));
        assert_eq!(typed_text("true"), serde_json::json!(true));
        assert_eq!(typed_text("GREEN"), serde_json::json!("GREEN"));
    }
}
