"""``make demo``: a scripted, readable session against ``rootbound serve`` as a real stdio subprocess."""
