"""The SAST pre-scan (`--sast`): semgrep, offline, on the new side of the change's reviewed
files; its results on added lines go to the main review as hints to verify, never as findings."""
