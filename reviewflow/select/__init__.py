"""Stage 2: the rules a change is reviewed by and the files kept or left out."""
