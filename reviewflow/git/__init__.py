"""Git access and diff parsing: parse.py (parse_unified_diff), repo.py (collect_change)."""
