"""`reviewflow mcp`: a Model Context Protocol server over stdio (the official `mcp` SDK) whose
tools run the CLI's own commands as child processes (`child`), typed and documented (`tools`),
wired into one server (`server`)."""
