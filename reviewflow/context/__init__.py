"""The code index of a reviewed tree and the context pack of a reviewed file (issue 38)."""
