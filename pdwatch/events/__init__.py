"""Sources -> events: where blocks of lines and /metrics scrapes meet the parsers.

``stream`` runs one scanner per source (what parse, report and watch read); ``parallel_scan``
reads one big file on every core; ``recorded`` turns recorded scrape files into events and
``scraper`` polls /metrics URLs (``pdwatch record``). Imports ``parsers``, ``sources`` and
``errors`` only: nothing here knows endpoints, rules or views.
"""
