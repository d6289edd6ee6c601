"""From candidates to findings: placement, relocation, review filter, localization, finalize."""
