//! Units on the command line: durations with a unit (`10ms`), seconds (`-d 5`, `-d 500ms`) and
//! intervals (`-I 1s`, `-I 500`: milliseconds, as perf stat's), and a sampling clock's period.
//! Shared by the clap definitions, the plans and the renderers, so none imports another for
//! them.

/// The sampling period of `hz` samples per second of a clock event (cpu-clock counts
/// nanoseconds): a fixed period, so each sample stands for exactly this much CPU time.
pub fn clock_period_ns(hz: u64) -> u64 {
    1_000_000_000 / hz.max(1)
}

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
        "m" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("'{text}' needs a unit: ns, us, ms, s, m or h")),
    };
    let ns = value * scale;
    if !ns.is_finite() || !(1.0..=1e18).contains(&ns) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(ns as u64)
}

/// Parses `-d`: a number of seconds (`5`, `0.5`) or a duration with a unit (`500ms`, `2s`).
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    if text.trim().ends_with(|c: char| c.is_ascii_alphabetic()) {
        return parse_duration_ns(text).map(std::time::Duration::from_nanos);
    }
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds, nor a duration like 500ms"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("'{text}' is not a positive number of seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Parses `-I`: a duration with a unit (`1s`, `500ms`) or a bare number of milliseconds (as
/// perf stat's `-I`), at least 10 ms (perf's floor: shorter intervals cost more than they show).
pub fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let ns = match t.parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms <= 1e12 => (ms.max(0.0) * 1e6) as u64,
        Ok(_) => return Err(format!("'{text}' is out of range")),
        Err(_) => parse_duration_ns(t)
            .map_err(|_| format!("'{text}' is not an interval like 1s, 500ms or 100 (ms)"))?,
    };
    if ns < 10_000_000 {
        return Err(format!("-I {text}: the interval must be at least 10 ms"));
    }
    Ok(std::time::Duration::from_nanos(ns))
}

/// Parses `tracer stat -I`: a bare number of milliseconds (perf stat's), or a duration with a
/// unit (`1s`, `500ms`), in whole milliseconds; the stat plan checks the 10 ms floor.
pub fn parse_millis(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.parse::<u64>() {
        Ok(ms) => Ok(ms),
        Err(_) => parse_duration_ns(t)
            .map(|ns| ns / 1_000_000)
            .map_err(|_| format!("'{text}' is not an interval like 100 (ms), 1s or 500ms")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration_ns("1.5us"), Ok(1_500));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("1.5m"), Ok(90_000_000_000));
        assert_eq!(parse_duration_ns("2h"), Ok(7_200_000_000_000));
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
        assert_eq!(
            parse_seconds("500ms").unwrap(),
            std::time::Duration::from_millis(500)
        );
        assert_eq!(
            parse_seconds("2s").unwrap(),
            std::time::Duration::from_secs(2)
        );
    }

    #[test]
    fn stat_intervals_are_whole_milliseconds() {
        assert_eq!(parse_millis("100"), Ok(100));
        assert_eq!(
            parse_millis("0"),
            Ok(0),
            "the plan refuses it, with its message"
        );
        assert_eq!(parse_millis("1s"), Ok(1000));
        assert_eq!(parse_millis("250ms"), Ok(250));
        assert!(parse_millis("soon").is_err());
    }

    #[test]
    fn intervals_are_milliseconds_unless_they_say() {
        let ms = |n| Ok(std::time::Duration::from_millis(n));
        assert_eq!(parse_interval("1s"), ms(1000));
        assert_eq!(parse_interval("500ms"), ms(500));
        assert_eq!(parse_interval("100"), ms(100));
        assert_eq!(parse_interval("1000"), ms(1000));
        assert_eq!(parse_interval("0.5s"), ms(500));
        assert_eq!(
            parse_interval("1"),
            Err("-I 1: the interval must be at least 10 ms".into())
        );
        assert_eq!(
            parse_interval("0"),
            Err("-I 0: the interval must be at least 10 ms".into())
        );
        assert!(parse_interval("soon").is_err());
    }
}
