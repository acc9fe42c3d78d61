//! babeltrace2-compatible text output.
