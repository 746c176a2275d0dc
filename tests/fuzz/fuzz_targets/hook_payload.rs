//! Every agent's hook payload parser: arbitrary bytes on stdin must give an event or an
//! error, never a panic. The first byte picks the agent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rewind::hooks::{parse, Agent};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, payload)) = data.split_first() else {
        return;
    };
    let agent = Agent::ALL[pick as usize % Agent::ALL.len()];
    let _ = parse(agent, payload);
});
