"""Reports on finished builds: stage chains, token plans, the HTML report, lineage."""
