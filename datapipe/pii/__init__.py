"""PII scrubbing: the patterns and replacements (``scrub``) and the ``pii`` stage."""
