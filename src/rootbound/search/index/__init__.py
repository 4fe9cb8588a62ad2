"""The search index: trigram postings per operator directory that narrow grep and answer search_files, kept fresh
by the kernel's change notification, never deciding a result by themselves (``docs/search-index.md``)."""
