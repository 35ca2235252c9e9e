#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| codemode_fuzz_targets::tool_results(data));
