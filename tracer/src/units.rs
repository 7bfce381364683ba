//! Units on the command line: durations with a unit (`10ms`) and seconds (`-d 5`). Shared by
//! the clap definitions and the plans, so neither imports the other for them.

/// Parses a duration with a unit: `500ns`, `12us`, `10ms`, `1.5s` (nanoseconds).
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration like 10ms"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("'{text}' needs a unit: ns, us, ms or s")),
    };
    let ns = value * scale;
    if !ns.is_finite() || !(1.0..=1e18).contains(&ns) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(ns as u64)
}

/// Parses a duration in seconds (`5`, `0.5`).
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("'{text}' is not a positive number of seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration_ns("1.5us"), Ok(1_500));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert!(parse_duration_ns("10").is_err());
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_duration_ns("0ns").is_err());
    }

    #[test]
    fn seconds() {
        assert_eq!(
            parse_seconds("1.5").unwrap(),
            std::time::Duration::from_millis(1500)
        );
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("x").is_err());
    }
}
