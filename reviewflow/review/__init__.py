"""The review engine: chunking, plan, the native tool loop with read-only tools, compression."""
