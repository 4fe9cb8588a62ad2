"""What keeps one client, or many, from exhausting ``rootbound serve``: the memory of answers in flight, per-session
fairness, slow clients, the fd budget, rate-limited logging."""
