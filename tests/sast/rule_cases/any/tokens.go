package main

// ruleid: reviewflow-secret-token-format
const slack = "xoxb-123456789012-abcdefABCDEF"

// ok: reviewflow-secret-token-format
const name = "xoxb"
