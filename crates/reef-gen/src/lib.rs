//! The .reef schema language and generators.
