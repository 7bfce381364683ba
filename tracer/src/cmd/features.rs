//! `tracer features`: every feature check, rendered as text or JSON.

use crate::kernel::features::{self, Feature, Status};
use crate::output;
use crate::Error;

pub fn run(json: bool) -> Result<(), Error> {
    let settings = features::settings();
    let results: Vec<(Feature, Status)> = Feature::ALL.iter().map(|&f| (f, f.check())).collect();
    let text = if json {
        output::features::json(&settings, &results)
    } else {
        output::features::text(&settings, &results)
    };
    output::write_stdout(&text)
}
