"""Reaching a crawl by itself: a Common Crawl dump by name, its listing, a deterministic sample of its files and the
policy every fetch follows (issue 65).

- :mod:`datapipe.crawl.listing`: a dump's name, its listing (``crawl-data/<crawl>/<kind>.paths.gz``) read and
  checked line by line, each file's segment;
- :mod:`datapipe.crawl.sample`: which files a build reads: deterministic in a seed, stratified across the dump's
  segments, nested (a larger sample holds the smaller);
- :mod:`datapipe.crawl.policy`: how politely: Common Crawl's published limits as defaults (files in flight,
  back-off with jitter from 1 s up to an hour on 503 / 429 / SlowDown, 403 and 404 stop).

Pure functions and frozen data: nothing here opens a connection.
"""
