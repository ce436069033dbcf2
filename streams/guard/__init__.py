"""The guard on shared memory: detectors, screening on write, review, contradictions."""
