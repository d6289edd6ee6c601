"""What users read: preview, rules check and (later) the report writers."""
