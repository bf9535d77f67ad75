"""Engine-neutral orchestration: the plan, the stage registry, the run (an ``Engine`` protocol), leases, progress."""
