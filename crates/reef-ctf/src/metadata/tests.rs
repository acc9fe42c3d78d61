//! Focused, data-driven tests of the TSDL parser.
