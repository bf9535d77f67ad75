"""Text extraction: HTML (from WARC responses) to plain text."""
