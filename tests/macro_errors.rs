//! `#[bigfuse::kernel]` rejects every unsupported construct at its span, with a hint; and accepts
//! everything it documents.

#[test]
fn unsupported_syntax_is_a_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

#[test]
fn supported_syntax_compiles_and_runs() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui-pass/*.rs");
}
