"""Reports on finished builds: stage chains, token plans, the HTML report, lineage."""

# the browser's default port: the static report's links point at http://127.0.0.1:BROWSE_PORT/ (the browser takes it
# from here, so that the report never imports the browser)
BROWSE_PORT = 8765
