"""Case-insensitive, backtracking-safe globs with braces and Git-style character classes."""
