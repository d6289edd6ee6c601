"""The review engine: chunking, plan, the native tool loop with read-only tools, compression.

Entry points (plain functions; the Prefect tasks call them): `jobs.file_jobs` and
`jobs.snapshot_of`, `plan.plan_file`, `loop.review_chunk`. Records live in `records`.
"""
