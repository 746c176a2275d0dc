//! The line-operation parser and applier: any JSON batch against any original text gives an
//! edit or a refusal, never a panic. Input: `<ops json>\0<original bytes>`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rewind::edit::{apply_ops, parse_ops};

fuzz_target!(|data: &[u8]| {
    let (json, original) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(json) = std::str::from_utf8(json) else {
        return;
    };
    if let Ok(ops) = parse_ops(json) {
        let _ = apply_ops(original, &ops);
    }
});
