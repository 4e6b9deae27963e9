"""Report writers: the analysis as JSON (the contract), Markdown and self-contained HTML."""
