//! Stream cursors and timestamp-ordered muxing.
