"""The real-model study v4: each of the paper's claims tested where it can fail (:mod:`.design`)."""
