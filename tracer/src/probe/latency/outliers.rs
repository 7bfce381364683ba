//! What `tracer latency`'s outliers show of each measured function's start: the struct
//! members its start reads, the strings its end reads from the start's pointers, and which
//! of the start's words the outlier's six argument words carry (`LatOutlier`, one per
//! function).

use tracer_common::{str_from, word, Event, LatOutlier, FIELD_READS, LAT_WORD_FIELD};

use crate::probe::values::{Place, Values};
use crate::Error;

/// The start's words an outlier carries, in its argument words' order: the argument
/// registers as they are, when the start reads no member; else each place a value is printed
/// from (an argument, or a member read when the call began), at most six.
pub fn places(values: &Values) -> Result<Vec<Place>, Error> {
    if values.member_reads() == 0 {
        return Ok((0..word::ARGS).map(Place::Register).collect());
    }
    let mut places: Vec<Place> = Vec::new();
    for column in &values.columns {
        if !places.contains(&column.place) {
            places.push(column.place);
        }
    }
    if places.len() > word::ARGS {
        return Err(Error::usage(
            format!(
                "{}: an outlier shows at most {} values of a start that reads struct \
                 members ({} given)",
                values.probe(),
                word::ARGS,
                places.len()
            ),
            vec!["leave some out, or show the others with tracer probe".into()],
        ));
    }
    Ok(places)
}

/// The `LAT_OUTLIER` entry of a function whose start `values` describe: its member reads,
/// its strings read from the outlier's words, and those words' places. `strings`: whether
/// outliers read strings (not beside a copy of the user stack).
pub fn configure(values: &Values, strings: bool) -> Result<LatOutlier, Error> {
    let places = places(values)?;
    let mut outlier = LatOutlier::default();
    values.configure(&mut outlier.reads, strings);
    for (j, place) in places.iter().enumerate() {
        outlier.words[j] = match *place {
            Place::Register(n) => n as u8,
            Place::Field(n) => LAT_WORD_FIELD + n as u8,
        };
    }
    for read in outlier.reads.strs.iter_mut() {
        let place = match read.from {
            str_from::ARG => Place::Register(read.at as usize),
            str_from::FIELD => Place::Field(read.at as usize),
            _ => continue,
        };
        let j = places
            .iter()
            .position(|p| *p == place)
            .unwrap_or_else(|| unreachable!("a string read is of a printed value's place"));
        read.from = str_from::ARG;
        read.at = (word::LAT_ARG0 + j) as u32;
    }
    if outlier.reads.strlen == 0 {
        outlier.reads.strlen = tracer_common::STRLEN_DEFAULT;
    }
    Ok(outlier)
}

/// An outlier's start words (`word::LAT_ARG0..`) put back where the start's values decode
/// them from: argument registers at `word::ARG0..`, members in `fields` (a failed read's bit
/// in `field_faults`, as the start set it).
pub fn start_event(values: &Values, e: &Event) -> Event {
    let mut call = *e;
    call.data = [0; tracer_common::DATA_WORDS];
    call.fields = [0; FIELD_READS];
    call.field_faults = match values.member_reads() {
        0 => 0,
        _ => e.field_faults & ((1 << FIELD_READS) - 1),
    };
    let places = places(values).unwrap_or_default();
    for (j, place) in places.into_iter().enumerate() {
        let w = e.data[word::LAT_ARG0 + j];
        match place {
            Place::Register(n) => call.data[word::ARG0 + n] = w,
            Place::Field(n) => call.fields[n] = w,
        }
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::params::{Kind, Member, Param, Prototype};
    use crate::probe::values::Memory;

    /// `f(struct s *a, long b)`, whose `a->pos` is a long at 8 and `a->name` a string at 16.
    fn values(selection: &[&str]) -> Values {
        let param = |name: &str, kind| Param {
            name: name.into(),
            kind,
        };
        let pointer = Kind::Pointer {
            pointee: "struct s".into(),
        };
        let proto = Prototype {
            params: vec![param("a", pointer), param("b", Kind::Signed(8))],
            ret: Kind::Signed(8),
        };
        let mut lookup = |arg: usize, path: &[&str]| -> Result<Member, Error> {
            Ok(match path {
                ["pos"] => Member::at(arg, 8, Kind::Signed(8)),
                _ => Member::at(arg, 16, Kind::Str),
            })
        };
        let selection: Vec<String> = selection.iter().map(|s| s.to_string()).collect();
        Values::new(
            "f",
            Some(&proto),
            &selection,
            Memory::ByAddress,
            &mut lookup,
        )
        .unwrap()
    }

    /// `f(a->pos, b, str(a->name))`: the two members and `b` are the outlier's three words;
    /// the string is read from the third.
    #[test]
    fn members_take_the_words_they_are_printed_from() {
        let values = values(&["a->pos", "b", "str(a->name)"]);
        assert_eq!(
            places(&values).unwrap(),
            [Place::Field(0), Place::Register(1), Place::Field(1)]
        );
        let outlier = configure(&values, true).unwrap();
        assert_eq!(
            &outlier.words[..3],
            &[LAT_WORD_FIELD, 1, LAT_WORD_FIELD + 1]
        );
        assert_eq!(outlier.reads.strs[0].from, str_from::ARG);
        assert_eq!(outlier.reads.strs[0].at, (word::LAT_ARG0 + 2) as u32);
        assert_eq!(outlier.reads.fields[0].offset, 8);
        let mut e = Event::from_bytes(&[0; Event::SIZE]).expect("size");
        e.data[word::LAT_ARG0..word::LAT_ARG0 + 3].copy_from_slice(&[4096, 7, 0xffff_8000]);
        e.field_faults = 1 << 16 | 2;
        let call = start_event(&values, &e);
        assert_eq!((call.fields[0], call.fields[1]), (4096, 0xffff_8000));
        assert_eq!(call.data[word::ARG0 + 1], 7);
        assert_eq!(
            call.field_faults, 2,
            "the member faults, not the stack span"
        );
    }

    /// Without members the registers stay where they are, as before members were read.
    #[test]
    fn without_members_the_registers_are_the_words() {
        let values = values(&[]);
        let places = places(&values).unwrap();
        assert_eq!(places.len(), word::ARGS);
        assert!((places.iter().enumerate()).all(|(j, p)| *p == Place::Register(j)));
    }

    /// Seven places do not fit the outlier's six words: refused, before anything is attached.
    #[test]
    fn more_than_six_places_are_refused() {
        let seven = [
            "a->pos",
            "b",
            "str(a->name)",
            "arg2",
            "arg3",
            "arg4",
            "arg5",
        ];
        let e = places(&values(&seven)).unwrap_err();
        assert!(crate::describe(&e).contains("at most 6 values"), "{e:?}");
    }
}
